"""The serving document (``dfx.serving/1``: ``dfx serve --json``, ``serving.json``) as frozen records.

:meth:`dfx.serve.ServingResult.to_dict` writes through :class:`ServingDoc`, and :func:`read_serving`
reads a document back; the keys are documented in ``docs/export-format.md`` and ``docs/serving.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.fields import as_dict, as_float, as_int, as_opt_number, as_str
from dfx.schema.ids import SERVING_SCHEMA
from dfx.schema.record import Record, key, nested_list, read_tagged

__all__ = ["MachineDoc", "ServingDoc", "read_serving"]


def _frozen(v: Any) -> Mapping[str, Any]:
    return MappingProxyType(as_dict(v))


def _opt_frozen(v: Any) -> Mapping[str, Any] | None:
    return None if v is None else _frozen(v)


def _rows(v: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list")
    return tuple(_frozen(x) for x in v)


@dataclass(frozen=True, kw_only=True)
class MachineDoc(Record):
    """One machine's run (``machines[i]``)."""

    profile: str = key(as_str)
    scheduler: str = key(as_str)  # continuous, static or disaggregated
    scheduler_source: str = key(as_str)  # why: the profile's scheduling commitment, or --scheduler
    chips: int = key(as_int)  # chips of one model replica (each pool's, disaggregated)
    rate_per_s: float | None = key(as_opt_number)  # the Poisson rate; null offline or closed loop
    kv_capacity_tokens: int | None = key(as_opt_number)  # the paged cache; null for a static batch
    summary: Mapping[str, Any] = key(_frozen)  # percentiles, throughput, goodput, occupancy
    static: Mapping[str, Any] | None = key(_opt_frozen)  # batch, buckets, padding, wait for a batch
    disaggregated: Mapping[str, Any] | None = key(_opt_frozen)  # pools, transfer time
    pricing: Mapping[str, Any] = key(_frozen)  # the steps priced, their grid and wall time
    timeline: Mapping[str, Any] = key(_frozen)  # t_s, batch, kv_occupancy, waiting
    requests: Mapping[str, Any] = key(_frozen)  # ttft_s, tpot_s, e2e_s per request


@dataclass(frozen=True, kw_only=True)
class ServingDoc(Record):
    """The whole ``dfx.serving/1`` document."""

    schema: str = key(as_str)
    config: Mapping[str, Any] = key(_frozen)  # dfx.serve.ServeConfig.to_dict()
    machines: tuple[MachineDoc, ...] = nested_list(MachineDoc)
    curve: tuple[Mapping[str, Any], ...] = key(_rows)  # a row per machine and rate (--rate a,b,c)
    wall_s: float = key(as_float)
    pricing_wall_s: float = key(as_float)


def read_serving(doc: Any, origin: str = "serving.json") -> ServingDoc:
    """Read a ``dfx.serving/1`` document.

    Raises
    ------
    SchemaError
        If ``doc`` is not a serving document, or a key is missing or holds the wrong kind of value.
    """
    return read_tagged(ServingDoc, doc, SERVING_SCHEMA, origin, fix="write it again with dfx serve --out DIR")
