"""Critical path, serial time and work/span parallelism of a node-weighted DAG.

The functions take the graph first, networkx style: a :class:`dfx.ir.Graph` or a networkx
``DiGraph``. Durations live on the *nodes* (a node runs for some seconds), whereas networkx's
``dag_longest_path`` weights *edges*; so the longest path here is our own dynamic programme over a
topological order: ``finish(v) = duration(v) + max(finish(u) for u in predecessors(v))``.

``weight`` names where a node's duration comes from:

- a string: the node attribute of that name on a networkx graph (default ``"time_s"``);
- a mapping: node -> seconds;
- a callable: node -> seconds.

A dfx ``Graph`` carries no durations, so it needs a mapping or a callable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping

from dfx.ir import Graph

if TYPE_CHECKING:  # networkx is imported only when a networkx graph is passed: importing it costs about
    import networkx as nx  # 0.1 s, paid by every sweep worker that times a program on a dfx Graph

__all__ = ["CriticalPath", "Parallelism", "critical_path", "parallelism", "serial_time"]

Weight = str | Mapping[Any, float] | Callable[[Any], float]


@dataclass(frozen=True)
class CriticalPath:
    """The longest duration-weighted path: its total time and its nodes, source to sink."""

    time_s: float
    nodes: tuple[Hashable, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"time_s": self.time_s, "nodes": list(self.nodes)}


@dataclass(frozen=True)
class Parallelism:
    """Work (the serial time), span (the critical-path time) and their ratio.

    ``parallelism = work_s / span_s``: how many streams could be kept busy on average with
    unlimited resources. By convention it is ``1.0`` when the span is 0 (no timed work at all).
    """

    work_s: float
    span_s: float
    parallelism: float

    def to_dict(self) -> dict[str, float]:
        return {"work_s": self.work_s, "span_s": self.span_s, "parallelism": self.parallelism}


def _topology(graph: Graph | nx.DiGraph) -> tuple[list[Hashable], Callable[[Hashable], list[Hashable]]]:
    """Nodes in a topological order, and each node's distinct predecessors."""
    if isinstance(graph, Graph):
        preds = {n.name: list(dict.fromkeys(e.src for e in n.inputs)) for n in graph.nodes}
        return [n.name for n in graph.nodes], preds.__getitem__
    import networkx as nx

    if isinstance(graph, nx.Graph):
        if not graph.is_directed():
            raise nx.NetworkXNotImplemented("not implemented for undirected type")
        order = list(nx.topological_sort(graph))  # raises NetworkXUnfeasible on a cycle
        return order, lambda v: list(graph.predecessors(v))
    raise TypeError(f"expected a dfx Graph or a networkx DiGraph, got {type(graph).__name__}")


def _durations(
    graph: Graph | nx.DiGraph, order: list[Hashable], weight: Weight, default_weight: float | None
) -> dict[Hashable, float]:
    if isinstance(weight, str):
        if isinstance(graph, Graph):
            raise TypeError(
                "a dfx Graph has no node attributes; pass weight as a mapping or a callable (node name -> seconds)"
            )
        attrs = graph.nodes

        def lookup(v: Hashable) -> Any:
            return attrs[v].get(weight, default_weight)
    elif isinstance(weight, Mapping):

        def lookup(v: Hashable) -> Any:
            return weight.get(v, default_weight)
    elif callable(weight):
        lookup = weight
    else:
        raise TypeError(f"weight must be an attribute name, a mapping or a callable, got {type(weight).__name__}")
    out: dict[Hashable, float] = {}
    for v in order:
        value = lookup(v)
        if value is None:
            raise ValueError(f"node {v!r} has no duration ({weight!r}); give every node one, or pass default_weight")
        if not value >= 0:  # also rejects NaN
            raise ValueError(f"node {v!r} has duration {value!r}; durations must be >= 0 seconds")
        out[v] = float(value)
    return out


def critical_path(
    graph: Graph | nx.DiGraph, weight: Weight = "time_s", *, default_weight: float | None = None
) -> CriticalPath:
    """The longest path through the DAG, weighting each node by its duration.

    Parameters
    ----------
    graph : dfx Graph or networkx DiGraph
        A DAG.
    weight : str, mapping or callable, default "time_s"
        Where each node's duration (seconds, >= 0) comes from; see the module docstring.
    default_weight : float, optional
        Duration of a node without one; by default a missing duration is an error.

    Returns
    -------
    CriticalPath
        ``time_s``, the sum of the path's durations, and ``nodes``, source to sink. Among equally
        long paths the one ending latest in topological order is chosen, and at each step the
        earliest predecessor, so the result is deterministic. An empty graph gives ``(0.0, ())``.

    Raises
    ------
    networkx.NetworkXUnfeasible
        If the graph has a cycle.
    networkx.NetworkXNotImplemented
        If the graph is undirected.
    ValueError
        If a node has no duration (and no default) or a negative one.

    Examples
    --------
    A diamond ``a -> {b, c} -> d``: the path through the slower branch ``c`` sets the time.

    >>> import networkx as nx
    >>> g = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> nx.set_node_attributes(g, {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, "time_s")
    >>> critical_path(g)
    CriticalPath(time_s=8.0, nodes=('a', 'c', 'd'))

    See also
    --------
    serial_time, parallelism, networkx.dag_longest_path (which weights edges, not nodes)
    """
    order, predecessors = _topology(graph)
    duration = _durations(graph, order, weight, default_weight)
    finish: dict[Hashable, float] = {}
    via: dict[Hashable, Hashable | None] = {}
    for v in order:
        best = None
        for u in predecessors(v):
            if best is None or finish[u] > finish[best]:
                best = u
        finish[v] = duration[v] + (finish[best] if best is not None else 0.0)
        via[v] = best
    if not order:
        return CriticalPath(0.0, ())
    end = order[0]
    for v in order:
        if finish[v] >= finish[end]:
            end = v
    path = [end]
    while via[path[-1]] is not None:
        path.append(via[path[-1]])
    return CriticalPath(finish[end], tuple(reversed(path)))


def serial_time(graph: Graph | nx.DiGraph, weight: Weight = "time_s", *, default_weight: float | None = None) -> float:
    """The time to run every node one after another on one stream: the sum of the durations.

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph([("a", "b")])
    >>> serial_time(g, {"a": 1.5, "b": 2.5})
    4.0
    """
    order, _ = _topology(graph)
    return sum(_durations(graph, order, weight, default_weight).values(), 0.0)


def parallelism(
    graph: Graph | nx.DiGraph, weight: Weight = "time_s", *, default_weight: float | None = None
) -> Parallelism:
    """Work (serial time), span (critical-path time) and the available parallelism, work / span.

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph([("a", "b"), ("a", "c")])
    >>> parallelism(g, {"a": 1.0, "b": 2.0, "c": 2.0})
    Parallelism(work_s=5.0, span_s=3.0, parallelism=1.6666666666666667)
    """
    work = serial_time(graph, weight, default_weight=default_weight)
    span = critical_path(graph, weight, default_weight=default_weight).time_s
    return Parallelism(work, span, work / span if span > 0 else 1.0)
