"""Priorities and lower bounds from predicted durations, on the simulator's DAG.

The upward rank and the priority order are :mod:`dfx.schedule.rank`'s (the compiled program's list
schedule uses the same): the longest path from a node's start to the end of the graph, its own
duration included (Topcuoglu, Hariri & Wu, IEEE TPDS 2002, eq. 5); both policies serve nodes by
decreasing rank, ties to the node earlier in topological order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from dfx.schedule import rank
from dfx.sim.dag import SimDag

__all__ = ["LowerBounds", "lower_bounds", "priority_order", "upward_rank"]


def upward_rank(dag: SimDag, duration_s: Sequence[float] | None = None) -> list[float]:
    """Longest path from each node's start to the exit, in seconds (:func:`dfx.schedule.rank.upward_rank`).

    Examples
    --------
    >>> from dfx.sim.dag import dag_from_lists, from_networkx
    >>> dag = from_networkx(dag_from_lists({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("a", "c")]))
    >>> upward_rank(dag)
    [4.0, 2.0, 3.0]
    """
    return rank.upward_rank(dag.duration_s if duration_s is None else duration_s, dag.preds)


def priority_order(dag: SimDag, rank_s: Sequence[float]) -> list[int]:
    """Node indices by decreasing rank, ties by topological position: a topological order."""
    return rank.priority_order(rank_s)


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
