"""The IR: specs, nodes, graphs, JSON round trip, and the checks a Graph makes on construction."""

import pytest

from dfx.ir import AtenCall, Edge, Graph, Node, ParameterInfo, TensorSpec, normalize_dtype


def test_spec_bytes_follow_dtype():
    # PB-16: (2048, 4096) elements are 8,388,608; fp32 4 B each = 33,554,432 B; bf16 2 B = 16,777,216 B
    assert TensorSpec((2048, 4096), "float32").nbytes == 33_554_432
    assert TensorSpec((2048, 4096), "bf16").nbytes == 16_777_216
    assert TensorSpec((), "float32").numel == 1
    assert TensorSpec((3, 0), "float32").nbytes == 0


def test_dtype_aliases_and_unknown():
    assert normalize_dtype("torch.bfloat16") == "bfloat16"
    assert normalize_dtype("FP16") == "float16"
    with pytest.raises(ValueError, match="unknown dtype 'fp12'"):
        normalize_dtype("fp12")


def _chain() -> Graph:
    x = TensorSpec((4, 8), "float32")
    w = TensorSpec((8, 16), "float32")
    y = TensorSpec((4, 16), "float32")
    call = AtenCall("aten.mm.default", (x, w), (), (y,))
    return Graph(
        (
            Node("x", "placeholder", "x", outputs=(x,), input_kind="input"),
            Node("w", "placeholder", "w", outputs=(w,), input_kind="parameter"),
            Node(
                "mm",
                "call_function",
                "aten.mm.default",
                inputs=(Edge("x"), Edge("w")),
                outputs=(y,),
                params=("w",),
                aten_calls=(call,),
            ),
            Node("output", "output", "output", inputs=(Edge("mm"),)),
        ),
        (ParameterInfo("w", w),),
        name="chain",
    )


def test_json_round_trip_is_exact():
    g = _chain()
    assert Graph.from_json(g.to_json()) == g


def test_users_and_networkx_edge_bytes():
    g = _chain()
    assert g.users("x") == ("mm",)
    nxg = g.to_networkx()
    # x is 4*8 fp32 = 128 B; w is 8*16*4 = 512 B
    assert nxg.edges["x", "mm"]["bytes"] == 128
    assert nxg.edges["w", "mm"]["bytes"] == 512


def test_rejects_non_topological_order():
    spec = TensorSpec((1,), "float32")
    with pytest.raises(ValueError, match="not an earlier node"):
        Graph(
            (
                Node("a", "call_function", "f", inputs=(Edge("b"),), outputs=(spec,)),
                Node("b", "placeholder", "b", outputs=(spec,)),
            )
        )


def test_rejects_duplicates_and_unknown_opcode():
    spec = TensorSpec((1,), "float32")
    with pytest.raises(ValueError, match="duplicate node name"):
        Graph((Node("a", "placeholder", "a", outputs=(spec,)), Node("a", "placeholder", "a", outputs=(spec,))))
    with pytest.raises(ValueError, match="unknown fx opcode"):
        Node("a", "call_magic", "a")


def test_from_dict_rejects_other_documents():
    with pytest.raises(ValueError, match="not a dfx graph"):
        Graph.from_dict({"schema": "something/1", "nodes": []})


def test_empty_graph():
    g = Graph(())
    assert len(g) == 0 and g.to_networkx().number_of_nodes() == 0
    assert Graph.from_json(g.to_json()) == g


def test_a_read_spec_is_shared_between_equal_dicts_and_equals_the_constructed_one():
    data = {"shape": [2, 3], "dtype": "bf16", "stride": [3, 1]}
    spec = TensorSpec.from_dict(data)
    assert spec == TensorSpec((2, 3), "bfloat16", (3, 1)) and spec.nbytes == 2 * 3 * 2  # 6 elements x 2 B
    assert TensorSpec.from_dict(dict(data)) is spec  # one frozen instance for every equal dict read
    assert TensorSpec.from_dict({"shape": [2, 3], "dtype": "bf16"}) is not spec  # no stride: another spec
    assert TensorSpec.from_dict({"shape": [2, 3], "dtype": "bf16"}).stride is None
