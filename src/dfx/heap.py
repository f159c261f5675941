"""A captured graph's objects and Python's cyclic garbage collector: freeze them once, for processes that opt in.

A capture leaves hundreds of thousands of objects the cyclic collector tracks (torch, the exported
program, the graph); each full (generation 2) collection afterwards scans them all again, about
1.1 s on the shared 2-core machine (``docs/compile.md``, "Garbage collection"). In a process that
opts in (:func:`freeze_after_capture`: ``dfx``'s command line, a sweep's worker processes and Ray
actors), :func:`after_capture` collects once and then moves every surviving object to the
collector's permanent generation (``gc.freeze()``, Python 3.7+), which later collections skip.

What this costs: an object frozen while alive and later dropped is still freed by reference
counting; only one in a reference cycle stays allocated until the process ends. The collection
before each freeze leaves no garbage behind, so what is frozen is what was alive then (the graphs a
process keeps, torch's caches). A library call (``dfx.analyze``, ``run_sweep`` in the caller's own
process) never freezes: the caller owns its process's collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["after_capture", "freeze_after_capture", "held", "release", "start_worker"]

_FREEZE = False
_HELD = False  # set by held(): the holder freezes once at its end, so after_capture does nothing meanwhile


def freeze_after_capture(enabled: bool = True) -> bool:
    """Make :func:`after_capture` collect and freeze in this process (and in processes forked from it).

    Returns the previous setting, so a caller that opts in for a while (``dfx.cli.main`` called in
    a test's process) can put it back with :func:`release`.
    """
    global _FREEZE
    previous, _FREEZE = _FREEZE, enabled
    return previous


def start_worker() -> None:
    """A worker process's start (a sweep's pool worker or Ray actor), which owns its collector.

    Opts in (:func:`freeze_after_capture`), and freezes at once what the process holds: a forked
    worker's copy of its parent's objects (and a Ray actor's own imports) are never garbage this
    worker could free, and without the freeze its first full collection scans them all (about
    20 ms of a sweep worker's start, forked from ``dfx sweep``'s process).
    """
    freeze_after_capture()
    gc.freeze()


def release(previous: bool) -> None:
    """Undo an opt-in: the setting back to ``previous`` and, when that was off, what was frozen
    returned to the collector (``gc.unfreeze()``), so the process's later collections see it again."""
    freeze_after_capture(previous)
    if not previous:
        gc.unfreeze()


def after_capture() -> bool:
    """After a capture (or a graph read or substituted): collect, then freeze what survives, if opted in.

    Returns whether it froze. The collection scans only objects made since the last freeze. Inside
    :func:`held` it does nothing (returns False): the holder freezes at its end.
    """
    if not _FREEZE or _HELD:
        return False
    gc.collect()
    gc.freeze()
    return True


@contextmanager
def held() -> Iterator[None]:
    """Run a block with the cyclic collector off, then freeze what it made, without collecting.

    For work known to leave no reference cycles behind: a sweep worker's group on a cached graph
    (reading the graph, costing it, evaluating its points; ``gc.collect()`` after each of the 144
    groups of the bench's 864-point sweep finds 0 unreachable objects, and
    ``tests/sweep/test_speed.py`` checks the 36 groups of the test sweep). What the block made is
    moved to the permanent generation at once, so no later collection scans it, and nothing scans
    it now: :func:`after_capture`'s collections, two per group (after the graph read and after the
    group), cost a worker about 14 ms for 72 groups (measured 2026-12-02) to find nothing. A cycle
    the block did leave would stay allocated until the process ends (a worker lives for one
    sweep). Only in processes that opted in (:func:`freeze_after_capture`); elsewhere the block
    just runs, its collector untouched.
    """
    global _HELD
    if not _FREEZE or _HELD:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    _HELD = True
    try:
        yield
    finally:
        _HELD = False
        if enabled:
            gc.enable()
        gc.freeze()
