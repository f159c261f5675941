"""Chrome-trace export of a simulation: opens in Perfetto (ui.perfetto.dev) and chrome://tracing.

Format: the Trace Event Format's JSON object form, ``{"traceEvents": [...]}``, with complete events
(``"ph": "X"``; ``ts`` and ``dur`` in microseconds), metadata events naming processes and threads
(``"ph": "M"``) and counter events (``"ph": "C"``). Reference: "Trace Event Format", Google,
docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU.

Layout: one process per policy (pid 1 static, pid 2 dynamic), one thread per PE (tid = PE
number), one complete event per node of run 0, and a ``live bytes`` counter track per policy.

:func:`spans_trace` is the general writer (named processes and threads, one complete event per
span): the compiled program's trace (:mod:`dfx.sim.program_trace`, ``dfx analyze --trace``) and any
other dfx timeline go through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from dfx.sim.engine import Policy
from dfx.sim.result import SCHEMA, PolicyResult, SimulationResult

__all__ = ["PID", "Span", "chrome_trace", "spans_trace"]

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


@dataclass(frozen=True)
class Span:
    """One interval on one track of a trace: a kernel on a core, a collective on a link, a request on a slot.

    ``process`` and ``thread`` are display names (Perfetto's process and thread tracks); spans that
    share them share a track. Times are seconds from the trace's zero.
    """

    name: str
    start_s: float
    end_s: float
    process: str
    thread: str
    category: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)


def spans_trace(spans: Iterable[Span], *, other: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Chrome/Perfetto trace document of ``spans``: the one writer every dfx timeline goes through.

    Processes get pids 1, 2, ... and each process's threads tids 1, 2, ... in the order they first
    appear in ``spans`` (that order is also their sort order on screen); every span is one
    complete event (``"ph": "X"``, ``ts`` and ``dur`` in microseconds). ``json.dumps`` the result
    to a file and open it in ui.perfetto.dev or chrome://tracing.

    Parameters
    ----------
    spans : iterable of Span
    other : mapping, optional
        Written as the document's ``otherData`` (what the trace is of: schema, model, hardware).

    Raises
    ------
    ValueError
        If a span ends before it starts.

    Examples
    --------
    >>> t = spans_trace([Span("k0", 0.0, 2e-6, "chip 0", "core 0"), Span("ar", 2e-6, 4e-6, "chip 0", "link 0-1")])
    >>> [(e["name"], e["pid"], e["tid"], e["ts"], e["dur"]) for e in t["traceEvents"] if e["ph"] == "X"]
    [('k0', 1, 1, 0.0, 2.0), ('ar', 1, 2, 2.0, 2.0)]
    """
    pids: dict[str, int] = {}
    tids: dict[tuple[str, str], int] = {}
    meta: list[dict[str, Any]] = []
    body: list[dict[str, Any]] = []
    for s in spans:
        if s.end_s < s.start_s:
            raise ValueError(f"span {s.name!r} ends at {s.end_s} s, before it starts at {s.start_s} s")
        if s.process not in pids:
            pid = pids[s.process] = len(pids) + 1
            meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": s.process}})
            meta.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        pid = pids[s.process]
        if (s.process, s.thread) not in tids:
            tid = tids[(s.process, s.thread)] = 1 + sum(1 for p, _t in tids if p == s.process)
            meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": s.thread}})
            meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        event = {
            "name": s.name,
            "cat": s.category or "span",
            "ph": "X",
            "ts": s.start_s * _US_PER_S,
            "dur": (s.end_s - s.start_s) * _US_PER_S,
            "pid": pid,
            "tid": tids[(s.process, s.thread)],
        }
        if s.args:
            event["args"] = dict(s.args)
        body.append(event)
    return {"traceEvents": meta + body, "displayTimeUnit": "ns", "otherData": dict(other or {})}
