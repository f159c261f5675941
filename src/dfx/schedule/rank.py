"""Upward ranks and the priority order of a list schedule: one implementation for the compiled
program's kernels (:mod:`dfx.compile.schedule`) and the simulator's DAG (:mod:`dfx.sim.priority`).

The upward rank of a node is the longest path from its start to the end of the graph, its own
duration included (Topcuoglu, Hariri & Wu, "Performance-effective and low-complexity task
scheduling for heterogeneous computing", IEEE TPDS 2002, eq. 5, with no communication cost)::

    rank(v) = d(v) + max over successors s of rank(s)      (0 when v has no successor)

Nodes are indices in a topological order (every predecessor before its node). The priority order
serves nodes by decreasing rank, ties to the earlier index: with ``d >= 0``, ``rank(u) >= rank(v)``
on every edge ``u -> v``, so the order is itself topological.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["priority_order", "upward_rank"]


def upward_rank(duration_s: Sequence[float], preds: Sequence[Sequence[int]]) -> list[float]:
    """Each node's upward rank in seconds, one pass in reverse topological order.

    ``duration_s[i]``: node ``i``'s duration (>= 0); ``preds[i]``: the indices of its predecessors,
    all below ``i``.

    Examples
    --------
    >>> upward_rank([1.0, 2.0, 3.0], [[], [0], [0]])  # a -> b, a -> c
    [4.0, 2.0, 3.0]
    """
    rank = list(duration_s)
    succ_best = [0.0] * len(rank)  # each node's largest successor rank seen so far
    for i in range(len(rank) - 1, -1, -1):  # successors come later in a topological order
        rank[i] += succ_best[i]
        r = rank[i]
        for p in preds[i]:
            if r > succ_best[p]:  # max(succ_best[p], r)
                succ_best[p] = r
    return rank


def priority_order(rank: Sequence[float]) -> list[int]:
    """Node indices by decreasing rank, ties to the earlier index: a topological order.

    >>> priority_order([4.0, 2.0, 3.0])
    [0, 2, 1]
    """
    # a stable sort of the indices (ascending) on the negated ranks (no NaN: durations are checked >= 0)
    return sorted(range(len(rank)), key=[-r for r in rank].__getitem__)
