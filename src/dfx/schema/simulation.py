"""The simulation document (``dfx.simulation/1``, ``dfx simulate --json``) as frozen records.

:meth:`dfx.sim.SimulationResult.to_record` writes it; the console summary (:mod:`dfx.sim.console`)
and the report's timeline (:mod:`dfx.viz.simdoc`) read it through :func:`read_simulation`. Field by
field: ``docs/simulation.md`` ("The export document").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dfx.schema.fields import as_float, as_int, as_number, as_opt_number, as_opt_str, as_str, as_str_tuple
from dfx.schema.ids import SIMULATION_SCHEMA
from dfx.schema.record import Record, key, map_key, nested, nested_list, nested_map, read_tagged

__all__ = [
    "SimComparisonRecord",
    "SimConcurrencyRecord",
    "SimDagRecord",
    "SimLowerBoundsRecord",
    "SimMakespanRecord",
    "SimMemoryRecord",
    "SimPolicyRecord",
    "SimRunRecord",
    "SimStepRecord",
    "SimulationDoc",
    "example_simulation",
    "read_simulation",
]

_record = dataclass(frozen=True, kw_only=True)


def _floats(v: Any) -> tuple[float, ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of numbers")
    return tuple(as_float(x) for x in v)


def _numbers(v: Any) -> tuple[int | float, ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of numbers")
    return tuple(as_number(x) for x in v)


def _ints(v: Any) -> tuple[int, ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of integers")
    return tuple(as_int(x) for x in v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _opt_int(v: Any) -> int | None:
    return None if v is None else as_int(v)


@_record
class SimMakespanRecord(Record):
    """``policies.<p>.makespan_s``: over the runs, seconds."""

    mean: float = key(as_float)
    p50: float = key(as_float)
    p95: float = key(as_float)
    min: float = key(as_float)
    max: float = key(as_float)


@_record
class SimConcurrencyRecord(Record):
    """``policies.<p>.concurrency``: nodes running over run 0 (a step function)."""

    peak: int = key(as_int)
    mean: float = key(as_float)
    time_s: tuple[float, ...] = key(_floats)
    running: tuple[int, ...] = key(_ints)


@_record
class SimMemoryRecord(Record):
    """``policies.<p>.memory``: live bytes over run 0 against the on-chip capacity (null: none given)."""

    peak_bytes: float = key(as_number)
    peak_time_s: float = key(as_float)
    capacity_bytes: float | None = key(as_opt_number)
    fits: bool | None = key(lambda v: None if v is None else _bool(v))
    over_capacity_s: float = key(as_float)
    time_s: tuple[float, ...] = key(_floats)
    live_bytes: tuple[float, ...] = key(_numbers)


@_record
class SimRunRecord(Record):
    """One task of run 0 (``policies.<p>.schedule[]``): where and when it ran."""

    name: str = key(as_str)
    pe: int = key(as_int)
    start_s: float = key(as_float)
    end_s: float = key(as_float)


@_record
class SimStepRecord(Record):
    """One firing step of run 0 (``policies.<p>.steps[]``, only with ``--steps``)."""

    time_s: float = key(as_float)
    finished: tuple[str, ...] = key(as_str_tuple)
    ready: tuple[str, ...] = key(as_str_tuple)
    fired: tuple[str, ...] = key(as_str_tuple)


@_record
class SimPolicyRecord(Record):
    """One policy's results (``policies.<p>``): makespans, utilization, run 0's views and schedule."""

    name: str = map_key()  # "static" or "dynamic", the key it is filed under
    makespan_s: SimMakespanRecord = nested(SimMakespanRecord)
    utilization: tuple[float, ...] = key(_floats)  # per PE, busy / makespan, mean over runs
    mean_utilization: float = key(as_float)
    makespans_s: tuple[float, ...] = key(_floats)  # every run's makespan
    predicted_makespan_s: float = key(as_float)
    concurrency: SimConcurrencyRecord = nested(SimConcurrencyRecord)
    memory: SimMemoryRecord = nested(SimMemoryRecord)
    schedule: tuple[SimRunRecord, ...] = nested_list(SimRunRecord)
    steps: tuple[SimStepRecord, ...] | None = nested_list(SimStepRecord, absent=None, omit=None)  # with --steps

    @property
    def makespan_mean_s(self) -> float:
        return self.makespan_s.mean

    @property
    def makespan_p50_s(self) -> float:
        return self.makespan_s.p50

    @property
    def makespan_p95_s(self) -> float:
        return self.makespan_s.p95

    @property
    def run0_makespan_s(self) -> float:
        """Run 0's makespan: the one the schedule shows."""
        return self.makespans_s[0]

    @property
    def peak_bytes(self) -> float:
        return self.memory.peak_bytes

    @property
    def capacity_bytes(self) -> float | None:
        return self.memory.capacity_bytes


@_record
class SimDagRecord(Record):
    """``dag``: what was simulated."""

    nodes: int = key(as_int)
    edges: int = key(as_int)
    untimed: tuple[str, ...] = key(as_str_tuple)  # nodes the analysis gave no time (run in 0 s)
    tasks_from: str = key(as_str)  # "program" (kernels' core shares) or "graph" (graph nodes)
    kernels: int | None = key(_opt_int)  # the program's kernels; null for a graph


@_record
class SimLowerBoundsRecord(Record):
    """``lower_bounds``: on predicted durations, seconds."""

    critical_path_s: float = key(as_float)
    work_over_pes_s: float = key(as_float)
    work_s: float = key(as_float)


@_record
class SimComparisonRecord(Record):
    """``comparison``: static against dynamic over the same runs (present when both ran)."""

    static_over_dynamic: float = key(as_float)
    static_slower_runs: int = key(as_int)
    dynamic_slower_runs: int = key(as_int)
    runs: int = key(as_int)


@_record
class SimulationDoc(Record):
    """The whole ``dfx.simulation/1`` document.

    ``by_policy`` is ``policies`` as written (name -> record, static first); :attr:`policies` is
    its records in that order.
    """

    schema: str = key(as_str)
    pes: int = key(as_int)
    runs: int = key(as_int)
    jitter_cv: float = key(as_float)  # as applied (0 on a cycle-exact machine)
    jitter_cv_requested: float = key(as_float)
    seed: int = key(as_int)
    hardware: str | None = key(as_opt_str)
    model: str | None = key(as_opt_str)
    dag: SimDagRecord = nested(SimDagRecord)
    lower_bounds: SimLowerBoundsRecord = nested(SimLowerBoundsRecord)
    by_policy: Mapping[str, SimPolicyRecord] = nested_map(SimPolicyRecord, name="policies")
    comparison: SimComparisonRecord | None = nested(SimComparisonRecord, absent=None, omit=None)

    @property
    def policies(self) -> tuple[SimPolicyRecord, ...]:
        """Each policy's record, in the document's order (static first)."""
        return tuple(self.by_policy.values())

    @property
    def critical_path_s(self) -> float:
        return self.lower_bounds.critical_path_s

    @property
    def work_over_pes_s(self) -> float:
        return self.lower_bounds.work_over_pes_s

    @property
    def lower_bound_s(self) -> float:
        """No schedule can beat ``max(critical path, work / N)``."""
        return max(self.critical_path_s, self.work_over_pes_s)

    @property
    def static_over_dynamic(self) -> float | None:
        """Mean static makespan / mean dynamic makespan, when both ran."""
        return None if self.comparison is None else self.comparison.static_over_dynamic


def read_simulation(doc: Any, origin: str = "the simulation") -> SimulationDoc:
    """Read a ``dfx.simulation/1`` document (``SimulationResult.to_dict()`` or a loaded ``simulation.json``).

    Raises
    ------
    SchemaError
        If ``doc`` is not a simulation document, or a key is missing or holds the wrong kind of value.

    Examples
    --------
    >>> s = read_simulation(example_simulation({"dynamic": [("a", 0, 0.0, 2.0)]}, pes=1))
    >>> s.policies[0].name, s.policies[0].schedule[0].end_s, s.lower_bound_s
    ('dynamic', 2.0, 2.0)
    """
    return read_tagged(
        SimulationDoc,
        doc,
        SIMULATION_SCHEMA,
        origin,
        fix=f"pass a document written by `dfx simulate --json` (schema {SIMULATION_SCHEMA})",
    )


def example_simulation(
    schedule: dict[str, list[tuple[str, int, float, float]]], pes: int = 2, **fields: Any
) -> dict[str, Any]:
    """A small valid ``dfx.simulation/1`` document: for examples, tests and hand-made inputs.

    ``schedule`` maps a policy to its run-0 tasks ``(name, pe, start_s, end_s)``; one run, no
    jitter, no capacity, utilization 0.5 on every PE; the lower bounds are the makespan of the
    first policy (critical path) and half of it (work / PEs). ``fields`` replace top-level keys.
    """
    policies = {}
    for name, runs in schedule.items():
        m = max((end for *_, end in runs), default=0.0)
        policies[name] = {
            "makespan_s": {"mean": m, "p50": m, "p95": m, "min": m, "max": m},
            "utilization": [0.5] * pes,
            "mean_utilization": 0.5,
            "makespans_s": [m],
            "predicted_makespan_s": m,
            "concurrency": {"peak": 1, "mean": 1.0, "time_s": [0.0], "running": [1]},
            "memory": {
                "peak_bytes": 64.0,
                "peak_time_s": 0.0,
                "capacity_bytes": None,
                "fits": None,
                "over_capacity_s": 0.0,
                "time_s": [0.0],
                "live_bytes": [64.0],
            },
            "schedule": [{"name": n, "pe": pe, "start_s": s, "end_s": e} for n, pe, s, e in runs],
        }
    first = next(iter(policies.values()), None)
    span = first["makespan_s"]["mean"] if first else 0.0
    names = {n for runs in schedule.values() for n, *_ in runs}
    doc = {
        "schema": SIMULATION_SCHEMA,
        "pes": pes,
        "runs": 1,
        "jitter_cv": 0.0,
        "jitter_cv_requested": 0.0,
        "seed": 0,
        "hardware": None,
        "model": None,
        "dag": {"nodes": len(names), "edges": 0, "untimed": [], "tasks_from": "graph", "kernels": None},
        "lower_bounds": {"critical_path_s": span, "work_over_pes_s": span / 2, "work_s": span},
        "policies": policies,
    }
    return {**doc, **fields}
