"""Priorities and lower bounds from predicted durations.

The upward rank of a node is the longest path from its start to the end of the graph, its own
duration included (Topcuoglu, Hariri & Wu, "Performance-effective and low-complexity task
scheduling for heterogeneous computing", IEEE TPDS 2002, eq. 5, with no communication cost):

    rank(v) = d(v) + max over successors s of rank(s)      (0 when v has no successor)

The largest rank is the critical path. Both policies serve nodes by decreasing rank; equal ranks go
to the node earlier in topological order, so the priority order is itself a topological order
(``d >= 0`` gives ``rank(u) >= rank(v)`` on every edge ``u -> v``, and a tie keeps ``u`` first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from dfx.sim.dag import SimDag

__all__ = ["LowerBounds", "lower_bounds", "priority_order", "upward_rank"]


def upward_rank(dag: SimDag, duration_s: Sequence[float] | None = None) -> list[float]:
    """Longest path from each node's start to the exit, in seconds, one pass in reverse order.

    Examples
    --------
    >>> from dfx.sim.dag import dag_from_lists, from_networkx
    >>> dag = from_networkx(dag_from_lists({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("a", "c")]))
    >>> upward_rank(dag)
    [4.0, 2.0, 3.0]
    """
    d = dag.duration_s if duration_s is None else duration_s
    rank = [0.0] * len(dag)
    rank_of, succs = rank.__getitem__, dag.succs
    for v in range(len(dag) - 1, -1, -1):
        rank[v] = d[v] + max(map(rank_of, succs[v]), default=0.0)
    return rank


def priority_order(dag: SimDag, rank: Sequence[float]) -> list[int]:
    """Node indices by decreasing rank, ties by topological position: a topological order."""
    return sorted(range(len(dag)), key=lambda v: (-rank[v], v))


@dataclass(frozen=True)
class LowerBounds:
    """No schedule on ``pes`` identical PEs beats either bound (concepts.md (a), scheduling formulas).

    Attributes
    ----------
    critical_path_s : the longest path through the DAG; nothing on it can overlap.
    work_s : total work, the sum of the durations.
    work_over_pes_s : ``work_s / pes``, every PE busy all the time.
    """

    critical_path_s: float
    work_s: float
    work_over_pes_s: float

    @property
    def bound_s(self) -> float:
        """``max(critical_path_s, work_over_pes_s)``."""
        return max(self.critical_path_s, self.work_over_pes_s)

    def graham_s(self, pes: int) -> float:
        """Graham's bound on any greedy list schedule: ``work/P + (1 - 1/P) * critical_path``.

        Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 1969; it is at
        most ``(2 - 1/P) * bound_s``.
        """
        return self.work_over_pes_s + (1.0 - 1.0 / pes) * self.critical_path_s


def lower_bounds(dag: SimDag, pes: int, rank: Sequence[float] | None = None) -> LowerBounds:
    """The two classical lower bounds on makespan for ``pes`` processing elements.

    Examples
    --------
    >>> from dfx.sim.dag import dag_from_lists, from_networkx
    >>> dag = from_networkx(dag_from_lists({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("a", "c")]))
    >>> lower_bounds(dag, pes=2)
    LowerBounds(critical_path_s=4.0, work_s=6.0, work_over_pes_s=3.0)
    """
    rank = upward_rank(dag) if rank is None else rank
    work = dag.work_s
    return LowerBounds(critical_path_s=max(rank, default=0.0), work_s=work, work_over_pes_s=work / pes)
