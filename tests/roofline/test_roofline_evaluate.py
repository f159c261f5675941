"""evaluate(): one costed graph on one profile, and the exact layout of HardwareResult.to_dict()."""

import json

import pytest

from dfx.costs.record import Cost
from dfx.hardware import HardwareProfileError, load_profile
from dfx.ir import TensorSpec
from dfx.roofline import Bound, BoundShift, HardwareResult, evaluate

EXPORT_KEYS = {
    "makespan_s",
    "program",
    "arch_model",
    "bandwidth_bytes_per_s",
    "peak_flop_per_s",
    "execution_model",
    "off_chip_level",
    "on_chip_level",
    "ridge_dtype",
    "ridge_flop_per_byte",
    "nodes",
    "serial_time_s",
    "critical_path",
    "partition_shift",
    "parallelism",
    "bound_counts",
    "dtype_fallbacks",
}
NODE_KEYS = {
    "bound",
    "time_s",
    "compute_time_s",
    "memory_time_s",
    "overhead_s",
    "flops",
    "bytes",
    "intensity_flop_per_byte",
    "dtype",
    "peak_dtype",
    "bytes_by_level",
    "bound_off_chip",
    "bound_on_chip",
}

F16 = TensorSpec((1,), "float16")


def _spyre_gemm(build):
    # fp16 [512, 768] x [768, 768]: 2 * 512 * 768 * 768 = 603,979,776 FLOP;
    # (512*768 + 768*768 + 512*768) * 2 = 2,752,512 B; intensity 219.4 FLOP/B.
    # Spyre fp16 ridges: LPDDR5 75e12 / 150e9 = 500 (memory-bound off chip),
    # LX 75e12 / 16.384e12 = 4.58 (compute-bound against the scratchpad).
    a, b = TensorSpec((512, 768), "float16"), TensorSpec((768, 768), "float16")
    return build(
        [
            ("a", (), (a,), Cost(), ()),
            ("b", (), (b,), Cost(), ()),
            ("mm", ("a", "b"), (a,), Cost(603_979_776, 1_966_080, 786_432), ()),
            ("relu", ("mm",), (a,), Cost(393_216, 786_432, 786_432), ()),  # intensity 0.25: memory-bound everywhere
        ]
    )


def test_spyre_partition_shift(build):
    result = evaluate(_spyre_gemm(build), "spyre")
    mm = result.node("mm")
    assert mm.intensity == pytest.approx(219.43, abs=0.01)
    assert (mm.bound_off_chip, mm.bound_on_chip) == (Bound.MEMORY, Bound.COMPUTE)
    assert result.partition_shift == (BoundShift("mm", Bound.MEMORY, Bound.COMPUTE),)
    assert result.to_dict()["partition_shift"] == [{"node": "mm", "from": "memory", "to": "compute"}]
    # Under Spyre's scratchpad model the 2.75 MB working set fits the 64 MB LX: compute-bound
    assert mm.bound is Bound.COMPUTE
    assert mm.time_s == pytest.approx(603_979_776 / 75e12)  # 8.05 us, no overhead


def test_no_partition_shift_without_an_on_chip_level(build):
    assert evaluate(_spyre_gemm(build), "a100").partition_shift == ()  # A100 L2 bandwidth unpublished


def test_to_dict_layout(build):
    out = evaluate(_spyre_gemm(build), "spyre").to_dict()
    json.dumps(out)  # plain JSON
    assert set(out) == EXPORT_KEYS
    assert out["execution_model"] == "scratchpad"
    assert (out["off_chip_level"], out["on_chip_level"]) == ("LPDDR5", "LX")
    assert out["ridge_dtype"] == "float16"
    assert out["ridge_flop_per_byte"] == pytest.approx({"LX": 4.57763671875, "LPDDR5": 500.0})
    # the roofs behind those ridges: 75 TFLOP/s fp16 over 150 GB/s = 500; over 16.384 TB/s = 4.578
    assert out["peak_flop_per_s"] == pytest.approx(75e12)
    assert out["bandwidth_bytes_per_s"] == pytest.approx({"LX": 16.384e12, "LPDDR5": 150e9})
    assert list(out["nodes"]) == ["a", "b", "mm", "relu"]  # graph order
    assert all(set(n) == NODE_KEYS for n in out["nodes"].values())
    assert out["bound_counts"] == {"compute": 1, "memory": 1, "none": 2}
    assert set(out["critical_path"]) == {"time_s", "nodes"}
    assert set(out["parallelism"]) == {"work_s", "span_s", "parallelism"}
    assert out["dtype_fallbacks"] == {}
    assert out["arch_model"] is None  # no architecture model was passed


def test_node_timer_retimes_and_extras_are_exported(build):
    # An architecture model that doubles the matmul's time and adds one export field.
    import dataclasses

    def timer(costed_node, timing):
        if costed_node.name != "mm":
            return timing
        return dataclasses.replace(timing, time_s=2 * timing.time_s)

    costed = _spyre_gemm(build)
    plain = evaluate(costed, "spyre")
    timed = evaluate(costed, "spyre", node_timer=timer, arch_model="doubler", extras={"chips_needed": 3})
    assert timed.node("mm").time_s == 2 * plain.node("mm").time_s
    assert timed.node("relu").time_s == plain.node("relu").time_s
    out = timed.to_dict()
    assert out["arch_model"] == "doubler" and out["chips_needed"] == 3
    assert out["serial_time_s"] == pytest.approx(plain.serial_time_s + plain.node("mm").time_s)


def test_serial_and_critical_path_of_a_chain(build, tiny):
    # x -> n1 -> n2 -> n3 on the tiny device run eager (10 GB/s, 1 us overhead):
    # each node moves 10,000 B = 1 us, + 1 us overhead = 2 us; the chain is the critical path.
    from dfx.roofline import ExecutionModel

    costed = build(
        [("x", (), (F16,), Cost(), ())]
        + [(f"n{i}", (f"n{i - 1}" if i > 1 else "x",), (F16,), Cost(0, 10_000, 0), ()) for i in (1, 2, 3)]
    )
    result = evaluate(costed, tiny(memory_model="cache"), dtype="bf16")
    assert result.execution_model is ExecutionModel.EAGER
    assert result.serial_time_s == pytest.approx(6e-6)
    assert result.critical_path.time_s == pytest.approx(result.serial_time_s)
    assert result.critical_path.nodes == ("x", "n1", "n2", "n3")
    assert result.parallelism.parallelism == pytest.approx(1.0)


def test_diamond_and_fork_join(build):
    # On H100 (eager, 3.35 TB/s, 1.5 us overhead) a node moving k * 3,350,000 B takes k us + 1.5 us.
    def node(name, inputs, k):
        return (name, inputs, (F16,), Cost(0, k * 3_350_000, 0), ())

    diamond = build([node("a", (), 1), node("b", ("a",), 2), node("c", ("a",), 3), node("d", ("b", "c"), 4)])
    result = evaluate(diamond, "h100")
    # times 2.5, 3.5, 4.5, 5.5 us: path a-c-d = 12.5 us; serial 16 us
    assert result.critical_path.nodes == ("a", "c", "d")
    assert result.critical_path.time_s == pytest.approx(12.5e-6)
    assert result.serial_time_s == pytest.approx(16e-6)
    assert result.parallelism.parallelism == pytest.approx(16 / 12.5)

    fork = build(
        [node("s", (), 1)] + [node(f"p{k}", ("s",), k) for k in (2, 5, 3, 4)] + [node("j", ("p2", "p5", "p3", "p4"), 1)]
    )
    result = evaluate(fork, "h100")
    # s 2.5, branches 3.5 / 6.5 / 4.5 / 5.5, j 2.5 us: path s-p5-j = 11.5 us; serial 25 us
    assert result.critical_path.nodes == ("s", "p5", "j")
    assert result.critical_path.time_s == pytest.approx(11.5e-6)
    assert result.serial_time_s == pytest.approx(25e-6)
    assert result.parallelism.work_s == result.serial_time_s
    assert result.parallelism.span_s == result.critical_path.time_s


def test_empty_graph(build):
    result = evaluate(build([]), "h100")
    assert isinstance(result, HardwareResult)
    out = result.to_dict()
    assert out["nodes"] == {} and out["serial_time_s"] == 0.0
    assert out["critical_path"] == {"time_s": 0.0, "nodes": []}
    assert out["parallelism"] == {"work_s": 0.0, "span_s": 0.0, "parallelism": 1.0}
    assert out["partition_shift"] == []
    assert out["bound_counts"] == {"compute": 0, "memory": 0, "none": 0}
    assert out["ridge_dtype"] == "float32"  # nothing to read a dtype from


def test_graph_of_zero_work_nodes(build):
    result = evaluate(build([("x", (), (F16,), Cost(), ()), ("v", ("x",), (F16,), Cost(), ())]), "spyre")
    assert result.serial_time_s == 0.0 and result.critical_path.time_s == 0.0
    assert result.parallelism.parallelism == 1.0
    assert result.ridge_dtype == "float16"  # the commonest dtype when no node has FLOPs


def test_dtype_fallbacks_are_reported(single):
    result = evaluate(single(Cost(1000, 100, 0), dtype="bfloat16"), "wse3")
    assert result.node("op").peak_dtype == "float16"
    assert dict(result.dtype_fallbacks) == {"bfloat16": "float16"}
    assert result.to_dict()["dtype_fallbacks"] == {"bfloat16": "float16"}


def test_ridge_dtype_is_the_dtype_with_most_flops(build):
    costed = build(
        [
            ("x", (), (TensorSpec((1,), "float32"),), Cost(), ()),
            ("a", ("x",), (TensorSpec((1,), "float32"),), Cost(10, 8, 0), ()),
            ("b", ("x",), (TensorSpec((1,), "bfloat16"),), Cost(1000, 8, 0), ()),
        ]
    )
    assert evaluate(costed, "h100").ridge_dtype == "bfloat16"
    assert evaluate(costed, "h100", dtype="fp32").ridge_dtype == "float32"


def test_unknown_dtype_override(single):
    with pytest.raises(HardwareProfileError, match="unknown dtype 'fp33'"):
        evaluate(single(Cost(1, 1, 1)), "h100", dtype="fp33")


def test_profile_by_id_alias_or_object(single):
    costed = single(Cost(1000, 1000, 0))
    assert evaluate(costed, "nvidia-h100-sxm").to_dict() == evaluate(costed, load_profile("h100")).to_dict()
    with pytest.raises(HardwareProfileError, match="did you mean"):
        evaluate(costed, "h1000")


@pytest.mark.parametrize(
    "profile_id", ["h100", "a100", "h200", "tpu-v4", "tpu-v5e", "tpu-v6e", "groq", "wse2", "wse3", "spyre", "cpu"]
)
def test_every_profile_evaluates(build, profile_id):
    out = evaluate(_spyre_gemm(build), profile_id).to_dict()
    json.dumps(out)
    assert out["nodes"]["mm"]["time_s"] > 0 and out["critical_path"]["nodes"][-1] == "relu"


def test_a_parameter_edge_counts_once_in_the_working_set():
    # torch.export passes a weight along an edge from its placeholder and names it in node.params.
    # x: fp32 (4, 8) = 128 B; w: fp32 (8, 16) = 512 B; y: fp32 (4, 16) = 256 B.
    # Working set: activations 128 + 256 = 384 B, parameters 512 B (not 384 + 512 + 512).
    from dfx.costs import annotate
    from dfx.ir import AtenCall, Edge, Graph, Node, ParameterInfo, TensorSpec
    from dfx.roofline.execution import working_set_bytes

    x, w, y = TensorSpec((4, 8), "float32"), TensorSpec((8, 16), "float32"), TensorSpec((4, 16), "float32")
    graph = Graph(
        (
            Node("x", "placeholder", "x", outputs=(x,), input_kind="input"),
            Node("p_w", "placeholder", "p_w", outputs=(w,), input_kind="parameter"),
            Node(
                "mm",
                "call_function",
                "aten.mm.default",
                inputs=(Edge("x"), Edge("p_w")),
                outputs=(y,),
                params=("w",),
                aten_calls=(AtenCall("aten.mm.default", (x, w), (), (y,)),),
            ),
        ),
        (ParameterInfo("w", w),),
    )
    costed = annotate(graph)
    assert working_set_bytes(costed["mm"], graph) == (384, 512)
