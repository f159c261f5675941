"""A typed, read-only view of a simulation document (``dfx.simulation/1``) for the report's timeline.

Like :mod:`dfx.viz.document` for the analysis, this is the only module of ``dfx.viz`` that reads
the simulation document's keys. The document is described in ``docs/simulation.md``; ``dfx.sim``
itself is never imported, so a saved ``simulation.json`` is drawn without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dfx.errors import DfxError
from dfx.schema.ids import SIMULATION_SCHEMA
from dfx.viz.document import Doc

__all__ = ["SIM_SCHEMA", "SimDoc", "SimPolicy", "SimRun", "check_matches", "read_simulation"]

SIM_SCHEMA = SIMULATION_SCHEMA


@dataclass(frozen=True)
class SimRun:
    """One node of run 0 (``policies.<p>.schedule[]``): where and when it ran."""

    name: str
    pe: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class SimPolicy:
    """One policy's results (``policies.<p>``): makespan statistics, utilization, run 0's schedule."""

    name: str  # "static" or "dynamic"
    makespan_mean_s: float
    makespan_p50_s: float
    makespan_p95_s: float
    predicted_makespan_s: float
    run0_makespan_s: float
    utilization: tuple[float, ...]  # per PE, mean over runs
    mean_utilization: float
    peak_bytes: float
    capacity_bytes: float | None
    schedule: tuple[SimRun, ...]


@dataclass(frozen=True)
class SimDoc:
    """The simulation document, typed: PEs, runs, jitter, lower bounds and each policy."""

    pes: int
    runs: int
    jitter_cv: float
    seed: int
    hardware: str | None
    model: str | None
    critical_path_s: float
    work_over_pes_s: float
    policies: tuple[SimPolicy, ...]  # static first
    static_over_dynamic: float | None  # present when both policies ran

    @property
    def lower_bound_s(self) -> float:
        """No schedule can beat ``max(critical path, work / N)``."""
        return max(self.critical_path_s, self.work_over_pes_s)


def _policy(name: str, d: Mapping[str, Any]) -> SimPolicy:
    m, mem = d["makespan_s"], d.get("memory", {})
    schedule = tuple(SimRun(str(r["name"]), int(r["pe"]), float(r["start_s"]), float(r["end_s"])) for r in d["schedule"])
    run0 = d.get("makespans_s") or [max((r.end_s for r in schedule), default=0.0)]
    return SimPolicy(
        name=name, makespan_mean_s=float(m["mean"]), makespan_p50_s=float(m["p50"]), makespan_p95_s=float(m["p95"]),
        predicted_makespan_s=float(d.get("predicted_makespan_s", m["mean"])), run0_makespan_s=float(run0[0]),
        utilization=tuple(float(u) for u in d["utilization"]), mean_utilization=float(d["mean_utilization"]),
        peak_bytes=float(mem.get("peak_bytes", 0.0)), capacity_bytes=mem.get("capacity_bytes"), schedule=schedule,
    )


def read_simulation(doc: Mapping[str, Any]) -> SimDoc:
    """Read a simulation document (``SimulationResult.to_dict()`` or a loaded ``simulation.json``).

    Raises
    ------
    DfxError
        If the document is not ``dfx.simulation/1`` or lacks a field the timeline needs.

    Examples
    --------
    >>> s = read_simulation({"schema": "dfx.simulation/1", "pes": 1, "lower_bounds": {"critical_path_s": 2.0,
    ...     "work_over_pes_s": 2.0}, "policies": {"dynamic": {"makespan_s": {"mean": 2.0, "p50": 2.0, "p95": 2.0},
    ...     "utilization": [1.0], "mean_utilization": 1.0,
    ...     "schedule": [{"name": "a", "pe": 0, "start_s": 0.0, "end_s": 2.0}]}}})
    >>> s.policies[0].name, s.policies[0].schedule[0].end_s, s.lower_bound_s
    ('dynamic', 2.0, 2.0)
    """
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema != SIM_SCHEMA:
        raise DfxError(f"not a dfx simulation document: schema is {schema!r}, expected {SIM_SCHEMA!r}")
    try:
        lb, comparison = doc["lower_bounds"], doc.get("comparison") or {}
        return SimDoc(
            pes=int(doc["pes"]), runs=int(doc.get("runs", 1)), jitter_cv=float(doc.get("jitter_cv", 0.0)),
            seed=int(doc.get("seed", 0)), hardware=doc.get("hardware"), model=doc.get("model"),
            critical_path_s=float(lb["critical_path_s"]), work_over_pes_s=float(lb["work_over_pes_s"]),
            policies=tuple(_policy(name, p) for name, p in doc["policies"].items()),
            static_over_dynamic=comparison.get("static_over_dynamic"),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DfxError(f"malformed dfx.simulation/1 document: missing or bad field {exc}") from None


def check_matches(sim: SimDoc, doc: Doc) -> None:
    """Refuse a simulation of another graph: every scheduled node must be a node of the analysis.

    Raises
    ------
    DfxError
        Naming the first few scheduled nodes the analysis lacks.
    """
    known = {n.name for n in doc.nodes}
    for hw in doc.hardware.values():  # a compiled program's tasks are its kernels' tiles: k#i, k:done
        known |= {k.name for k in hw.program.kernels} if hw.program is not None else set()
    stray = sorted({r.name.split("#")[0].removesuffix(":done") for p in sim.policies for r in p.schedule} - known)
    if stray:
        listed = ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else "")
        raise DfxError(f"the simulation ({sim.model or 'a DAG'}) is not of this analysis ({doc.model_name}): "
                       f"its nodes {listed} are not in it")
