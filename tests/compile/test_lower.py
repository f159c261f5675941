"""The eager program: one kernel per node with work, every byte through off-chip memory."""

from dfx.compile import compile_program, lower_eager
from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec


def _chain_graph() -> Graph:
    # x [4, 8] fp32 -> relu -> view (no work) -> neg -> output: two working nodes, the view between them
    x = TensorSpec((4, 8), "float32", (8, 1))
    flat = TensorSpec((32,), "float32", (1,))
    return Graph(
        name="chain",
        nodes=(
            Node("x", "placeholder", "x", outputs=(x,), input_kind="input"),
            Node(
                "relu",
                "call_function",
                "aten.relu.default",
                inputs=(Edge("x", 0),),
                outputs=(x,),
                aten_calls=(AtenCall("aten.relu.default", (x,), (), (x,)),),
            ),
            Node("view", "call_function", "aten.view.default", inputs=(Edge("relu", 0),), outputs=(flat,)),
            Node(
                "neg",
                "call_function",
                "aten.neg.default",
                inputs=(Edge("view", 0),),
                outputs=(flat,),
                aten_calls=(AtenCall("aten.neg.default", (flat,), (), (flat,)),),
            ),
            Node("output", "output", "output", inputs=(Edge("neg", 0),)),
        ),
    )


def test_eager_program_one_kernel_per_working_node_and_deps_look_through_views():
    costed = annotate(_chain_graph())
    program = lower_eager(costed, load_profile("h100"))
    working = [n.name for n in costed.nodes if n.cost.flops or n.cost.bytes]
    assert working == ["relu", "neg"]  # the view moves no bytes
    assert [k.nodes for k in program.kernels] == [(n,) for n in working]
    neg = next(k for k in program.kernels if k.nodes == ("neg",))
    relu = next(k for k in program.kernels if k.nodes == ("relu",))
    assert neg.deps == (relu.name,)  # through the zero-work view
    # eager: every node's traffic crosses HBM: relu and neg each read and write 32 fp32 = 2 * 2 * 128 B
    assert program.offchip_bytes == 512


def test_compile_without_passes_is_eager_and_documented():
    costed = annotate(_chain_graph())
    doc = compile_program(costed, load_profile("spyre"), passes=()).to_dict()
    assert doc["schema"] == "dfx.compile/1"
    assert [s["name"] for s in doc["stages"]] == ["lower"]
    assert doc["commitment"] == "static"  # Spyre's compiler fixes the schedule
    assert {"name", "nodes"} <= set(doc["kernels"][0])
