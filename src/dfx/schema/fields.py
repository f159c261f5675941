"""Strict reading of one JSON object of a document: a missing key or a wrong kind is a SchemaError.

Records call :meth:`Obj.req` for every key the writer always writes, and :meth:`Obj.opt` only for
keys the schema documents as optional, with the value their absence means written at the call
(once, in this package). Nothing outside ``dfx.schema`` reads a document key with a default.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, TypeVar

from dfx.schema.errors import SchemaError

__all__ = [
    "Obj",
    "as_dict",
    "as_finite",
    "as_float",
    "as_float_map",
    "as_int",
    "as_int_map",
    "as_opt_float",
    "as_opt_str",
    "as_str",
    "as_str_map",
    "as_str_tuple",
]

T = TypeVar("T")
_ABSENT = object()


class Obj:
    """One object of a document, read key by key.

    Examples
    --------
    >>> o = Obj({"a": 1}, "dfx.analysis/1", "totals")
    >>> o.req("a", as_int), o.opt("b", as_int, 0)
    (1, 0)
    >>> o.req("flops", as_int)
    Traceback (most recent call last):
    ...
    dfx.schema.errors.SchemaError: dfx.analysis/1: totals.flops is missing; the document was written by another dfx version or edited: write it again with `dfx analyze --out DIR` (or `--json`)
    """

    __slots__ = ("d", "document", "path")

    def __init__(self, d: Any, document: str, path: str = ""):
        if not isinstance(d, Mapping):
            raise SchemaError(document, path or "the document", f"must be a JSON object, got {type(d).__name__}")
        self.d, self.document, self.path = d, document, path

    def where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.d

    def _convert(self, key: str, value: Any, kind: Callable[[Any], T]) -> T:
        try:
            return kind(value)
        except (TypeError, ValueError) as exc:
            raise SchemaError(self.document, self.where(key), f"has a bad value {value!r} ({exc})") from None

    def req(self, key: str, kind: Callable[[Any], T] = lambda v: v) -> T:  # type: ignore[assignment]
        """The value of ``key`` through ``kind``; SchemaError naming the key if it is absent or bad."""
        if key not in self.d:
            raise SchemaError(self.document, self.where(key), "is missing")
        return self._convert(key, self.d[key], kind)

    def opt(self, key: str, kind: Callable[[Any], T], absent: T) -> T:
        """An optional key (documented as such): ``absent`` when it is not there."""
        if key not in self.d:
            return absent
        return self._convert(key, self.d[key], kind)

    def obj(self, key: str) -> Obj:
        """The object under ``key`` (required)."""
        return Obj(self.req(key), self.document, self.where(key))

    def objs(self, key: str) -> list[Obj]:
        """The list of objects under ``key`` (required)."""
        items = self.req(key)
        if not isinstance(items, (list, tuple)):
            raise SchemaError(self.document, self.where(key), f"must be a list, got {type(items).__name__}")
        return [Obj(v, self.document, f"{self.where(key)}[{i}]") for i, v in enumerate(items)]

    def mapping(self, key: str) -> dict[str, Obj]:
        """The object under ``key`` as name -> object (required)."""
        m = self.obj(key)
        return {str(k): Obj(v, self.document, m.where(str(k))) for k, v in m.d.items()}


def as_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise ValueError("expected an integer")
    return int(v)


def as_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("expected a number")
    return float(v)


def as_number(v: Any) -> int | float:
    """A JSON number kept as written (an integer stays an integer), so it writes back unchanged."""
    as_float(v)
    return v


def as_opt_number(v: Any) -> int | float | None:
    return None if v is None else as_number(v)


def as_finite(v: Any) -> float:
    f = as_float(v)
    if not math.isfinite(f):
        raise ValueError("expected a finite number")
    return f


def as_str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("expected a string")
    return v


def as_opt_str(v: Any) -> str | None:
    return None if v is None else as_str(v)


def as_opt_float(v: Any) -> float | None:
    return None if v is None else as_float(v)


def as_str_tuple(v: Any) -> tuple[str, ...]:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise ValueError("expected a list of strings")
    return tuple(v)


def as_dict(v: Any) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise ValueError("expected an object")
    return dict(v)


def as_float_map(v: Any) -> dict[str, float]:
    return {str(k): as_float(x) for k, x in as_dict(v).items()}


def as_int_map(v: Any) -> dict[str, int]:
    return {str(k): as_int(x) for k, x in as_dict(v).items()}


def as_str_map(v: Any) -> dict[str, str]:
    return {str(k): as_str(x) for k, x in as_dict(v).items()}
