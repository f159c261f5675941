"""The hand-made DAG document (``dfx.dag/1``, ``dfx dag --json``) as frozen records.

:meth:`dfx.sim.handmade.DagResult.to_record` writes it; ``dfx dag`` prints the record
(:mod:`dfx.sim.dag_command`). Field by field: ``docs/dag.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.fields import as_dict, as_float, as_int, as_number, as_opt_number, as_opt_str, as_str, as_str_tuple
from dfx.schema.ids import DAG_SCHEMA
from dfx.schema.record import Record, key, nested, nested_list, read_tagged

__all__ = ["DagDoc", "DagMemoryRecord", "DagNodeRecord", "DagPathRecord", "DagRunRecord", "DagStepRecord", "read_dag"]

_record = dataclass(frozen=True, kw_only=True)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _opt_bool(v: Any) -> bool | None:
    return None if v is None else _bool(v)


def _opt_float(v: Any) -> float | None:
    return None if v is None else as_float(v)


def _steps(v: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of lists of names")
    return tuple(as_str_tuple(s) for s in v)


@_record
class DagNodeRecord(Record):
    """One row of the table as timed (``nodes[]``)."""

    name: str = key(as_str)
    inputs: tuple[str, ...] = key(as_str_tuple)
    flops: float | None = key(as_opt_number)  # null when the row gives a time
    bytes: float | None = key(as_opt_number)
    output_bytes: float | None = key(as_opt_number)
    time_s: float = key(as_float)
    time_given: bool = key(_bool)  # the time came from the table, not from the roofline
    intensity_flop_per_byte: float | None = key(_opt_float)
    bound: str | None = key(as_opt_str)  # compute, memory or none, under the profile's memory model
    bound_off_chip: str | None = key(as_opt_str)
    bound_on_chip: str | None = key(as_opt_str)


@_record
class DagPathRecord(Record):
    time_s: float = key(as_float)
    nodes: tuple[str, ...] = key(as_str_tuple)


@_record
class DagRunRecord(Record):
    """``schedule[]``: where and when a node ran, by start time."""

    name: str = key(as_str)
    pe: int = key(as_int)
    start_s: float = key(as_float)
    end_s: float = key(as_float)


@_record
class DagStepRecord(Record):
    """``timeline[]``: one firing step."""

    time_s: float = key(as_float)
    finished: tuple[str, ...] = key(as_str_tuple)
    ready: tuple[str, ...] = key(as_str_tuple)
    fired: tuple[str, ...] = key(as_str_tuple)


@_record
class DagMemoryRecord(Record):
    peak_bytes: float = key(as_number)
    capacity_bytes: float | None = key(as_opt_number)
    fits: bool | None = key(_opt_bool)  # null without a capacity


@_record
class DagDoc(Record):
    """The whole ``dfx.dag/1`` document."""

    schema: str = key(as_str)
    hardware: str | None = key(as_opt_str)
    ridges_flop_per_byte: Mapping[str, float] = key(
        lambda v: MappingProxyType({k: as_float(x) for k, x in as_dict(v).items()})
    )
    pes: int = key(as_int)
    priority: tuple[str, ...] = key(as_str_tuple)
    nodes: tuple[DagNodeRecord, ...] = nested_list(DagNodeRecord)
    firing_steps: tuple[tuple[str, ...], ...] = key(_steps)
    critical_path: DagPathRecord = nested(DagPathRecord)
    work_s: float = key(as_float)
    lower_bound_s: float = key(as_float)
    makespan_s: float = key(as_float)
    schedule: tuple[DagRunRecord, ...] = nested_list(DagRunRecord)
    timeline: tuple[DagStepRecord, ...] = nested_list(DagStepRecord)
    memory: DagMemoryRecord = nested(DagMemoryRecord)


def read_dag(doc: Any, origin: str = "the dag document") -> DagDoc:
    """Read a ``dfx.dag/1`` document (``DagResult.to_dict()`` or a saved ``dfx dag --json``).

    Raises
    ------
    SchemaError
        If ``doc`` is not a dag document, or a key is missing or holds the wrong kind of value.
    """
    return read_tagged(
        DagDoc, doc, DAG_SCHEMA, origin, fix=f"pass a document written by `dfx dag --json` (schema {DAG_SCHEMA})"
    )
