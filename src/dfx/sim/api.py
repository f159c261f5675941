"""``simulate``: one DAG, N PEs, the static and/or dynamic policy, R seeded runs."""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any, Mapping

import networkx as nx

from dfx.hardware.schema import HardwareProfile
from dfx.schema.analysis import AnalysisDoc
from dfx.sim.dag import SimDag, analysis_record, as_sim_dag, dag_from_analysis, from_networkx
from dfx.sim.engine import Policy, Schedule, StaticPlan, plan_static, run_dynamic, run_static
from dfx.sim.errors import SimulationError
from dfx.sim.jitter import jittered_durations
from dfx.sim.priority import lower_bounds, priority_order, upward_rank
from dfx.sim.program import dag_from_program, has_program
from dfx.sim.result import MakespanStats, PolicyResult, SimulationResult
from dfx.sim.views import concurrency, firing_steps, live_bytes

__all__ = ["HardwareRef", "SimSource", "best_plan", "parse_policy", "simulate"]

# What ``simulate`` takes: an analysis (its record, or the dfx.analysis/1 document as a mapping),
# or a plain DAG (a SimDag, a networkx DiGraph, or a (nodes, edges) pair); told apart by type.
SimSource = AnalysisDoc | Mapping[str, Any] | SimDag | nx.DiGraph | tuple
# A profile: loaded (HardwareProfile), or an id, alias, path or quick text that load_profile resolves.
HardwareRef = str | Path | HardwareProfile

_BOTH = "both"
# Budgets, refused before any run: a run costs about 7 us of CPU per node and policy here
# (gpt2-block's 37 nodes x 20,000 jittered runs: 5.3 s), and every run keeps one float per PE.
MAX_PES = 1_000_000
MAX_RUNS = 1_000_000
SIM_WORK_BUDGET = 2_000_000  # distinct runs x (nodes + PEs): about 15 s of CPU
# A lognormal of CV c has sigma = sqrt(ln(1 + c^2)); c = 100 gives sigma 3.03 (factors up to e^+-9
# at 3 sigma). Far above it the draws overflow to inf and the event loop never ends.
MAX_JITTER_CV = 100.0


def parse_policy(policy: Policy | str) -> tuple[Policy, ...]:
    """``"static"``, ``"dynamic"`` or ``"both"`` as the policies to run, static first."""
    if isinstance(policy, Policy):
        return (policy,)
    key = str(policy).strip().lower()
    if key == _BOTH:
        return (Policy.STATIC, Policy.DYNAMIC)
    try:
        return (Policy(key),)
    except ValueError:
        raise SimulationError(f"unknown policy {policy!r}; expected static, dynamic or both") from None


def _check_options(pes: int, jitter_cv: float, runs: int) -> None:
    for name, value in (("pes", pes), ("runs", runs)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise SimulationError(f"{name} must be an integer >= 1, got {value!r}")
    if not isinstance(jitter_cv, numbers.Real) or not (math.isfinite(jitter_cv) and jitter_cv >= 0):
        raise SimulationError(f"jitter must be a finite coefficient of variation >= 0, got {jitter_cv!r}")
    if jitter_cv > MAX_JITTER_CV:
        raise SimulationError(
            f"jitter {jitter_cv:g} is above {MAX_JITTER_CV:g} (a lognormal that wide has no "
            "finite draws); give a coefficient of variation such as 0.2"
        )
    for name, value, limit in (("pes", pes, MAX_PES), ("runs", runs, MAX_RUNS)):
        if value > limit:
            raise SimulationError(f"{name} {value:,} is beyond the simulator's budget of {limit:,}; give fewer")


def _check_work(dag: SimDag, pes: int, distinct_runs: int) -> None:
    """Refuse a simulation whose runs x (nodes + PEs) is beyond :data:`SIM_WORK_BUDGET`."""
    work = distinct_runs * (len(dag.duration_s) + pes)
    if work > SIM_WORK_BUDGET:
        raise SimulationError(
            f"{distinct_runs:,} runs x ({len(dag.duration_s):,} nodes + {pes:,} PEs) = {work:,} steps is beyond "
            f"the simulator's budget of {SIM_WORK_BUDGET:,}; give fewer --runs or --pes"
        )


def _load(hw: HardwareRef) -> HardwareProfile:
    """``hw`` as a profile: an id, alias, path or quick text is loaded; a profile is returned as is."""
    if isinstance(hw, HardwareProfile):
        return hw
    from dfx.hardware import load_profile

    return load_profile(hw)


def _capacity(profile: HardwareProfile | None) -> float | None:
    """On-chip capacity in bytes (the profile's largest usable on-chip level), None if unknown."""
    level = None if profile is None else profile.on_chip_level()
    return None if level is None else float(level.capacity_bytes)


def _prepare(
    source: SimSource,
    hw: HardwareRef | None,
    pes: int = 1,
) -> tuple[SimDag, dict[str, Any], HardwareProfile | None]:
    """The DAG, the result's provenance fields and the hardware profile (None if none or unknown).

    For a document, ``hw`` may be a key of its ``hardware`` or anything the loader resolves to one;
    a profile the loader does not know (a user's file made elsewhere) still gives timings, only no
    capacity. For a plain DAG, ``hw`` must load. A document evaluated ``compiled`` is simulated as
    its program's kernels split into core shares for ``pes`` PEs (:mod:`dfx.sim.program`).
    """
    if not isinstance(source, (AnalysisDoc, Mapping)):  # a plain DAG
        profile = None if hw is None else _load(hw)
        return as_sim_dag(source), {"hardware": None if profile is None else profile.id}, profile
    from dfx.errors import DfxError

    doc = analysis_record(source)  # a record, or a document read through it
    timed = doc.hardware
    key = hw if hw is None or (isinstance(hw, str) and hw in timed) else _load(hw).id
    if key is None and len(timed) == 1:
        key = next(iter(timed))
    compiled = key is not None and has_program(doc, key)
    g = dag_from_program(doc, key, pes) if compiled else dag_from_analysis(doc, key)
    try:
        profile = _load(hw if hw is not None else g.graph["hardware"])
    except DfxError:
        profile = None
    meta = {
        "hardware": g.graph["hardware"],
        "model": g.graph["model"],
        "untimed": tuple(g.graph["untimed"]),
        "tasks_from": "program" if compiled else "graph",
        "kernels": g.graph.get("kernels"),
    }
    return from_networkx(g), meta, profile


def best_plan(dag: SimDag, pes: int, order: list[int]) -> StaticPlan:
    """The compile-time plan: the better, on predicted durations, of HEFT and the ready-list schedule.

    A compiler that knows the predicted durations can also freeze the schedule a run-time ready list
    would produce (each PE's nodes in their start order); it keeps whichever finishes first. So with
    no jitter the static makespan is never above the dynamic one.
    """
    heft = plan_static(dag, pes, order)
    greedy = run_dynamic(dag, pes, order, dag.duration_s)
    if greedy.makespan_s >= heft.planned.makespan_s:
        return heft
    position = {v: i for i, v in enumerate(order)}
    frozen = sorted(range(len(dag)), key=lambda v: (greedy.start_s[v], greedy.end_s[v], position[v]))
    plan = StaticPlan(order=tuple(frozen), pe=greedy.pe, planned=greedy)
    planned = run_static(dag, plan, dag.duration_s, pes)
    return StaticPlan(order=plan.order, pe=plan.pe, planned=planned)


class _Runs:
    """Accumulates one policy's runs: run 0 in full, then only makespans and utilization sums."""

    def __init__(self, pes: int) -> None:
        self.first: Schedule | None = None
        self.makespans_s: list[float] = []
        self.utilization_sum = [0.0] * pes

    def add(self, schedule: Schedule, times: int = 1) -> None:
        """Count ``schedule`` as ``times`` identical runs."""
        if self.first is None:
            self.first = schedule
        self.makespans_s += [schedule.makespan_s] * times
        for p, u in enumerate(schedule.utilization()):
            self.utilization_sum[p] += u * times


def _policy_result(
    dag: SimDag, policy: Policy, runs: _Runs, predicted: Schedule, capacity: float | None, steps: bool
) -> PolicyResult:
    first = runs.first
    return PolicyResult(
        policy=policy,
        makespan=MakespanStats.from_samples(runs.makespans_s),
        utilization=tuple(u / len(runs.makespans_s) for u in runs.utilization_sum),
        predicted_makespan_s=predicted.makespan_s,
        schedule=first,
        concurrency=concurrency(first),
        memory=live_bytes(dag, first, capacity),
        steps=tuple(firing_steps(dag, first)) if steps else None,
    )


def simulate(
    source: SimSource,
    *,
    hw: HardwareRef | None = None,
    pes: int = 1,
    policy: Policy | str = _BOTH,
    jitter_cv: float = 0.0,
    runs: int = 1,
    seed: int = 0,
    steps: bool = False,
    capacity_bytes: float | None = None,
) -> SimulationResult:
    """Simulate a DAG under the firing rule on ``pes`` identical PEs.

    Parameters
    ----------
    source : AnalysisDoc, mapping, SimDag, networkx.DiGraph or (nodes, edges)
        An analysis (``dfx.analysis/1``: its record, or the document, read through
        :func:`dfx.schema.analysis.read_analysis`) whose ``hw`` timings give the durations; or a
        plain DAG whose nodes carry ``duration_s`` (see :func:`~dfx.sim.dag.from_networkx`).
    hw : str or HardwareProfile, optional
        For a document, which profile's timings to use (may be omitted if it holds one). For any
        input, the profile whose on-chip capacity the live bytes are compared with.
    pes : int
        Number of identical processing elements, >= 1.
    policy : ``"static"``, ``"dynamic"`` or ``"both"``
    jitter_cv : float
        Coefficient of variation of the lognormal (mean 1) factor each actual duration is drawn
        with (:mod:`dfx.sim.jitter`); 0 runs the prediction. Both policies see the same draws.
        On a cycle-exact profile (``profile.cycle_exact``, the Groq TSP) 0 is applied whatever is
        asked; the result keeps the request in ``jitter_cv_requested``.
    runs : int
        Number of runs; with ``jitter_cv == 0`` they are identical.
    seed : int
        Seed of the jitter draws.
    steps : bool
        Also record the firing sequence of run 0 (for small graphs).
    capacity_bytes : float, optional
        On-chip capacity to compare live bytes with; overrides the one from ``hw``.

    Returns
    -------
    SimulationResult
        ``to_dict()`` is the export document ``dfx.simulation/1``.

    Raises
    ------
    SimulationError
        On a cycle, a bad duration, ``pes < 1``, ``runs < 1``, ``jitter_cv < 0`` or an unknown policy.

    Examples
    --------
    A fork-join s -> {a, b} -> j of 1, 2, 2, 1 s on two PEs: both policies run a and b side by side.

    >>> r = simulate(({"s": 1.0, "a": 2.0, "b": 2.0, "j": 1.0},
    ...               [("s", "a"), ("s", "b"), ("a", "j"), ("b", "j")]), pes=2)
    >>> r.static.makespan.mean_s, r.dynamic.makespan.mean_s, r.lower_bounds.critical_path_s
    (4.0, 4.0, 4.0)
    """
    _check_options(pes, jitter_cv, runs)
    policies = parse_policy(policy)
    dag, meta, profile = _prepare(source, hw, pes)
    requested_cv = float(jitter_cv)
    if profile is not None and profile.cycle_exact:
        # A machine that runs its compile-time schedule cycle by cycle (the Groq TSP) has no
        # run-time variation to draw: docs/spatial.md.
        jitter_cv = 0.0
    if capacity_bytes is None:
        capacity_bytes = _capacity(profile)
    rank = upward_rank(dag)
    order = priority_order(dag, rank)
    plan = best_plan(dag, pes, order) if Policy.STATIC in policies else None
    acc = {p: _Runs(pes) for p in policies}
    distinct = runs if jitter_cv > 0 else 1  # without jitter every run is the same run
    _check_work(dag, pes, distinct)
    for actual in jittered_durations(dag.duration_s, jitter_cv, distinct, seed):
        for p in policies:
            run = run_static(dag, plan, actual, pes) if p is Policy.STATIC else run_dynamic(dag, pes, order, actual)
            acc[p].add(run, times=runs // distinct)
    results = {}
    for p in policies:
        if p is Policy.STATIC:
            predicted = plan.planned
        else:
            predicted = acc[p].first if jitter_cv == 0 else run_dynamic(dag, pes, order, dag.duration_s)
        results[p] = _policy_result(dag, p, acc[p], predicted, capacity_bytes, steps)
    return SimulationResult(
        dag=dag,
        pes=pes,
        runs=runs,
        jitter_cv=float(jitter_cv),
        seed=int(seed),
        lower_bounds=lower_bounds(dag, pes, rank),
        static=results.get(Policy.STATIC),
        dynamic=results.get(Policy.DYNAMIC),
        jitter_cv_requested=requested_cv,
        **meta,
    )
