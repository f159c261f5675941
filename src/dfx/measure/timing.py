"""Time every node of an exported graph for real, with a clock read between nodes in the graph's own code.

The graph module is copied and a stamp (``sync(); stamps[i] = clock()``) is inserted before its
first launched node and after each one; fx generates the Python of that graph as it does for the
graph itself, so the only work added between two nodes is one function call. A node's time is
the time between the stamp before it and the stamp after it: the call of the node's op (Python
and dispatcher overhead plus the kernel) and the graph's own glue around it (freeing tensors no
longer used), so the node times add up to the run. Placeholders, ``get_attr`` and the output
launch nothing and are not timed. On a GPU the device is synchronised at each stamp, so launch
latency and the kernel are charged to the node that launched them.

An ``fx.Interpreter`` that clocks each node (the first design) runs tens of microseconds of Python
between nodes; the dispatcher's code and data are then colder for every node, and small nodes
measured 1.5 to 3 times their time in the plain graph (``docs/validation.md``).
"""

from __future__ import annotations

import copy
import functools
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx

__all__ = [
    "InterleavedRuns",
    "NodeTimes",
    "StampedGraph",
    "settle_allocator",
    "time_graph_nodes",
    "time_interleaved",
    "time_interleaved_runs",
    "time_whole_graph",
]

_UNTIMED = ("placeholder", "get_attr", "output")


# glibc's <malloc.h> mallopt parameters, and DEFAULT_MMAP_THRESHOLD_MAX on a 64-bit glibc (4 MiB x sizeof(long))
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX_BYTES = 32 * 2**20


@functools.cache
def settle_allocator() -> bool:
    """Set glibc's malloc to the state a long-running process settles in, before anything is timed:
    blocks up to 32 MiB come from the heap (``M_MMAP_THRESHOLD``) and the heap is returned to the
    system only past 64 MiB free at its top (``M_TRIM_THRESHOLD``). Returns whether it was set
    (``False`` off glibc: macOS, musl); once per process.

    glibc starts a process with a 128 KiB mmap threshold and raises it, and the trim threshold to
    twice it, each time a larger mmapped block is freed, up to 32 MiB (mallopt(3), "M_MMAP_THRESHOLD").
    A process that has freed a large block (a calibration, a serving engine after its first batch)
    reuses its heap; a fresh one maps and faults in fresh pages for tensors of a few MiB, and gives
    them back at every run. In a fresh ``dfx validate --calibration FILE`` process the Llama layer at
    64 tokens took about 1,760 page faults a run and its ``silu`` measured 1,345 to 1,401 us; with
    these settings 187 to 223 faults and 831 to 906 us (2026-12-02, ``docs/validation.md``), as the
    same node measures after an in-process calibration (what ``bench/bench_validate.py`` does).
    The values are the ones the dynamic adjustment reaches at its cap, so the settled state does not
    depend on what the process freed before.
    """
    import ctypes
    import platform

    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD_MAX_BYTES)
    )


class _Stamps:
    """The clock readings of one run: ``readings[0]`` before the first launched node, ``readings[i]`` after node ``i - 1``."""

    def __init__(self, count: int, clock: Callable[[], float], sync: Callable[[], None]) -> None:
        self.readings = [0.0] * count
        self.clock = clock
        self.sync = sync

    def stamp(self, index: int, *after: Any) -> None:
        self.sync()
        self.readings[index] = self.clock()


class StampedGraph:
    """A copy of ``gm`` that reads ``clock`` between its launched nodes; ``run`` returns the graph's output.

    Parameters
    ----------
    gm : torch.fx.GraphModule
    clock : callable
        Returns seconds as a float (default ``time.perf_counter``); tests pass a fake one.
    sync : callable, optional
        Called before each reading (``torch.cuda.synchronize`` on a GPU).

    After ``run``, ``seconds`` maps each launched node's name to its seconds.
    """

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        clock: Callable[[], float] = time.perf_counter,
        sync: Callable[[], None] | None = None,
    ) -> None:
        graph = copy.deepcopy(gm.graph)
        timed = [n for n in graph.nodes if n.op not in _UNTIMED]
        self.names = [n.name for n in timed]
        self._stamps = _Stamps(len(timed) + 1, clock, sync or (lambda: None))
        if timed:
            with graph.inserting_before(timed[0]):
                graph.call_function(self._stamps.stamp, (0,))
            for i, node in enumerate(timed, start=1):
                with graph.inserting_after(node):
                    graph.call_function(self._stamps.stamp, (i, node))  # takes the node: runs after it
        self.module = torch.fx.GraphModule(gm, graph)
        self.seconds: dict[str, float] = {}

    def run(self, *inputs: Any) -> Any:
        out = self.module(*inputs)
        r = self._stamps.readings
        self.seconds = {name: r[i + 1] - r[i] for i, name in enumerate(self.names)}
        return out


@dataclass(frozen=True)
class NodeTimes:
    """Per-node medians over ``repeat`` timed runs (after ``warmup`` untimed ones)."""

    median_s: Mapping[str, float]
    repeat: int
    warmup: int

    def to_dict(self) -> dict[str, Any]:
        return {"median_s": dict(self.median_s), "repeat": self.repeat, "warmup": self.warmup}


def time_graph_nodes(
    gm: torch.fx.GraphModule,
    inputs: list[Any],
    *,
    repeat: int = 10,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], None] | None = None,
) -> NodeTimes:
    """Run ``gm`` on ``inputs`` ``warmup + repeat`` times node by node; keep each node's median.

    Examples
    --------
    >>> gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    >>> t = time_graph_nodes(gm, [torch.ones(4)], repeat=3, warmup=1)
    >>> list(t.median_s)
    ['relu']
    """
    runs: list[dict[str, float]] = []
    stamped = StampedGraph(gm, clock, sync)
    with torch.no_grad():
        for i in range(warmup + repeat):
            stamped.run(*inputs)
            if i >= warmup:
                runs.append(stamped.seconds)
    names = list(runs[0]) if runs else []
    medians = {name: statistics.median(r[name] for r in runs) for name in names}
    return NodeTimes(medians, repeat, warmup)


def time_whole_graph(
    fn: Callable[[], Any],
    *,
    repeat: int = 10,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], None] | None = None,
) -> float:
    """Median seconds of ``fn()`` (the whole graph in one call, no per-node instrumentation)."""
    return time_interleaved(list, fn, repeat=repeat, warmup=warmup, clock=clock, sync=sync)[1]  # no stamped run


def time_interleaved(
    parts: Callable[[], Sequence[float]],
    whole: Callable[[], Any],
    *,
    repeat: int = 10,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], None] | None = None,
) -> tuple[list[float], float]:
    """Alternate a stamped run (``parts()``: each part's seconds, in a fixed order) and a plain timed
    run (``whole()``), ``warmup + repeat`` times each; return each part's median and the whole's median.

    The parts and the whole are the prediction's per-node (or per-kernel) and end-to-end references.
    Timed one block after the other, they sample the machine minutes apart: on the 2-vCPU virtual
    machine of ``docs/validation.md`` a compiled MLP's five kernel calls summed to 44 us and its
    whole call then measured 78 us (2026-12-02 02:58; the two agree within 8 us in every other
    measurement set). Alternating them, each median sees the same minutes.
    :func:`time_interleaved_runs` also keeps every run and can time over a minimum window.

    Examples
    --------
    >>> ticks = iter([0.0, 2.0, 10.0, 14.0, 20.0, 21.0])  # whole calls: 2, 4, 1 s
    >>> parts = iter([[5.0, 1.0], [3.0, 1.0], [4.0, 2.0]])
    >>> time_interleaved(lambda: next(parts), lambda: None, repeat=2, warmup=1, clock=lambda: next(ticks))
    ([3.5, 1.5], 2.5)
    """
    runs = time_interleaved_runs(parts, whole, repeat=repeat, warmup=warmup, clock=clock, sync=sync)
    return runs.part_medians_s, runs.whole_median_s


@dataclass(frozen=True)
class InterleavedRuns:
    """Every timed pair of :func:`time_interleaved_runs`: ``parts_s[i]`` the stamped run's parts,
    ``whole_s[i]`` the plain run after it (seconds)."""

    parts_s: tuple[tuple[float, ...], ...]
    whole_s: tuple[float, ...]

    @property
    def part_medians_s(self) -> list[float]:
        """Each part's median over the runs, in the parts' order."""
        if not self.parts_s:
            return []
        return [statistics.median(p[j] for p in self.parts_s) for j in range(len(self.parts_s[0]))]

    @property
    def whole_median_s(self) -> float:
        """The plain runs' median (NaN when none was timed)."""
        return statistics.median(self.whole_s) if self.whole_s else float("nan")

    def whole_spread(self) -> dict[str, float | int]:
        """The plain runs' count, the seconds the timed pairs took, and their 10th, 50th and 90th
        percentiles (``statistics.quantiles``, inclusive method: linear interpolation between order
        statistics, the 10th percentile of n runs at rank 1 + 0.1 (n - 1)).

        The spread says how far the end-to-end measurement itself moves: a prediction between the
        10th and 90th percentiles is as close as this machine's runs are to one another
        (``docs/validation.md``, "the machine's two speeds").

        >>> InterleavedRuns(((1.0,),) * 11, tuple(float(x) for x in range(10, 21))).whole_spread()
        {'runs': 11, 'window_s': 176.0, 'p10_s': 11.0, 'p50_s': 15.0, 'p90_s': 19.0}
        """
        w = self.whole_s
        if len(w) < 2:
            m = w[0] if w else float("nan")
            return {"runs": len(w), "window_s": sum(w), "p10_s": m, "p50_s": m, "p90_s": m}
        deciles = statistics.quantiles(w, n=10, method="inclusive")
        window = sum(w) + sum(sum(p) for p in self.parts_s)
        return {
            "runs": len(w),
            "window_s": window,
            "p10_s": deciles[0],
            "p50_s": statistics.median(w),
            "p90_s": deciles[8],
        }


def time_interleaved_runs(
    parts: Callable[[], Sequence[float]],
    whole: Callable[[], Any],
    *,
    repeat: int = 10,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], None] | None = None,
    min_window_s: float = 0.0,
    max_runs: int | None = None,
) -> InterleavedRuns:
    """:func:`time_interleaved`'s pairs, every one kept; timing goes on past ``repeat`` pairs until
    the timed runs (the stamped runs' parts and the plain runs) have taken ``min_window_s`` seconds,
    or ``max_runs`` pairs (default the larger of ``100 * repeat`` and 10,000: half a second of a
    25-us model) are timed.

    Why a window: a model of tens of microseconds, timed 20 times, samples a millisecond of the
    machine. On the 2-vCPU virtual machine of ``docs/validation.md`` the MLP's runs take either about
    48 or about 100 us, the slower state holding for 0.1 to 1 s at a time (2026-12-02), so 20 runs
    land in one state or the other at random. Python's ``timeit.Timer.autorange`` chooses its loop
    count so that a measurement takes at least 0.2 s for the same reason (the Python documentation,
    ``timeit``); the window is time spent in the runs themselves, read from the clock readings
    already taken (no extra reading).

    Raises
    ------
    ValueError
        ``min_window_s`` negative or ``max_runs`` below ``repeat``.

    Examples
    --------
    >>> ticks = iter([0.0, 2.0, 10.0, 11.0, 20.0, 21.0, 30.0, 34.0])  # whole calls: 2 (warm-up), 1, 1, 4 s
    >>> r = time_interleaved_runs(lambda: [1.0], lambda: None, repeat=1, warmup=1,
    ...                           clock=lambda: next(ticks), min_window_s=5.0)
    >>> r.whole_s  # 1 + 1 (pair 1), then 1 + 1 (pair 2): 4 s < 5 s; pair 3 brings 9 s
    (1.0, 1.0, 4.0)
    """
    if min_window_s < 0:
        raise ValueError(f"min_window_s={min_window_s} is negative; pass 0 for exactly `repeat` runs")
    cap = max(100 * repeat, 10_000) if max_runs is None else max_runs
    if cap < repeat:
        raise ValueError(f"max_runs={max_runs} is below repeat={repeat}")
    sync = sync or (lambda: None)
    samples: list[tuple[float, ...]] = []
    wholes: list[float] = []
    timed_s = 0.0
    i = 0
    with torch.no_grad():
        while i < warmup + repeat or (timed_s < min_window_s and len(wholes) < cap):
            seconds = parts()
            sync()
            start = clock()
            whole()
            sync()
            elapsed = clock() - start
            if i >= warmup:
                samples.append(tuple(seconds))
                wholes.append(elapsed)
                timed_s += elapsed + sum(seconds)
            i += 1
    return InterleavedRuns(tuple(samples), tuple(wholes))
