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

from dfx.sim.api import parse_policy, simulate
from dfx.sim.dag import SimDag, as_sim_dag, dag_from_analysis, dag_from_lists, from_networkx
from dfx.sim.engine import NodeRun, Policy, Schedule, StaticPlan, plan_static, run_dynamic, run_static
from dfx.sim.errors import SimulationError
from dfx.sim.gantt import gantt, render_gantt
from dfx.sim.jitter import jittered_durations, lognormal_params
from dfx.sim.priority import LowerBounds, lower_bounds, priority_order, upward_rank
from dfx.sim.result import SCHEMA, Comparison, MakespanStats, PolicyResult, SimulationResult
from dfx.sim.trace import chrome_trace
from dfx.sim.views import ConcurrencyProfile, MemoryProfile, Step, concurrency, firing_steps, live_bytes

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
