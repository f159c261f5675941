"""The firing rule on N identical processing elements (PEs), under a static or a dynamic policy.

A node fires when a token has arrived on every input (all its producers have finished) and a PE is
free; it holds that PE for its duration. Transfers are free and instantaneous: a token produced at
``t`` is usable at ``t`` on any PE (no communication cost is modelled).

- **Dynamic** (:func:`run_dynamic`): a run-time ready list. Whenever PEs are free, the
  highest-priority ready node goes to the lowest-numbered free PE. All completions at one instant
  are processed before any dispatch at that instant, so the choice sees every node made ready then.
  This is a greedy list schedule: no PE idles while a node is ready.
- **Static** (:func:`plan_static` then :func:`run_static`): at compile time, nodes are taken in
  priority order and each is placed on the PE that would finish it earliest on predicted
  durations (HEFT for identical PEs, without insertion into idle gaps; ties go to the PE that became
  free latest, i.e. the smallest idle gap, then the lowest number). At run time each PE runs its
  own list in that order and waits for a node's inputs even when a later node of its list, or a
  node of another PE's list, could run.

Priority is the upward rank on *predicted* durations (:mod:`dfx.sim.priority`) for both policies;
the actual durations (predicted times jitter) only decide when things finish.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right, insort
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Sequence

from dfx.sim.dag import SimDag

__all__ = ["NodeRun", "Policy", "Schedule", "StaticPlan", "plan_static", "run_dynamic", "run_static"]


class Policy(str, Enum):
    """Who decides when and where a node runs: the compiler (static) or the run time (dynamic)."""

    STATIC = "static"
    DYNAMIC = "dynamic"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class NodeRun:
    """One node's execution: which PE, from when to when (seconds from the start of the run)."""

    name: str
    pe: int
    start_s: float
    end_s: float


@dataclass(frozen=True, eq=False)
class Schedule:
    """One run of one policy: per node (by topological index) its PE, start and end.

    Attributes
    ----------
    policy : the policy that produced it.
    pes : the number of PEs.
    start_s, end_s : per node, seconds from the start of the run.
    pe : per node, the PE (0-based) it ran on.
    """

    policy: Policy
    pes: int
    start_s: tuple[float, ...]
    end_s: tuple[float, ...]
    pe: tuple[int, ...]

    @cached_property
    def makespan_s(self) -> float:
        """Time from the first start (0) to the last end."""
        return max(self.end_s, default=0.0)

    def busy_s(self) -> list[float]:
        """Seconds each PE spent running nodes."""
        busy = [0.0] * self.pes
        for p, s, e in zip(self.pe, self.start_s, self.end_s):
            busy[p] += e - s
        return busy

    def utilization(self) -> list[float]:
        """Per PE, busy time / makespan (0 for an empty or zero-length run)."""
        span = self.makespan_s
        return [b / span if span > 0 else 0.0 for b in self.busy_s()]

    def node_runs(self, dag: SimDag) -> list[NodeRun]:
        """Every node's execution, in topological order."""
        return [NodeRun(n, p, s, e) for n, p, s, e in zip(dag.names, self.pe, self.start_s, self.end_s)]


@dataclass(frozen=True, eq=False)
class StaticPlan:
    """A compile-time schedule: the global order nodes were placed in, and each node's PE.

    ``planned`` is the schedule the compiler expects on predicted durations.
    """

    order: tuple[int, ...]
    pe: tuple[int, ...]
    planned: Schedule


def plan_static(dag: SimDag, pes: int, order: Sequence[int]) -> StaticPlan:
    """List-schedule ``dag`` at compile time on predicted durations (HEFT for identical PEs).

    Parameters
    ----------
    dag : SimDag
    pes : int
        Number of identical PEs.
    order : sequence of int
        Node indices in priority order, a topological order (:func:`~dfx.sim.priority.priority_order`).

    Notes
    -----
    The PEs are kept sorted by ``(free_at, -pe)``. A node ready at ``r`` finishes earliest on any PE
    free by ``r``; among those the rightmost (latest free, smallest gap, lowest number) is taken,
    and if none is free by ``r`` the first (earliest free). O(N log P + N P) with a tiny constant
    for the list insertions.
    """
    d = dag.duration_s
    n = len(dag)
    start, end, pe = [0.0] * n, [0.0] * n, [0] * n
    free = [(0.0, -p) for p in range(pes - 1, -1, -1)]
    preds, end_of = dag.preds, end.__getitem__
    for v in order:
        ready = max(map(end_of, preds[v]), default=0.0)  # the last input token arrives
        i = max(bisect_right(free, (ready, math.inf)) - 1, 0)
        free_at, neg_pe = free.pop(i)
        start[v] = max(free_at, ready)
        end[v] = start[v] + d[v]
        pe[v] = -neg_pe
        insort(free, (end[v], neg_pe))
    planned = Schedule(Policy.STATIC, pes, tuple(start), tuple(end), tuple(pe))
    return StaticPlan(order=tuple(order), pe=tuple(pe), planned=planned)


def run_static(dag: SimDag, plan: StaticPlan, duration_s: Sequence[float], pes: int) -> Schedule:
    """Execute a compile-time plan with actual durations: fixed order per PE, waiting on inputs.

    The plan's global order is topological and each PE's list is a subsequence of it, so one pass
    in that order sees every input and the PE's previous node finished: this is the event
    simulation, without the queue.
    """
    n = len(dag)
    start, end = [0.0] * n, [0.0] * n
    pe_free = [0.0] * pes
    preds, end_of, pe_of = dag.preds, end.__getitem__, plan.pe
    for v in plan.order:
        p = pe_of[v]
        start[v] = max(pe_free[p], max(map(end_of, preds[v]), default=0.0))
        end[v] = pe_free[p] = start[v] + duration_s[v]
    return Schedule(Policy.STATIC, pes, tuple(start), tuple(end), plan.pe)


def run_dynamic(dag: SimDag, pes: int, order: Sequence[int], duration_s: Sequence[float]) -> Schedule:
    """Discrete-event simulation of the firing rule with a run-time ready list.

    Parameters
    ----------
    dag : SimDag
    pes : int
        Number of identical PEs.
    order : sequence of int
        Node indices in priority order; a ready node's priority is its position here.
    duration_s : sequence of float
        Actual duration of each node (by topological index).

    Notes
    -----
    Two heaps: the ready list keyed by priority position, and the event queue of completions keyed
    by ``(end time, node)``; a third heap holds the free PEs. O((N + E) log N).
    """
    n = len(dag)
    position = [0] * n
    for i, v in enumerate(order):
        position[v] = i
    waiting = [len(p) for p in dag.preds]
    ready = sorted(position[v] for v in range(n) if waiting[v] == 0)
    free = list(range(pes))
    events: list[tuple[float, int, int]] = []
    start, end, pe = [0.0] * n, [0.0] * n, [0] * n
    now = 0.0
    succs = dag.succs
    push, pop = heapq.heappush, heapq.heappop
    while True:
        while free and ready:  # dispatch: highest priority ready node -> lowest numbered free PE
            v = order[pop(ready)]
            p = pop(free)
            start[v], end[v], pe[v] = now, now + duration_s[v], p
            push(events, (end[v], v, p))
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] == now:  # every completion at `now` before the next dispatch
            _, v, p = pop(events)
            push(free, p)
            for s in succs[v]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    push(ready, position[s])
    return Schedule(Policy.DYNAMIC, pes, tuple(start), tuple(end), tuple(pe))
