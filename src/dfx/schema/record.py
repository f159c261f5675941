"""Frozen document records with one symmetric ``to_dict`` / ``from_dict``, driven by field metadata.

A record is a frozen dataclass whose fields are declared with :func:`key`: the JSON key, how to
read its value (``kind``), and, only for keys the schema documents as optional, the value their
absence means (``absent``). :func:`read` and :func:`write` walk those declarations, so reading and
writing cannot drift apart; a field declared with :func:`rest` collects every key the record does
not declare (fields an architecture model adds) and writes them back unchanged.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Edge(Record):
...     src: str = key(as_str)
...     dst: str = key(as_str)
...     bytes: int = key(as_int)
>>> e = Edge.from_dict({"src": "a", "dst": "b", "bytes": 4}, "dfx.analysis/1", "edges[0]")
>>> e.to_dict()
{'src': 'a', 'dst': 'b', 'bytes': 4}
>>> Edge.from_dict({"src": "a", "dst": "b"}, "dfx.analysis/1", "edges[0]")
Traceback (most recent call last):
...
dfx.schema.errors.SchemaError: dfx.analysis/1: edges[0].bytes is missing; the document was written by another dfx version or edited: write it again with `dfx analyze --out DIR` (or `--json`)
"""

from __future__ import annotations

import dataclasses
import functools
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable, Mapping

from dfx.schema.errors import SchemaError
from dfx.schema.fields import Obj, as_int, as_str

__all__ = ["Record", "key", "map_key", "nested", "nested_list", "nested_map", "read", "read_tagged", "rest", "write"]

_REQUIRED = object()
_NEVER = object()


@dataclasses.dataclass(frozen=True)
class _Key:
    name: str | None  # JSON key; None: the field's own name
    kind: Callable[[Any], Any] | None  # converter of a plain value
    record: Any = None  # a Record class: the value is one nested object...
    shape: str = "one"  # ... "one", a "list" of them or a "map" name -> object
    absent: Any = _REQUIRED  # the value an absent optional key means
    omit: Any = _NEVER  # written only when the value differs from this (an optional key)
    nullable: bool = False  # a required key whose value may be null


def _field(meta: _Key) -> Any:
    if meta.absent is _REQUIRED:
        return dataclasses.field(metadata={"doc": meta})
    if meta.absent.__class__.__hash__ is None or isinstance(meta.absent, MappingProxyType):  # a read-only map
        return dataclasses.field(default_factory=lambda: meta.absent, metadata={"doc": meta})
    return dataclasses.field(default=meta.absent, metadata={"doc": meta})


def key(kind: Callable[[Any], Any], *, name: str | None = None, absent: Any = _REQUIRED, omit: Any = _NEVER) -> Any:
    """A document key read through ``kind``; ``absent`` makes it optional (documented as such)."""
    return _field(_Key(name, kind, absent=absent, omit=omit))


def nested(
    record: Any, *, name: str | None = None, absent: Any = _REQUIRED, omit: Any = _NEVER, nullable: bool = False
) -> Any:
    """A key holding one object of ``record``; ``nullable``: or null (``None`` here)."""
    return _field(_Key(name, None, record, "one", absent, omit, nullable))


def nested_list(record: Any, *, name: str | None = None, absent: Any = _REQUIRED, omit: Any = _NEVER) -> Any:
    """A key holding a list of ``record`` objects (a tuple of records here); ``absent``: optional."""
    return _field(_Key(name, None, record, "list", absent, omit))


def nested_map(record: Any, *, name: str | None = None) -> Any:
    """A key holding an object name -> ``record`` object (a read-only mapping here, in order)."""
    return dataclasses.field(metadata={"doc": _Key(name, None, record, "map")})


def map_key() -> Any:
    """Not a key of the object: the name it is filed under in its parent map (a profile id, a node name)."""
    return dataclasses.field(default="", metadata={"map_key": True})


def rest() -> Any:
    """The keys a record does not declare, kept in order and written back unchanged."""
    return dataclasses.field(default_factory=lambda: MappingProxyType({}), metadata={"rest": True})


class Record:
    """Base of every document record: ``from_dict(d, document, path)`` and ``to_dict()``."""

    @classmethod
    def from_dict(cls, d: Any, document: str, path: str = "") -> Any:
        return read(cls, Obj(d, document, path))

    def to_dict(self) -> dict[str, Any]:
        return write(self)


def _read_value(meta: _Key, obj: Obj, json_key: str) -> Any:
    if meta.record is None:
        return obj.req(json_key, meta.kind) if meta.absent is _REQUIRED else obj.opt(json_key, meta.kind, meta.absent)
    if meta.absent is not _REQUIRED and (not obj.has(json_key) or obj.d[json_key] is None):
        return meta.absent
    if meta.nullable and obj.req(json_key) is None:
        return None
    if meta.shape == "list":
        return tuple(read(meta.record, o) for o in obj.objs(json_key))
    if meta.shape == "map":
        return MappingProxyType({k: read(meta.record, o, k) for k, o in obj.mapping(json_key).items()})
    return read(meta.record, obj.obj(json_key))


def read(cls: Any, obj: Obj, filed_as: str = "") -> Any:
    """``cls`` built from ``obj``: every declared key read strictly, the rest kept if ``cls`` has a rest field."""
    kwargs: dict[str, Any] = {}
    declared: set[str] = set()
    rest_field = None
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("doc")
        if meta is None:
            rest_field = f.name if f.metadata.get("rest") else rest_field
            if f.metadata.get("map_key"):
                kwargs[f.name] = filed_as
            continue
        json_key = meta.name or f.name
        declared.add(json_key)
        kwargs[f.name] = _read_value(meta, obj, json_key)
    if rest_field is not None:
        kwargs[rest_field] = MappingProxyType({k: v for k, v in obj.d.items() if k not in declared})
    return cls(**kwargs)


# leaves written as they are, told apart by exact type before the slower abstract-class tests
# (a 70B analysis document has half a million values: typing.Mapping's isinstance was a third of writing it)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict or kind is MappingProxyType:
        return {k: _plain(v) for k, v in value.items()}
    if kind is tuple or kind is list:
        return [_plain(v) for v in value]
    if isinstance(value, Record):
        return write(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


@functools.cache
def _write_plan(cls: type) -> tuple[tuple[str, str | None, Any], ...]:
    """Per field of ``cls``, in declaration order: its name, its JSON key (``None``: the rest
    mapping, merged where it is declared) and the value it is omitted at; other fields are skipped."""
    plan = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("doc")
        if meta is None:
            if f.metadata.get("rest"):
                plan.append((f.name, None, _NEVER))
            continue
        plan.append((f.name, meta.name or f.name, meta.omit))
    return tuple(plan)


def write(record: Any) -> dict[str, Any]:
    """The JSON object of ``record``: declared keys in declaration order, then the rest."""
    out: dict[str, Any] = {}
    for name, key, omit in _write_plan(type(record)):
        value = getattr(record, name)
        if key is None:
            out.update({k: v for k, v in value.items() if k not in out})
        elif omit is _NEVER or value != omit:
            out[key] = _plain(value)
    return out


# re-exported for doctests and record modules
__all__ += ["as_int", "as_str"]


def read_tagged(cls: Any, doc: Any, schema: str, origin: str, fix: str, accepted: tuple[str, ...] = ()) -> Any:
    """``cls`` read from ``doc`` after checking its ``schema`` tag is ``schema`` (or one of ``accepted``).

    ``origin`` names where the document came from (a path, "--calibration FILE"), ``fix`` what to
    pass instead; both go into the :class:`SchemaError` a wrong tag raises.
    """
    obj = Obj(doc, schema, "")
    tag = obj.d["schema"] if "schema" in obj.d else None
    if tag != schema and tag not in accepted:
        raise SchemaError(schema, "schema", f"is {tag!r} in {origin}: not a {schema} document", fix=fix)
    return read(cls, obj)
