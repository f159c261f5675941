"""Typed, frozen simulation results and the export document ``dfx.simulation/1``.

Field-by-field reference: ``docs/simulation.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Sequence

from dfx.schema.ids import SIMULATION_SCHEMA
from dfx.schema.simulation import (
    SimComparisonRecord,
    SimConcurrencyRecord,
    SimDagRecord,
    SimLowerBoundsRecord,
    SimMakespanRecord,
    SimMemoryRecord,
    SimPolicyRecord,
    SimRunRecord,
    SimStepRecord,
    SimulationDoc,
)
from dfx.sim.dag import SimDag
from dfx.sim.engine import Policy, Schedule
from dfx.sim.priority import LowerBounds
from dfx.sim.views import ConcurrencyProfile, MemoryProfile, Step
from dfx.stats import percentile

__all__ = ["SCHEMA", "Comparison", "MakespanStats", "PolicyResult", "SimulationResult", "percentile"]

SCHEMA = SIMULATION_SCHEMA


@dataclass(frozen=True)
class MakespanStats:
    """Makespan over the runs: mean, median, 95th percentile, extremes and every sample (seconds)."""

    mean_s: float
    p50_s: float
    p95_s: float
    min_s: float
    max_s: float
    samples_s: tuple[float, ...]

    @classmethod
    def from_samples(cls, samples_s: Sequence[float]) -> MakespanStats:
        ordered = sorted(samples_s)
        return cls(
            mean_s=math.fsum(ordered) / len(ordered),
            p50_s=percentile(ordered, 50),
            p95_s=percentile(ordered, 95),
            min_s=ordered[0],
            max_s=ordered[-1],
            samples_s=tuple(samples_s),
        )


@dataclass(frozen=True, eq=False)
class PolicyResult:
    """Everything one policy produced.

    Attributes
    ----------
    policy : static or dynamic.
    makespan : statistics over the runs.
    utilization : per PE, busy time / makespan, averaged over the runs.
    predicted_makespan_s : the makespan on predicted durations (for static, the compile-time plan).
    schedule : run 0 in full (with no jitter, the only schedule there is).
    concurrency, memory : views of run 0.
    steps : the firing sequence of run 0, when asked for.
    """

    policy: Policy
    makespan: MakespanStats
    utilization: tuple[float, ...]
    predicted_makespan_s: float
    schedule: Schedule
    concurrency: ConcurrencyProfile
    memory: MemoryProfile
    steps: tuple[Step, ...] | None = None

    @property
    def mean_utilization(self) -> float:
        """Average over PEs of :attr:`utilization`."""
        return math.fsum(self.utilization) / len(self.utilization)

    def to_record(self, dag: SimDag) -> SimPolicyRecord:
        """``policies.<policy>`` of the simulation document, as its record."""
        m, c = self.makespan, self.concurrency
        return SimPolicyRecord(
            name=self.policy.value,
            makespan_s=SimMakespanRecord(mean=m.mean_s, p50=m.p50_s, p95=m.p95_s, min=m.min_s, max=m.max_s),
            utilization=tuple(self.utilization),
            mean_utilization=self.mean_utilization,
            makespans_s=tuple(m.samples_s),
            predicted_makespan_s=self.predicted_makespan_s,
            concurrency=SimConcurrencyRecord(
                peak=c.peak, mean=c.mean, time_s=tuple(c.time_s), running=tuple(c.running)
            ),
            memory=_memory_record(self.memory),
            schedule=tuple(
                SimRunRecord(name=r.name, pe=r.pe, start_s=r.start_s, end_s=r.end_s)
                for r in self.schedule.node_runs(dag)
            ),
            steps=None
            if self.steps is None
            else tuple(
                SimStepRecord(time_s=s.time_s, finished=tuple(s.finished), ready=tuple(s.ready), fired=tuple(s.fired))
                for s in self.steps
            ),
        )

    def to_dict(self, dag: SimDag) -> dict[str, Any]:
        return self.to_record(dag).to_dict()


def _memory_record(mem: MemoryProfile) -> SimMemoryRecord:
    return SimMemoryRecord(
        peak_bytes=mem.peak_bytes,
        peak_time_s=mem.peak_time_s,
        capacity_bytes=mem.capacity_bytes,
        fits=mem.fits,
        over_capacity_s=mem.over_capacity_s,
        time_s=tuple(mem.time_s),
        live_bytes=tuple(mem.live_bytes),
    )


@dataclass(frozen=True)
class Comparison:
    """Static against dynamic over the same runs (the same jitter draws).

    Attributes
    ----------
    static_over_dynamic : mean static makespan / mean dynamic makespan (> 1: static is slower).
    static_slower_runs, dynamic_slower_runs : runs where one policy's makespan exceeds the other's.
    runs : the number of runs.
    """

    static_over_dynamic: float
    static_slower_runs: int
    dynamic_slower_runs: int
    runs: int


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """A simulation of one DAG on ``pes`` identical PEs under one or both policies.

    Attributes
    ----------
    dag : the simulated DAG.
    pes, runs, jitter_cv, seed : the options it ran with (``jitter_cv`` as applied).
    jitter_cv_requested : the jitter asked for; 0 is applied instead on a cycle-exact machine.
    lower_bounds : on predicted durations.
    static, dynamic : each policy's result, None where the policy was not run.
    hardware : the profile the durations (or only the capacity) came from, if any.
    model : the model name, for a DAG from an analysis document.
    untimed : nodes the analysis gave no time (simulated as 0 s).
    tasks_from : ``"program"`` when the tasks are a compiled program's kernels split into core
        shares (:func:`dfx.sim.program.dag_from_program`), ``"graph"`` when they are graph nodes.
    kernels : the number of kernels of that program (None for a graph).
    """

    dag: SimDag
    pes: int
    runs: int
    jitter_cv: float
    seed: int
    lower_bounds: LowerBounds
    static: PolicyResult | None
    dynamic: PolicyResult | None
    hardware: str | None = None
    model: str | None = None
    jitter_cv_requested: float | None = None
    untimed: tuple[str, ...] = ()
    tasks_from: str = "graph"  # "program": the compiled program's kernels split into core shares
    kernels: int | None = None  # kernels of that program

    @property
    def policies(self) -> tuple[PolicyResult, ...]:
        """The results that were run, static first."""
        return tuple(r for r in (self.static, self.dynamic) if r is not None)

    def policy(self, policy: Policy | str) -> PolicyResult:
        """The result of ``policy``; ``KeyError`` if it was not run."""
        found = {Policy.STATIC: self.static, Policy.DYNAMIC: self.dynamic}[Policy(policy)]
        if found is None:
            raise KeyError(f"policy {Policy(policy).value!r} was not simulated")
        return found

    @property
    def comparison(self) -> Comparison | None:
        """Static against dynamic, when both ran."""
        if self.static is None or self.dynamic is None:
            return None
        s, d = self.static.makespan, self.dynamic.makespan
        pairs = list(zip(s.samples_s, d.samples_s))
        return Comparison(
            static_over_dynamic=s.mean_s / d.mean_s if d.mean_s > 0 else 1.0,
            static_slower_runs=sum(a > b for a, b in pairs),
            dynamic_slower_runs=sum(b > a for a, b in pairs),
            runs=len(pairs),
        )

    def to_record(self) -> SimulationDoc:
        """The export document ``dfx.simulation/1`` as its record (``dfx.schema.simulation``)."""
        lb, c = self.lower_bounds, self.comparison
        return SimulationDoc(
            schema=SCHEMA,
            pes=self.pes,
            runs=self.runs,
            jitter_cv=self.jitter_cv,
            jitter_cv_requested=self.jitter_cv if self.jitter_cv_requested is None else self.jitter_cv_requested,
            seed=self.seed,
            hardware=self.hardware,
            model=self.model,
            dag=SimDagRecord(
                nodes=len(self.dag),
                edges=self.dag.edge_count,
                untimed=tuple(self.untimed),
                tasks_from=self.tasks_from,
                kernels=self.kernels,
            ),
            lower_bounds=SimLowerBoundsRecord(
                critical_path_s=lb.critical_path_s, work_over_pes_s=lb.work_over_pes_s, work_s=lb.work_s
            ),
            by_policy=MappingProxyType({r.policy.value: r.to_record(self.dag) for r in self.policies}),
            comparison=None
            if c is None
            else SimComparisonRecord(
                static_over_dynamic=c.static_over_dynamic,
                static_slower_runs=c.static_slower_runs,
                dynamic_slower_runs=c.dynamic_slower_runs,
                runs=c.runs,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The export document, schema ``dfx.simulation/1`` (see ``docs/simulation.md``)."""
        return self.to_record().to_dict()
