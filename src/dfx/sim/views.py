"""Views of one schedule: concurrency over time, live bytes over time, and the firing steps.

Each is a free function of ``(dag, schedule)`` returning a frozen record; all are sweeps over the
sorted start/end instants, O(N log N).
"""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import accumulate
from dataclasses import dataclass
from dfx.sim.dag import SimDag
from dfx.sim.engine import Schedule

__all__ = ["ConcurrencyProfile", "MemoryProfile", "Step", "concurrency", "firing_steps", "live_bytes"]


def _step_function(times: list[float], deltas: list[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Sum ``deltas[i]`` at ``times[i]`` into a step function: ``v[k]`` holds on ``[t[k], t[k+1])``.

    All deltas at one instant are applied together; repeated values are merged.
    """
    if not times:
        return (), ()
    order = sorted(range(len(times)), key=times.__getitem__)
    ts = list(map(times.__getitem__, order))
    levels = list(accumulate(map(deltas.__getitem__, order)))
    last_at_instant = [k for k, (a, b) in enumerate(zip(ts, ts[1:])) if a != b] + [len(ts) - 1]
    out_t: list[float] = []
    out_v: list[float] = []
    for k in last_at_instant:
        if not out_v or out_v[-1] != levels[k]:
            out_t.append(ts[k])
            out_v.append(levels[k])
    return tuple(out_t), tuple(out_v)


@dataclass(frozen=True)
class ConcurrencyProfile:
    """How many PEs are busy over time: ``running[i]`` nodes run during ``[time_s[i], time_s[i+1])``.

    Attributes
    ----------
    time_s, running : the step function; the last entry is 0 at the makespan.
    peak : the most nodes running at once.
    mean : total busy time / makespan (the average parallelism achieved).
    """

    time_s: tuple[float, ...]
    running: tuple[int, ...]
    peak: int
    mean: float


def concurrency(schedule: Schedule) -> ConcurrencyProfile:
    """The number of nodes running at each instant of ``schedule`` (zero-length nodes never count)."""
    spans = [(s, e) for s, e in zip(schedule.start_s, schedule.end_s) if e > s]
    times = [s for s, _ in spans] + [e for _, e in spans]
    times, values = _step_function(times, [1.0] * len(spans) + [-1.0] * len(spans))
    running = tuple(map(int, values))
    span = schedule.makespan_s
    busy = math.fsum(e - s for s, e in spans)
    return ConcurrencyProfile(times, running, max(running, default=0), busy / span if span > 0 else 0.0)


@dataclass(frozen=True)
class MemoryProfile:
    """Bytes of live tensors over time: ``live_bytes[i]`` during ``[time_s[i], time_s[i+1])``.

    A node's output is live from the node's start to the end of its last consumer (a graph output,
    with no consumer, to the makespan). A node that aliases its inputs (a view) owns no bytes and
    extends its inputs' lives to its own last consumer's end.

    Attributes
    ----------
    time_s, live_bytes : the step function.
    peak_bytes : the largest live total, first reached at ``peak_time_s``.
    capacity_bytes : the on-chip capacity it is compared with, or None when unknown.
    over_capacity_s : total time the live bytes exceed ``capacity_bytes`` (0 when unknown).
    """

    time_s: tuple[float, ...]
    live_bytes: tuple[float, ...]
    peak_bytes: float
    peak_time_s: float
    capacity_bytes: float | None
    over_capacity_s: float

    @property
    def fits(self) -> bool | None:
        """Whether the peak fits ``capacity_bytes``; None when the capacity is unknown."""
        return None if self.capacity_bytes is None else self.peak_bytes <= self.capacity_bytes


def _last_use(dag: SimDag, schedule: Schedule) -> list[float]:
    """When each node's output dies: its last consumer's end, looking through aliasing views."""
    n = len(dag)
    end = schedule.end_s
    makespan = schedule.makespan_s
    last = [0.0] * n
    seen_by = list(end)  # when a consumer is done with its inputs: its end, or a view's last use
    seen_of, succs, aliases = seen_by.__getitem__, dag.succs, dag.aliases_inputs
    for v in range(n - 1, -1, -1):
        last[v] = max(map(seen_of, succs[v])) if succs[v] else makespan
        if aliases[v]:
            seen_by[v] = max(end[v], last[v])
    return last


def live_bytes(dag: SimDag, schedule: Schedule, capacity_bytes: float | None = None) -> MemoryProfile:
    """Live tensor bytes over ``schedule`` and their peak, against an optional capacity.

    Examples
    --------
    A chain a -> b -> c on one PE, 1 s each, outputs of 10, 20 and 30 bytes: ``a``'s output lives
    [0, 2), ``b``'s [1, 3), ``c``'s (a graph output) [2, 3), so the peak is 20 + 30 = 50 at t = 2.

    >>> import networkx as nx
    >>> from dfx.sim.dag import from_networkx
    >>> from dfx.sim.engine import run_dynamic
    >>> g = nx.DiGraph([("a", "b"), ("b", "c")])
    >>> for name, nbytes in [("a", 10), ("b", 20), ("c", 30)]:
    ...     g.add_node(name, duration_s=1.0, output_bytes=nbytes)
    >>> dag = from_networkx(g)
    >>> mem = live_bytes(dag, run_dynamic(dag, 1, [0, 1, 2], dag.duration_s))
    >>> mem.peak_bytes, mem.peak_time_s
    (50.0, 2.0)
    """
    last = _last_use(dag, schedule)
    start = schedule.start_s
    live = [v for v, nbytes in enumerate(dag.output_bytes) if nbytes and last[v] > start[v]]
    sizes = [float(dag.output_bytes[v]) for v in live]
    times, values = _step_function([start[v] for v in live] + [last[v] for v in live], sizes + [-b for b in sizes])
    peak = max(values, default=0.0)
    peak_time = times[values.index(peak)] if values else 0.0
    over = 0.0
    if capacity_bytes is not None:
        for i, value in enumerate(values[:-1]):
            if value > capacity_bytes:
                over += times[i + 1] - times[i]
    return MemoryProfile(times, values, peak, peak_time, capacity_bytes, over)


@dataclass(frozen=True)
class Step:
    """One instant of the firing sequence.

    Attributes
    ----------
    index : 0, 1, 2, ... in time order.
    time_s : the instant.
    finished : nodes that end now, delivering their output tokens.
    ready : nodes holding every input token and not yet started (before this instant's firings).
    fired : the ready nodes that start now; ``ready`` minus ``fired`` wait for a PE (or, under the
        static policy, for their turn on their PE).
    """

    index: int
    time_s: float
    finished: tuple[str, ...]
    ready: tuple[str, ...]
    fired: tuple[str, ...]


def firing_steps(dag: SimDag, schedule: Schedule) -> list[Step]:
    """The firing sequence of ``schedule``, one :class:`Step` per instant something starts or ends.

    Nodes within a step are listed in topological order. Meant for small graphs: the ``ready``
    lists of a wide graph on few PEs add up to O(N^2) names.
    """
    n = len(dag)
    start, end = schedule.start_s, schedule.end_s
    enabled = [max((end[u] for u in dag.preds[v]), default=0.0) for v in range(n)]
    starts_at: dict[float, list[int]] = defaultdict(list)
    ends_at: dict[float, list[int]] = defaultdict(list)
    for v in range(n):
        starts_at[start[v]].append(v)
        ends_at[end[v]].append(v)
    by_enabled = sorted(range(n), key=lambda v: (enabled[v], v))
    waiting: set[int] = set()
    steps: list[Step] = []
    k = 0
    for t in sorted(starts_at.keys() | ends_at.keys()):
        while k < n and enabled[by_enabled[k]] <= t:
            waiting.add(by_enabled[k])
            k += 1
        fired = starts_at.get(t, [])
        names = dag.names
        steps.append(
            Step(
                index=len(steps),
                time_s=t,
                finished=tuple(names[v] for v in ends_at.get(t, [])),
                ready=tuple(names[v] for v in sorted(waiting)),
                fired=tuple(names[v] for v in fired),
            )
        )
        waiting.difference_update(fired)
    return steps
