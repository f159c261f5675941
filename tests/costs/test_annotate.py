"""annotate / coverage: node sums and categories, unknown ops reported (never a silent 0), torch-free."""

import ast
import pathlib
import warnings

import pytest

import dfx.costs
from dfx.costs import Category, Cost, Registry, UnknownOpWarning, annotate, coverage
from dfx.ir import Edge, Graph, Node

from ._helpers import call, spec

X, W, B, OUT = spec(4, 8), spec(16, 8), spec(16), spec(4, 16)
LINEAR_CALLS = (
    call("aten.t.default", W, outputs=(spec(8, 16),)),
    call("aten.addmm.default", B, X, spec(8, 16), outputs=(OUT,)),
)


def _graph(*extra_calls) -> Graph:
    return Graph(
        (
            Node("x", "placeholder", "x", outputs=(X,), input_kind="input"),
            Node(
                "linear",
                "call_function",
                "aten.linear.default",
                inputs=(Edge("x"),),
                outputs=(OUT,),
                aten_calls=LINEAR_CALLS,
            ),
            Node(
                "weird",
                "call_function",
                "aten.fft_rfft.default",
                inputs=(Edge("linear"),),
                outputs=(OUT,),
                aten_calls=extra_calls,
            ),
            Node("output", "output", "output", inputs=(Edge("weird"),)),
        )
    )


def test_node_cost_is_the_sum_of_its_calls_and_its_category_the_highest():
    cg = annotate(_graph())
    linear = cg["linear"]
    assert linear.cost == Cost(2 * 4 * 8 * 16 + 4 * 16, (16 + 32 + 128) * 4, 64 * 4)  # t() is free
    assert linear.category is Category.MATMUL  # view (t) + matmul (addmm)
    assert dict(linear.flops_by_category) == {"matmul": 1024, "elementwise": 64}
    assert [c.op for c in linear.calls] == ["aten.t.default", "aten.addmm.default"]
    assert cg["x"].category is Category.NONE and cg["x"].cost == Cost()
    assert cg["output"].category is Category.NONE
    assert cg.flops_by_category()["matmul"] == 1024
    assert cg.unknown_ops == () and coverage(cg).complete


def test_an_unknown_op_is_warned_about_reported_and_not_counted():
    unknown = call("aten.fft_rfft.default", OUT, outputs=(spec(4, 9, dtype="complex64"),))
    with pytest.warns(UnknownOpWarning, match=r"aten\.fft_rfft\.default.*3 call.*unknown, not zero") as record:
        cg = annotate(_graph(unknown, unknown, unknown))
    assert len([w for w in record if issubclass(w.category, UnknownOpWarning)]) == 1  # once per op name
    (u,) = cg.unknown_ops
    assert (u.target, u.count, u.nodes, u.reason) == ("aten.fft_rfft.default", 3, ("weird",), "no cost rule")
    assert cg["weird"].unknown_ops == ("aten.fft_rfft.default",)
    assert cg["weird"].category is Category.NONE  # nothing known about it
    cov = coverage(cg)
    assert (cov.calls, cov.costed_calls, cov.complete) == (5, 2, False)
    assert cov.fraction == pytest.approx(2 / 5)
    assert coverage(cg.graph) == cov  # the same from the bare graph, without warning


def test_reuse_takes_the_costs_of_the_very_same_nodes_and_costs_the_others():
    unknown = call("aten.fft_rfft.default", OUT, outputs=(spec(4, 9, dtype="complex64"),))
    with pytest.warns(UnknownOpWarning):
        first = annotate(_graph(unknown))
    x, linear, weird, out = first.graph.nodes
    wider = Node("linear", "call_function", "aten.linear.default", inputs=(Edge("x"),), outputs=(OUT,), aten_calls=())
    second = Graph((x, wider, weird, out))  # shares x, weird and output with the first; linear is another node
    with pytest.warns(UnknownOpWarning):  # weird met an unknown op: costed again, so reported again
        got = annotate(second, reuse=first)
    assert got["x"] is first["x"] and got["output"] is first["output"]  # the very same node: its costs taken
    assert got["linear"].cost == Cost() and got["linear"] is not first["linear"]  # another node: costed
    assert got["weird"] is not first["weird"] and got["weird"].unknown_ops == ("aten.fft_rfft.default",)
    assert got.unknown_ops == first.unknown_ops  # its unknown op is recorded as when costed alone
    with pytest.warns(UnknownOpWarning):
        assert got == annotate(second)  # every node and the totals as without reuse
    # equal but not the same object: never taken (a node is matched by identity, its costs held with it)
    copy = Graph(tuple(Node(**{f: getattr(n, f) for f in n.__dataclass_fields__}) for n in (x,)))
    assert annotate(copy, reuse=first)["x"] is not first["x"]


def test_a_failing_rule_is_reported_not_raised():
    broken = call("aten.mm.default", spec(4, 8), spec(9, 5), outputs=(spec(4, 5),))  # inner dims differ
    with pytest.warns(UnknownOpWarning, match="failed"):
        cg = annotate(_graph(broken))
    (u,) = cg.unknown_ops
    assert u.target == "aten.mm.default" and "inner dimensions" in u.reason


def test_an_empty_registry_knows_nothing():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cg = annotate(_graph(), registry=Registry())
    assert {u.target for u in cg.unknown_ops} == {"aten.t.default", "aten.addmm.default"}
    assert cg.total == Cost() and len(record) == 2


def test_empty_graph():
    cg = annotate(Graph(()))
    assert cg.total == Cost() and coverage(cg).fraction == 1.0


def test_a_saved_graph_costs_the_same_without_torch_objects():
    g = _graph()
    assert annotate(Graph.from_json(g.to_json())).total == annotate(g).total


def test_the_costs_package_never_imports_torch():
    root = pathlib.Path(dfx.costs.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "torch" or n.startswith("torch.") for n in names), f"{path.name} imports torch"


def test_public_surface():
    for name in ("annotate", "coverage", "register_cost", "Cost", "Category", "CostedGraph", "UnknownOp"):
        assert name in dfx.costs.__all__
