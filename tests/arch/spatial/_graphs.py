"""Small hand-built graphs for the spatial-model tests (torch-free: aten calls written by hand)."""

from __future__ import annotations

from dataclasses import replace

from dfx.costs import annotate
from dfx.costs.record import CostedGraph
from dfx.ir import AtenCall, Edge, Graph, Node, ParameterInfo, TensorSpec

DT = "bfloat16"  # 2 bytes per element


def spec(*shape: int) -> TensorSpec:
    return TensorSpec(tuple(shape), DT)


def _linear(name: str, module: str, src: str, rows: int, k: int, n: int) -> Node:
    """``y = x @ W.T + b`` as export lowers it: ``t(W)`` then ``addmm(b, x, W.T)``."""
    w, b, x, out = spec(n, k), spec(n), spec(rows, k), spec(rows, n)
    calls = (
        AtenCall("aten.t.default", (w,), (), (spec(k, n),)),
        AtenCall("aten.addmm.default", (b, x, spec(k, n)), (), (out,)),
    )
    return Node(
        name,
        "call_function",
        "aten.linear.default",
        module,
        (Edge(src),),
        (out,),
        (f"{module}.weight", f"{module}.bias"),
        calls,
    )


def _relu(name: str, src: str, rows: int, n: int) -> Node:
    x = spec(rows, n)
    return Node(
        name,
        "call_function",
        "aten.relu.default",
        "",
        (Edge(src),),
        (x,),
        (),
        (AtenCall("aten.relu.default", (x,), (), (x,)),),
    )


def mlp(weight_edges: bool = False) -> Graph:
    """x[4, 640] -> fc1 (640 -> 960) -> relu -> fc2 (960 -> 320), bf16.

    ``weight_edges``: the weights also arrive as parameter placeholders, as torch.export writes them.
    """
    params = (
        ParameterInfo("fc1.weight", spec(960, 640)),
        ParameterInfo("fc1.bias", spec(960)),
        ParameterInfo("fc2.weight", spec(320, 960)),
        ParameterInfo("fc2.bias", spec(320)),
    )
    fc1, fc2 = _linear("fc1", "fc1", "x", 4, 640, 960), _linear("fc2", "fc2", "relu", 4, 960, 320)
    state: tuple[Node, ...] = ()
    if weight_edges:
        state = tuple(
            Node(f"p_{m}_weight", "placeholder", f"p_{m}_weight", outputs=(shape,), input_kind="parameter")
            for m, shape in (("fc1", spec(960, 640)), ("fc2", spec(320, 960)))
        )
        fc1 = replace(fc1, inputs=(*fc1.inputs, Edge("p_fc1_weight")))
        fc2 = replace(fc2, inputs=(*fc2.inputs, Edge("p_fc2_weight")))
    nodes = (
        *state,
        Node("x", "placeholder", "x", outputs=(spec(4, 640),), input_kind="input"),
        fc1,
        _relu("relu", "fc1", 4, 960),
        fc2,
        Node("output", "output", "output", inputs=(Edge("fc2"),)),
    )
    return Graph(nodes, params, name="mlp")


def fork() -> Graph:
    """x[4, 640] feeds a matmul (fc1) and two relus side by side: MXM and VXM work that may overlap."""
    params = (ParameterInfo("fc1.weight", spec(960, 640)), ParameterInfo("fc1.bias", spec(960)))
    nodes = (
        Node("x", "placeholder", "x", outputs=(spec(4, 640),), input_kind="input"),
        _linear("fc1", "fc1", "x", 4, 640, 960),
        _relu("relu_a", "x", 4, 640),
        _relu("relu_b", "x", 4, 640),
    )
    return Graph(nodes, params, name="fork")


def costed(graph: Graph) -> CostedGraph:
    return annotate(graph)
