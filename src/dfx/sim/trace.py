"""Chrome-trace export of a simulation: opens in Perfetto (ui.perfetto.dev) and chrome://tracing.

Format: the Trace Event Format's JSON object form, ``{"traceEvents": [...]}``, with complete events
(``"ph": "X"``; ``ts`` and ``dur`` in microseconds), metadata events naming processes and threads
(``"ph": "M"``) and counter events (``"ph": "C"``). Reference: "Trace Event Format", Google,
docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU.

Layout: one process per policy (pid 1 static, pid 2 dynamic), one thread per PE (tid = PE
number), one complete event per node of run 0, and a ``live bytes`` counter track per policy.
"""

from __future__ import annotations

from typing import Any

from dfx.sim.engine import Policy
from dfx.sim.result import SCHEMA, PolicyResult, SimulationResult

__all__ = ["PID", "chrome_trace"]

PID = {Policy.STATIC: 1, Policy.DYNAMIC: 2}
_US_PER_S = 1e6


def _policy_events(result: SimulationResult, pr: PolicyResult) -> list[dict[str, Any]]:
    pid = PID[pr.policy]
    dag, sched = result.dag, pr.schedule
    events: list[dict[str, Any]] = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": pid,
            "tid": 0,
            "args": {"name": f"{pr.policy.value} ({result.pes} PEs)"},
        },
        {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
    ]
    events += [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": p, "args": {"name": f"PE {p}"}} for p in range(result.pes)
    ]
    for v, name in enumerate(dag.names):
        events.append(
            {
                "name": name,
                "cat": dag.category[v] or "node",
                "ph": "X",
                "ts": sched.start_s[v] * _US_PER_S,
                "dur": (sched.end_s[v] - sched.start_s[v]) * _US_PER_S,
                "pid": pid,
                "tid": sched.pe[v],
                "args": {"output_bytes": dag.output_bytes[v], "predicted_s": dag.duration_s[v]},
            }
        )
    mem = pr.memory
    events += [
        {"name": "live bytes", "ph": "C", "ts": t * _US_PER_S, "pid": pid, "args": {"bytes": b}}
        for t, b in zip(mem.time_s, mem.live_bytes)
    ]
    return events


def chrome_trace(result: SimulationResult) -> dict[str, Any]:
    """The Chrome-trace document of run 0 of every simulated policy; ``json.dumps`` it to a file.

    Examples
    --------
    >>> from dfx.sim import simulate
    >>> r = simulate(({"a": 1.0, "b": 2.0}, [("a", "b")]), pes=1, policy="dynamic")
    >>> [(e["name"], e["ts"], e["dur"]) for e in chrome_trace(r)["traceEvents"] if e["ph"] == "X"]
    [('a', 0.0, 1000000.0), ('b', 1000000.0, 2000000.0)]
    """
    events: list[dict[str, Any]] = []
    for pr in result.policies:
        events += _policy_events(result, pr)
    other = {"schema": SCHEMA, "pes": result.pes, "hardware": result.hardware, "model": result.model}
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}
