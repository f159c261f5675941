"""The simulator's input: a DAG with a predicted duration per node, held by index in topological order.

Three ways in, one representation out:

- a ``networkx.DiGraph`` whose nodes carry a duration in seconds (:func:`from_networkx`);
- node and edge lists (:func:`dag_from_lists`, which builds that ``DiGraph``);
- an analysis export document, schema ``dfx.analysis/1`` (:func:`dag_from_analysis`, likewise).

The topological order is the one closest to the order the nodes were given: Kahn's algorithm that
always takes the earliest-given ready node. For an analysed model that is the fx graph's own order.
Every tie in the simulator (equal priorities) is broken by position in this order.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Mapping

import networkx as nx

from dfx.schema.analysis import AnalysisDoc, NodeRecord, read_analysis
from dfx.schema.ids import ANALYSIS_SCHEMA, ANALYSIS_SCHEMAS_READ
from dfx.sim.errors import SimulationError

__all__ = [
    "ANALYSIS_SCHEMA",
    "SimDag",
    "analysis_record",
    "as_sim_dag",
    "dag_from_analysis",
    "dag_from_lists",
    "from_networkx",
]


@dataclass(frozen=True, eq=False)
class SimDag:
    """A DAG ready to simulate. Node ``i`` is the ``i``-th in topological order.

    Attributes
    ----------
    names : node names.
    duration_s : predicted duration of each node, seconds (finite, >= 0).
    preds, succs : producer and consumer indices of each node (no duplicates).
    output_bytes : bytes of the tensor(s) each node produces, for the live-bytes view.
    aliases_inputs : True where a node's output is a view of its inputs (0 bytes of its own), so
        its inputs stay live until its own consumers finish.
    category : the node's cost category where known (``matmul``, ``view``, ...), else ``""``.
    """

    names: tuple[str, ...]
    duration_s: tuple[float, ...]
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[int, ...], ...]
    output_bytes: tuple[float, ...]
    aliases_inputs: tuple[bool, ...]
    category: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def index(self) -> dict[str, int]:
        """Name -> position in topological order."""
        return {name: i for i, name in enumerate(self.names)}

    @property
    def edge_count(self) -> int:
        return sum(len(s) for s in self.succs)

    @property
    def work_s(self) -> float:
        """Total predicted work: the sum of the durations (the makespan on one PE)."""
        return math.fsum(self.duration_s)


def _stable_topological_order(preds: list[list[int]], succs: list[list[int]]) -> list[int]:
    """Kahn's algorithm taking the earliest-given ready node first; shorter than ``len`` on a cycle."""
    indegree = [len(p) for p in preds]
    ready = [v for v, d in enumerate(indegree) if d == 0]  # already sorted, so already a heap
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for s in succs[v]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, s)
    return order


def _check_duration(name: Any, value: Any, attr: str) -> float:
    if value is None:
        raise SimulationError(f"node {name!r} has no {attr!r} attribute; give every node a duration in seconds")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise SimulationError(f"node {name!r} has {attr}={value!r}; expected a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise SimulationError(f"node {name!r} has {attr}={value!r}; a duration must be finite and >= 0")
    return seconds


def _adjacency(
    g: nx.DiGraph, given: list[Any], edge_bytes: str
) -> tuple[list[list[int]], list[list[int]], list[float]]:
    """Producer and consumer positions of every node (in ``given`` order), and per node the
    largest ``edge_bytes`` on its out-edges (one tensor read by several consumers)."""
    pos = {name: i for i, name in enumerate(given)}
    preds: list[list[int]] = [[] for _ in given]
    succs: list[list[int]] = [[] for _ in given]
    edge_out_bytes = [0] * len(given)
    for u, w, nbytes in g.edges(data=edge_bytes, default=0):
        pu, pw = pos[u], pos[w]
        succs[pu].append(pw)
        preds[pw].append(pu)
        edge_out_bytes[pu] = max(edge_out_bytes[pu], nbytes or 0)
    return preds, succs, edge_out_bytes


def from_networkx(
    g: nx.DiGraph,
    *,
    duration: str = "duration_s",
    output_bytes: str = "output_bytes",
    edge_bytes: str = "bytes",
) -> SimDag:
    """Convert a directed acyclic graph with node durations into a :class:`SimDag`.

    Parameters
    ----------
    g : networkx.DiGraph
        Nodes carry ``duration`` (seconds). Optional: ``output_bytes`` and ``category`` and
        ``aliases_inputs`` on nodes, ``edge_bytes`` on edges. A node without ``output_bytes``
        produces the largest of its out-edges' bytes (one tensor read by several consumers).
    duration, output_bytes, edge_bytes : str
        Attribute names to read.

    Raises
    ------
    SimulationError
        If ``g`` is undirected or cyclic, or a duration is missing, negative or not finite.

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph([("a", "b")])
    >>> nx.set_node_attributes(g, {"a": 1.0, "b": 2.0}, "duration_s")
    >>> from_networkx(g).names
    ('a', 'b')
    """
    if not g.is_directed():
        raise SimulationError("the graph is undirected; the simulator needs a networkx.DiGraph")
    if g.is_multigraph():
        g = nx.DiGraph(g)  # parallel edges are one dependence
    given = list(g.nodes)
    preds, succs, edge_out_bytes = _adjacency(g, given, edge_bytes)
    order = _stable_topological_order(preds, succs)
    if len(order) < len(given):
        cycle = " -> ".join(str(u) for u, _ in nx.find_cycle(g))
        raise SimulationError(f"the graph has a cycle ({cycle}); the simulator needs a DAG")
    new = [0] * len(given)
    for i, v in enumerate(order):
        new[v] = i
    renumber = new.__getitem__
    node_attrs = [attrs for _, attrs in g.nodes(data=True)]
    names, durs, out_bytes, aliases, cats = [], [], [], [], []
    for v in order:
        name, attrs = given[v], node_attrs[v]
        names.append(str(name))
        durs.append(_check_duration(name, attrs.get(duration), duration))
        nbytes = attrs.get(output_bytes)
        out_bytes.append(edge_out_bytes[v] if nbytes is None else nbytes)
        aliases.append(bool(attrs.get("aliases_inputs", False)))
        cats.append(str(attrs.get("category", "")))
    if len(set(names)) != len(names):
        raise SimulationError("two nodes have the same name once converted to str; give nodes distinct names")
    return SimDag(
        names=tuple(names),
        duration_s=tuple(durs),
        preds=tuple(tuple(map(renumber, preds[v])) for v in order),
        succs=tuple(tuple(map(renumber, succs[v])) for v in order),
        output_bytes=tuple(out_bytes),
        aliases_inputs=tuple(aliases),
        category=tuple(cats),
    )


def dag_from_lists(
    nodes: Mapping[str, float] | Iterable[tuple[str, float]],
    edges: Iterable[tuple[str, str] | tuple[str, str, float]] = (),
) -> nx.DiGraph:
    """Build a ``DiGraph`` from node durations and edges, for textbook graphs.

    Parameters
    ----------
    nodes : mapping or iterable of (name, duration_s)
        Each node's predicted duration in seconds; the order given is the tie-break order.
    edges : iterable of (src, dst) or (src, dst, bytes)
        Data dependences; ``bytes`` is the size of the tensor that flows along the edge.

    Raises
    ------
    SimulationError
        If an edge names a node not in ``nodes``.

    Examples
    --------
    >>> g = dag_from_lists({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("a", "c", 64)])
    >>> g.nodes["c"]["duration_s"], g.edges["a", "c"]["bytes"]
    (3.0, 64)
    """
    g = nx.DiGraph()
    items = nodes.items() if isinstance(nodes, Mapping) else nodes
    for name, seconds in items:
        g.add_node(name, duration_s=seconds)
    for edge in edges:
        src, dst = edge[0], edge[1]
        for end in (src, dst):
            if end not in g:
                raise SimulationError(f"edge {src!r} -> {dst!r} names node {end!r}, which has no duration")
        g.add_edge(src, dst, **({"bytes": edge[2]} if len(edge) > 2 else {}))
    return g


def _output_bytes(node: NodeRecord) -> float:
    """Bytes a node's outputs occupy: product of each shape times its dtype's width.

    Falls back to ``bytes_written`` when a shape is symbolic or a dtype unknown.
    """
    from dfx.ir.spec import itemsize_bytes

    total = 0
    try:
        for out in node.outputs:
            total += math.prod(int(d) for d in out["shape"]) * itemsize_bytes(out["dtype"])
    except (KeyError, TypeError, ValueError):
        return float(node.bytes_written)
    return total


_SOURCE_OPS = ("placeholder", "get_attr")  # inputs and weights: they own their storage


def _aliases_inputs(node: NodeRecord) -> bool:
    """A view, or any computing node the cost model says writes no bytes: it owns no new storage.

    ``split``/``getitem``/``view``/``transpose`` and the fx ``output`` node are of this kind; their
    outputs are aliases of their inputs, so they keep those inputs live instead.
    """
    if node.op in _SOURCE_OPS:
        return False
    return node.category == "view" or node.bytes_written == 0


def analysis_record(doc: Mapping[str, Any] | AnalysisDoc) -> AnalysisDoc:
    """``doc`` read through :func:`dfx.schema.analysis.read_analysis` (a record is returned as is).

    Raises
    ------
    SimulationError
        If ``doc`` is not an analysis document at all.
    SchemaError
        If it is one but lacks a key (naming the key).
    """
    if isinstance(doc, AnalysisDoc):
        return doc
    schema = doc["schema"] if isinstance(doc, Mapping) and "schema" in doc else None
    if schema not in ANALYSIS_SCHEMAS_READ:
        raise SimulationError(f"expected an analysis document (schema {ANALYSIS_SCHEMA}), got schema {schema!r}")
    return read_analysis(doc)


def dag_from_analysis(doc: Mapping[str, Any] | AnalysisDoc, hw_id: str | None = None) -> nx.DiGraph:
    """The DAG of an analysis export document, timed on one of its hardware profiles.

    Reads only the document (schema ``dfx.analysis/1``): ``nodes`` (name, category, outputs),
    ``edges`` (src, dst, bytes) and ``hardware[hw_id].nodes[name].time_s``.

    Parameters
    ----------
    doc : mapping or AnalysisDoc
        ``Analysis.to_dict()``, a loaded ``analysis.json``, or its record.
    hw_id : str, optional
        A key of ``doc["hardware"]``; may be omitted when the document holds exactly one.

    Returns
    -------
    networkx.DiGraph
        Nodes carry ``duration_s`` (the predicted latency; 0 for a node the profile gives no time,
        listed in the graph attribute ``untimed``), ``output_bytes``, ``category`` and
        ``aliases_inputs`` (True for views and other computing nodes that write no bytes: they own
        no storage, so their inputs stay live until their own consumers finish; their
        ``output_bytes`` is 0). Edges carry ``bytes``.
        The graph attributes ``hardware`` and ``model`` name what was simulated.

    Raises
    ------
    SimulationError
        If the document is not ``dfx.analysis/1`` or ``hw_id`` is not among its profiles.
    SchemaError
        If the document lacks a key (naming it).
    """
    record = analysis_record(doc)
    profiles = record.hardware
    if hw_id is None:
        if len(profiles) != 1:
            raise SimulationError(
                f"the analysis has {len(profiles)} hardware profiles ({', '.join(profiles)}); choose one with --hw"
            )
        hw_id = next(iter(profiles))
    if hw_id not in profiles:
        raise SimulationError(f"the analysis has no timings for {hw_id!r}; it has: {', '.join(profiles) or 'none'}")
    timings = profiles[hw_id].nodes
    g = nx.DiGraph(hardware=hw_id, model=record.model_name, untimed=[])
    for node in record.nodes:
        name = node.name
        if name not in timings:
            g.graph["untimed"].append(name)
        view = _aliases_inputs(node)
        g.add_node(
            name,
            duration_s=timings[name].time_s if name in timings else 0.0,
            category=node.category,
            output_bytes=0 if view else _output_bytes(node),
            aliases_inputs=view,
        )
    for e in record.edges:
        g.add_edge(e.src, e.dst, bytes=e.bytes)
    return g


def as_sim_dag(dag: Any, hw_id: str | None = None) -> SimDag:
    """Accept a :class:`SimDag`, a ``DiGraph``, a ``(nodes, edges)`` pair or an analysis document."""
    if isinstance(dag, SimDag):
        return dag
    if isinstance(dag, nx.Graph):
        return from_networkx(dag)
    if isinstance(dag, AnalysisDoc) or (isinstance(dag, Mapping) and "schema" in dag):
        return from_networkx(dag_from_analysis(dag, hw_id))
    if isinstance(dag, tuple) and len(dag) == 2:
        return from_networkx(dag_from_lists(*dag))
    raise SimulationError(
        f"cannot simulate a {type(dag).__name__}; pass a networkx.DiGraph, (nodes, edges) or an analysis document"
    )
