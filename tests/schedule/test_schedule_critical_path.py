"""Critical path, serial time and parallelism of node-weighted DAGs, with hand-derived values."""

import random

import networkx as nx
import pytest

from dfx.ir import Edge, Graph, Node, TensorSpec
from dfx.schedule import CriticalPath, Parallelism, critical_path, parallelism, serial_time


def _digraph(edges, times, attr="time_s"):
    g = nx.DiGraph()
    g.add_nodes_from(times)
    g.add_edges_from(edges)
    nx.set_node_attributes(g, times, attr)
    return g


def _dfx_graph(edges, names):
    """A dfx Graph with the given edges (names in topological order)."""
    spec = TensorSpec((1,), "float32")
    preds = {n: [u for u, v in edges if v == n] for n in names}
    return Graph(
        tuple(
            Node(
                n,
                "call_function" if preds[n] else "placeholder",
                n,
                inputs=tuple(Edge(u) for u in preds[n]),
                outputs=(spec,),
            )
            for n in names
        )
    )


CHAIN = ([("a", "b"), ("b", "c"), ("c", "d")], {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
DIAMOND = ([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
FORK_JOIN = (
    [("s", p) for p in ("p1", "p2", "p3", "p4")] + [(p, "j") for p in ("p1", "p2", "p3", "p4")],
    {"s": 1.0, "p1": 2.0, "p2": 5.0, "p3": 3.0, "p4": 4.0, "j": 1.0},
)


def test_chain_critical_path_is_the_serial_time():
    g = _digraph(*CHAIN)
    # 1 + 2 + 3 + 4 = 10, one path through every node
    assert critical_path(g) == CriticalPath(10.0, ("a", "b", "c", "d"))
    assert serial_time(g) == 10.0
    assert parallelism(g) == Parallelism(10.0, 10.0, 1.0)


def test_diamond():
    g = _digraph(*DIAMOND)
    # a-b-d = 1 + 2 + 4 = 7; a-c-d = 1 + 3 + 4 = 8
    assert critical_path(g) == CriticalPath(8.0, ("a", "c", "d"))
    assert serial_time(g) == 10.0
    assert parallelism(g).parallelism == pytest.approx(10 / 8)  # 1.25


def test_fork_join():
    g = _digraph(*FORK_JOIN)
    # s + max(2, 5, 3, 4) + j = 1 + 5 + 1 = 7; serial 1 + 2 + 5 + 3 + 4 + 1 = 16
    assert critical_path(g) == CriticalPath(7.0, ("s", "p2", "j"))
    assert serial_time(g) == 16.0
    assert parallelism(g).parallelism == pytest.approx(16 / 7)


def test_nodes_are_weighted_not_edges():
    # a -> b -> c -> d is the longest path in hops (and in networkx's edge weights), but
    # a -> e is the longest in time: 1 + 10 = 11 against 1 + 1 + 1 + 1 = 4
    g = _digraph([("a", "b"), ("b", "c"), ("c", "d"), ("a", "e")], {"a": 1, "b": 1, "c": 1, "d": 1, "e": 10})
    assert nx.dag_longest_path(g) == ["a", "b", "c", "d"]
    assert critical_path(g) == CriticalPath(11.0, ("a", "e"))


def test_dfx_graph_with_a_mapping_or_a_callable():
    edges, times = DIAMOND
    graph = _dfx_graph(edges, list(times))
    assert critical_path(graph, times) == CriticalPath(8.0, ("a", "c", "d"))
    assert critical_path(graph, times.__getitem__) == CriticalPath(8.0, ("a", "c", "d"))
    assert serial_time(graph, times) == 10.0
    assert parallelism(graph, times).parallelism == pytest.approx(1.25)


def test_dfx_graph_needs_durations_from_outside():
    graph = _dfx_graph(*[CHAIN[0], list(CHAIN[1])])
    with pytest.raises(TypeError, match="mapping or a callable"):
        critical_path(graph)


def test_other_attribute_name_and_multidigraph():
    edges, times = DIAMOND
    g = nx.MultiDiGraph(_digraph(edges, times, attr="latency"))
    g.add_edge("a", "b")  # a parallel edge changes nothing
    assert critical_path(g, weight="latency") == CriticalPath(8.0, ("a", "c", "d"))


@pytest.mark.parametrize("graph", [nx.DiGraph(), Graph(())])
def test_empty_graph(graph):
    assert critical_path(graph, {}) == CriticalPath(0.0, ())
    assert serial_time(graph, {}) == 0.0
    assert parallelism(graph, {}) == Parallelism(0.0, 0.0, 1.0)


def test_single_node_and_zero_durations():
    assert critical_path(_digraph([], {"x": 2.5})) == CriticalPath(2.5, ("x",))
    # all zero: the path runs to the last node in topological order, time 0
    assert critical_path(_digraph([("x", "y")], {"x": 0, "y": 0})) == CriticalPath(0.0, ("x", "y"))
    assert parallelism(_digraph([("x", "y")], {"x": 0, "y": 0})).parallelism == 1.0


def test_ties_are_broken_deterministically():
    # two equal branches: the earlier predecessor (b) is taken
    g = _digraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], {"a": 1, "b": 2, "c": 2, "d": 1})
    assert critical_path(g) == CriticalPath(4.0, ("a", "b", "d"))


def test_disconnected_components():
    g = _digraph([("a", "b"), ("c", "d")], {"a": 1, "b": 1, "c": 3, "d": 0.5})
    assert critical_path(g) == CriticalPath(3.5, ("c", "d"))
    assert parallelism(g).parallelism == pytest.approx(5.5 / 3.5)


def test_cycle_raises():
    g = _digraph([("a", "b"), ("b", "a")], {"a": 1, "b": 1})
    with pytest.raises(nx.NetworkXUnfeasible):
        critical_path(g)


def test_undirected_raises():
    with pytest.raises(nx.NetworkXNotImplemented):
        critical_path(nx.Graph([("a", "b")]), default_weight=1.0)


def test_missing_duration_names_the_node():
    g = _digraph([("a", "b")], {"a": 1.0})  # b has no time_s
    with pytest.raises(ValueError, match="node 'b' has no duration"):
        critical_path(g)
    assert critical_path(g, default_weight=0.5) == CriticalPath(1.5, ("a", "b"))


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_negative_or_nan_duration(bad):
    with pytest.raises(ValueError, match="durations must be >= 0"):
        critical_path(_digraph([("a", "b")], {"a": 1.0, "b": bad}))


def test_not_a_graph():
    with pytest.raises(TypeError, match="networkx DiGraph"):
        critical_path([("a", "b")])


def test_matches_networkx_on_random_dags():
    # Reference: move each node's duration onto its in-edges from a super-source, then use
    # networkx's edge-weighted dag_longest_path_length.
    rng = random.Random(0)
    for _ in range(50):
        n = rng.randint(1, 12)
        times = {i: float(rng.randint(0, 9)) for i in range(n)}
        edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.3]
        g = _digraph(edges, times)
        ref = nx.DiGraph()
        ref.add_edges_from(("src", v, {"w": times[v]}) for v in range(n))
        ref.add_edges_from((u, v, {"w": times[v]}) for u, v in edges)
        result = critical_path(g)
        assert result.time_s == nx.dag_longest_path_length(ref, weight="w")
        assert sum(times[v] for v in result.nodes) == result.time_s
        assert all(g.has_edge(u, v) for u, v in zip(result.nodes, result.nodes[1:]))
