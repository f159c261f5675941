"""The compile document (``dfx.compile/1``, ``dfx compile --json``) as frozen records.

:meth:`dfx.compile.Program.to_record` writes it; ``dfx compile`` prints and draws it through
:func:`read_compile`. Field by field: ``docs/export-format.md`` ("dfx.compile/1").
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.analysis import MoeRecord, StageRecord
from dfx.schema.fields import as_dict, as_int, as_opt_float, as_opt_str, as_str, as_str_tuple
from dfx.schema.ids import COMPILE_SCHEMA
from dfx.schema.record import Record, key, nested, nested_list, read_tagged

__all__ = ["CompileDoc", "CompileKernelRecord", "CompileTotalsRecord", "read_compile"]

_record = dataclass(frozen=True, kw_only=True)


def _int_tuple(v: Any) -> tuple[int, ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of integers")
    return tuple(as_int(x) for x in v)


def _frozen(v: Any) -> Mapping[str, Any]:
    return MappingProxyType(as_dict(v))


def _frozen_list(v: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of objects")
    return tuple(_frozen(x) for x in v)


@_record
class CompileKernelRecord(Record):
    """One kernel of the program (``kernels[]``): ``dfx.compile.Kernel`` as written."""

    name: str = key(as_str)
    nodes: tuple[str, ...] = key(as_str_tuple)
    kind: str = key(as_str)  # a dfx.compile.KernelKind value
    flops: int = key(as_int)
    offchip_bytes: int = key(as_int)
    onchip_bytes: int = key(as_int)
    deps: tuple[str, ...] = key(as_str_tuple)
    dtype: str | None = key(as_opt_str)
    tiles: int = key(as_int)
    tile_shape: tuple[int, ...] = key(_int_tuple)
    cores: int = key(as_int)
    chip: int = key(as_int)
    reason: str = key(as_str)
    region: str = key(as_str)
    tile_time_s: float | None = key(as_opt_float)
    tile_traffic_bytes: int = key(as_int)


@_record
class CompileTotalsRecord(Record):
    kernels: int = key(as_int)
    nodes: int = key(as_int)
    tiles: int = key(as_int)
    flops: int = key(as_int)
    offchip_bytes: int = key(as_int)


@_record
class CompileDoc(Record):
    """The whole ``dfx.compile/1`` document.

    ``inductor`` (present only when the real compiler ran) stays a plain read-only object: its
    pipeline texts and kernels are torch's, documented in ``docs/export-format.md``.
    """

    schema: str = key(as_str)
    graph_name: str = key(as_str)
    profile: str = key(as_str)
    target: str = key(as_str)
    commitment: str = key(as_str)
    stages: tuple[StageRecord, ...] = nested_list(StageRecord)
    kernels: tuple[CompileKernelRecord, ...] = nested_list(CompileKernelRecord)
    totals: CompileTotalsRecord = nested(CompileTotalsRecord)
    inductor: Mapping[str, Any] | None = key(_frozen, absent=None, omit=None)  # only with --inductor
    moe: MoeRecord | None = nested(MoeRecord, absent=None, omit=None)  # a graph with MoE layers (dfx.compile.moe)
    # the toolchain below dfx's compile stage (dfx.compile.toolchain; GPUs: torch.compile to SASS)
    toolchain: tuple[Mapping[str, Any], ...] | None = key(_frozen_list, absent=None, omit=None)


def read_compile(doc: Any, origin: str = "the compile document") -> CompileDoc:
    """Read a ``dfx.compile/1`` document (``Program.to_dict()`` or a loaded ``compile.json``).

    Raises
    ------
    SchemaError
        If ``doc`` is not a compile document, or a key is missing or holds the wrong kind of value.

    Examples
    --------
    >>> d = {"schema": "dfx.compile/1", "graph_name": "g", "profile": "h", "target": "eager", "commitment": "dynamic",
    ...      "stages": [], "kernels": [], "totals": {"kernels": 0, "nodes": 0, "tiles": 0, "flops": 0, "offchip_bytes": 0}}
    >>> read_compile(d).to_dict() == d
    True
    >>> read_compile({**d, "schema": "dfx.analysis/1"})
    Traceback (most recent call last):
    ...
    dfx.schema.errors.SchemaError: dfx.compile/1: schema is 'dfx.analysis/1' in the compile document: not a dfx.compile/1 document; pass the compile.json `dfx compile --out DIR` wrote (schema dfx.compile/1)
    """
    return read_tagged(
        CompileDoc,
        doc,
        COMPILE_SCHEMA,
        origin,
        fix=f"pass the compile.json `dfx compile --out DIR` wrote (schema {COMPILE_SCHEMA})",
    )
