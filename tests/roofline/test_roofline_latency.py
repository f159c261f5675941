"""Node latency on hand-built nodes: max(compute, memory per level) + overhead, per execution model."""

import pytest

from dfx.costs.record import Cost
from dfx.hardware import load_profile
from dfx.ir import ParameterInfo, TensorSpec
from dfx.roofline import Bound, ExecutionModel, evaluate


def _gelu_fp32(build):
    # GELU over fp32 (2048, 4096): reads 2048*4096*4 = 33,554,432 B, writes the same: 67,108,864 B.
    # FLOPs: 8 per element (a made-up count; the cost rules own the real one) = 67,108,864.
    spec = TensorSpec((2048, 4096), "float32")
    n = 2048 * 4096
    return build([("x", (), (spec,), Cost(), ()), ("gelu", ("x",), (spec,), Cost(8 * n, 4 * n, 4 * n), ())])


def test_gelu_fp32_on_h100(build):
    node = evaluate(_gelu_fp32(build), "h100").node("gelu")
    assert node.bytes == 67_108_864
    assert dict(node.bytes_by_level) == {"HBM3": 67_108_864}  # eager: all of it to and from HBM
    # 67,108,864 B / 3.35e12 B/s = 20.03 us
    assert node.memory_time_s == pytest.approx(20.03e-6, abs=0.01e-6)
    # 67,108,864 FLOP / 66.9e12 FLOP/s (fp32, non-tensor) = 1.003 us
    assert node.compute_time_s == pytest.approx(1.003e-6, abs=0.001e-6)
    assert node.bound is Bound.MEMORY
    assert node.overhead_s == 1.5e-6
    assert node.time_s == pytest.approx(20.03e-6 + 1.5e-6, abs=0.01e-6)


def test_bf16_768_cubed_gemm_is_compute_bound_on_h200(build):
    # [768, 768] x [768, 768] in bf16: 2 * 768^3 = 905,969,664 FLOP; 3 * 768^2 * 2 = 3,538,944 B
    # intensity 256 FLOP/B > H200 ridge 989.4e12 / 4.8e12 = 206.1
    spec = TensorSpec((768, 768), "bfloat16")
    costed = build(
        [
            ("a", (), (spec,), Cost(), ()),
            ("b", (), (spec,), Cost(), ()),
            ("mm", ("a", "b"), (spec,), Cost(905_969_664, 2_359_296, 1_179_648), ()),
        ]
    )
    node = evaluate(costed, "h200").node("mm")
    assert node.intensity == 256.0
    assert node.bound is Bound.COMPUTE
    # 905,969,664 / 989.4e12 = 0.9157 us (+ 1.5 us overhead); memory 3,538,944 / 4.8e12 = 0.737 us
    assert node.compute_time_s == pytest.approx(0.9157e-6, abs=0.0001e-6)
    assert node.memory_time_s == pytest.approx(0.7373e-6, abs=0.0001e-6)
    assert node.time_s == pytest.approx(0.9157e-6 + 1.5e-6, abs=0.0001e-6)


def test_no_work_takes_no_time_and_no_overhead(build):
    spec = TensorSpec((4, 4), "float32")
    costed = build([("x", (), (spec,), Cost(), ()), ("view", ("x",), (spec,), Cost(), ())])
    for name in ("x", "view"):
        node = evaluate(costed, "h100").node(name)
        assert (node.bound, node.time_s, node.overhead_s) == (Bound.NONE, 0.0, 0.0)
        assert node.bound_off_chip is None and node.bound_on_chip is None


def test_data_movement_alone_is_memory_bound_and_pays_overhead(single):
    node = evaluate(single(Cost(0, 3_350_000, 0), dtype="int64"), "h100").node("op")
    # 3,350,000 B / 3.35e12 B/s = 1 us, + 1.5 us
    assert node.bound is Bound.MEMORY
    assert node.time_s == pytest.approx(2.5e-6)


def test_scratchpad_keeps_a_fitting_working_set_on_chip(build):
    # Spyre: a working set of 2 x 1 MB fp16 fits the 64 MB LX: every byte goes at LX bandwidth
    spec = TensorSpec((512, 1024), "float16")  # 1,048,576 B
    costed = build([("x", (), (spec,), Cost(), ()), ("relu", ("x",), (spec,), Cost(524_288, 1_048_576, 1_048_576), ())])
    node = evaluate(costed, "spyre").node("relu")
    assert dict(node.bytes_by_level) == {"LX": 2_097_152, "LPDDR5": 0}
    # 2,097,152 B / 16.384e12 B/s = 0.128 us; Spyre's per-op overhead is 0
    assert node.memory_time_s == pytest.approx(0.128e-6)
    assert node.time_s == node.memory_time_s


def test_scratchpad_spills_what_does_not_fit(build):
    # The fp32 GELU's working set, 67,108,864 B, overflows Spyre's 64,000,000 B LX by 3,108,864 B
    spec = TensorSpec((2048, 4096), "float32")
    n = 2048 * 4096
    costed = build([("x", (), (spec,), Cost(), ()), ("gelu", ("x",), (spec,), Cost(8 * n, 4 * n, 4 * n), ())])
    node = evaluate(costed, "spyre").node("gelu")
    assert dict(node.bytes_by_level) == {"LX": 64_000_000, "LPDDR5": 3_108_864}
    # LX: 64e6 / 16.384e12 = 3.906 us; LPDDR5: 3,108,864 / 150e9 = 20.726 us; the slower level sets it
    assert node.memory_time_s == pytest.approx(20.726e-6, abs=0.001e-6)
    assert node.bound is Bound.MEMORY


def test_parameters_that_do_not_fit_stream_from_off_chip(build):
    # A [16, 8192] x [8192, 8192] fp16 linear on Spyre: weight 134,217,728 B, activations
    # 262,144 + 262,144 B. Working set 134,742,016 B; 64,000,000 B fit; 70,742,016 B stream in.
    weight = ParameterInfo("w", TensorSpec((8192, 8192), "float16"))
    act = TensorSpec((16, 8192), "float16")
    cost = Cost(2 * 16 * 8192 * 8192, 262_144 + 134_217_728, 262_144)
    costed = build([("x", (), (act,), Cost(), ()), ("linear", ("x",), (act,), cost, ("w",))], parameters=[weight])
    node = evaluate(costed, "spyre").node("linear")
    assert dict(node.bytes_by_level) == {"LX": 64_000_000, "LPDDR5": 70_742_016}
    # LPDDR5: 70,742,016 / 150e9 = 471.6 us > compute 2,147,483,648 / 75e12 = 28.6 us
    assert node.memory_time_s == pytest.approx(471.61e-6, abs=0.01e-6)
    assert node.bound is Bound.MEMORY


def test_eager_override_on_a_scratchpad_device(build):
    spec = TensorSpec((512, 1024), "float16")
    costed = build([("x", (), (spec,), Cost(), ()), ("relu", ("x",), (spec,), Cost(524_288, 1_048_576, 1_048_576), ())])
    result = evaluate(costed, "spyre", execution_model=ExecutionModel.EAGER)
    assert result.execution_model is ExecutionModel.EAGER
    assert dict(result.node("relu").bytes_by_level) == {"LPDDR5": 2_097_152}


def test_scratchpad_device_without_a_usable_on_chip_level_runs_eager(single):
    # TPU v4's CMEM bandwidth is unpublished: every byte goes to HBM
    result = evaluate(single(Cost(1000, 1_200_000, 0)), "tpu-v4")
    assert result.execution_model is ExecutionModel.EAGER
    assert dict(result.node("op").bytes_by_level) == {"HBM2": 1_200_000}
    assert result.node("op").memory_time_s == pytest.approx(1e-6)  # 1.2e6 / 1.2e12


def test_profile_with_no_off_chip_level_keeps_everything_on_chip(single, tiny):
    profile = tiny(
        memory=[
            {
                "name": "SRAM",
                "capacity_bytes": "1 kB",
                "bandwidth_bytes_per_s": "100 GB/s",
                "managed": "software",
                "on_chip": True,
            }
        ]
    )
    node = evaluate(single(Cost(0, 1_000_000, 0)), profile).node("op")
    assert dict(node.bytes_by_level) == {"SRAM": 1_000_000}  # 1 MB through a 1 kB scratchpad, nowhere to spill
    assert node.memory_time_s == pytest.approx(1e-5)  # 1e6 / 1e11


def test_dtype_override_changes_the_peak_not_the_bytes(single):
    # an fp32 node of 66.9 GFLOP: 1 ms at H100 fp32 (66.9 TFLOP/s), 67.6 us at the bf16 peak
    costed = single(Cost(66_900_000_000, 1000, 0), dtype="float32")
    assert evaluate(costed, "h100").node("op").compute_time_s == pytest.approx(1e-3)
    node = evaluate(costed, "h100", dtype="bf16").node("op")
    assert node.peak_dtype == "bfloat16" and node.bytes == 1000
    assert node.compute_time_s == pytest.approx(66.9e9 / 989.4e12)


def test_unknown_ops_are_reported(build):
    from dfx.costs.record import Category, CostedGraph, CostedNode

    graph = build(
        [
            ("x", (), (TensorSpec((1,), "float32"),), Cost(), ()),
            ("op", ("x",), (TensorSpec((1,), "float32"),), Cost(0, 4, 4), ()),
        ]
    )
    op = graph["op"]
    costed = CostedGraph(
        graph.graph,
        (graph["x"], CostedNode(op.node, op.cost, Category.ELEMENTWISE, unknown_ops=("aten.weird.default",))),
    )
    assert evaluate(costed, "h100").to_dict()["nodes"]["op"]["unknown_ops"] == ["aten.weird.default"]


def test_same_tensor_read_twice_counts_once_in_the_working_set(build):
    from dfx.roofline import working_set_bytes

    spec = TensorSpec((256,), "float32")  # 1,024 B
    costed = build([("x", (), (spec,), Cost(), ()), ("sq", ("x", "x"), (spec,), Cost(256, 2048, 1024), ())])
    assert working_set_bytes(costed["sq"], costed.graph) == (2048, 0)  # x once + the output
    assert load_profile("spyre").on_chip_level().name == "LX"


def test_node_timing_sets_every_field_of_a_node_timing(build):
    """node_timing fills its record without NodeTiming's __init__ (speed): every field must still be
    set, and the record must equal one the constructor builds from the same values."""
    from dataclasses import fields

    from dfx.roofline import NodeTiming, node_timing

    costed = _gelu_fp32(build)
    t = node_timing(costed["gelu"], costed.graph, load_profile("h100"), ExecutionModel.EAGER)
    assert set(vars(t)) == {f.name for f in fields(NodeTiming)}
    assert t == NodeTiming(**{f.name: getattr(t, f.name) for f in fields(NodeTiming)})
    assert t.with_(time_s=1.0) == NodeTiming(
        **{**{f.name: getattr(t, f.name) for f in fields(NodeTiming)}, "time_s": 1.0}
    )
