"""Dataflow simulation: the firing rule on N processing elements, static versus dynamic scheduling.

A node fires when all its input tokens have arrived and a processing element (PE) is free. The
static policy fixes each PE's order at compile time from predicted durations; the dynamic policy
picks from a ready list at run time. Seeded jitter on the durations is what separates them.

>>> import dfx.sim
>>> r = dfx.sim.simulate(({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("a", "c")]), pes=2)
>>> r.to_dict()["policies"]["dynamic"]["makespan_s"]["mean"]
4.0

Torch-free: the simulator reads a plain DAG or an analysis export document (``dfx.analysis/1``).
See ``docs/simulation.md``.
"""

from dfx.lazy import lazy_exports

from dfx.sim.gantt import gantt, render_gantt

# name -> the submodule that defines it, imported on first use (dfx.lazy)
_EXPORTS = {
    "parse_policy": "api",
    "simulate": "api",
    "SimDag": "dag",
    "as_sim_dag": "dag",
    "dag_from_analysis": "dag",
    "dag_from_lists": "dag",
    "from_networkx": "dag",
    "NodeRun": "engine",
    "Policy": "engine",
    "Schedule": "engine",
    "StaticPlan": "engine",
    "plan_static": "engine",
    "run_dynamic": "engine",
    "run_static": "engine",
    "SimulationError": "errors",
    "jittered_durations": "jitter",
    "lognormal_params": "jitter",
    "LowerBounds": "priority",
    "lower_bounds": "priority",
    "priority_order": "priority",
    "upward_rank": "priority",
    "SCHEMA": "result",
    "Comparison": "result",
    "MakespanStats": "result",
    "PolicyResult": "result",
    "SimulationResult": "result",
    "chrome_trace": "trace",
    "ConcurrencyProfile": "views",
    "MemoryProfile": "views",
    "Step": "views",
    "concurrency": "views",
    "firing_steps": "views",
    "live_bytes": "views",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


__all__ = [
    "SCHEMA",
    "Comparison",
    "ConcurrencyProfile",
    "LowerBounds",
    "MakespanStats",
    "MemoryProfile",
    "NodeRun",
    "Policy",
    "PolicyResult",
    "Schedule",
    "SimDag",
    "SimulationError",
    "SimulationResult",
    "StaticPlan",
    "Step",
    "as_sim_dag",
    "chrome_trace",
    "concurrency",
    "dag_from_analysis",
    "dag_from_lists",
    "firing_steps",
    "from_networkx",
    "gantt",
    "jittered_durations",
    "live_bytes",
    "lognormal_params",
    "lower_bounds",
    "parse_policy",
    "plan_static",
    "render_gantt",
    "priority_order",
    "run_dynamic",
    "run_static",
    "simulate",
    "upward_rank",
]
