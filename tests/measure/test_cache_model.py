"""The cache-aware timer on the MLP, against hand arithmetic on a made-up calibrated profile."""

import math

import pytest

from dfx.analysis import capture_spec
from dfx.costs import annotate
from dfx.hardware import parse_profile
from dfx.measure.cache_model import _after_gemm_streamed, cache_timer, kernel_timer
from dfx.measure.machine import (
    AfterGemmPoint,
    ColdGemmPoint,
    GemmRate,
    MachineModel,
    gemm_dims,
    overhead_kind,
    vector_family,
)
from dfx.roofline import evaluate
from dfx.targets import compile_for

PROFILE = {
    "id": "test-cpu",
    "name": "test",
    "vendor": "test",
    "kind": "cpu",
    "peak_flop_per_s": {"float32": 1e12},
    "memory": [
        {"name": "L2", "capacity_bytes": 2**20, "bandwidth_bytes_per_s": 100e9, "managed": "cache", "on_chip": True},
        {
            "name": "L3",
            "capacity_bytes": 32 * 2**20,
            "bandwidth_bytes_per_s": 50e9,
            "managed": "cache",
            "on_chip": True,
        },
        {"name": "DRAM", "capacity_bytes": None, "bandwidth_bytes_per_s": 5e9, "managed": "software", "on_chip": False},
    ],
    "compute": {},
    "scheduling": {"commitment": "dynamic", "description": "test"},
    "memory_model": "cache",
    "op_overhead_s": 2e-6,
    "sources": {"peak_flop_per_s": "test", "memory": "test", "op_overhead_s": "test"},
}


@pytest.fixture(scope="module")
def results():
    graph, _ = capture_spec("mlp", batch=1)
    costed = annotate(graph)
    profile = parse_profile(PROFILE)
    return evaluate(costed, profile), evaluate(costed, profile, node_timer=cache_timer(costed, profile))


def test_a_working_set_in_l3_streams_at_l3_bandwidth(results):
    roof, cache = results
    # linear 784 -> 512 at batch 1: reads x 784*4 = 3,136 B, W 784*512*4 = 1,605,632 B, b 2,048 B; writes 2,048 B
    # bytes = 1,612,864; working set the same (1.54 MiB > 1 MiB L2, fits 32 MiB L3)
    t = cache.node("linear")
    assert t.bytes == 1_612_864
    assert dict(t.bytes_by_level) == {"L3": 1_612_864}
    assert t.time_s == pytest.approx(1_612_864 / 50e9 + 2e-6)  # 32.26 us + 2 us; compute 0.8 us is less
    # the eager roofline charges DRAM: 1,612,864 / 5e9 = 322.6 us + 2 us
    assert roof.node("linear").time_s == pytest.approx(1_612_864 / 5e9 + 2e-6)


def test_a_small_working_set_sits_in_l2(results):
    _, cache = results
    # relu on 512 floats: reads 2,048 B, writes 2,048 B; 512 FLOPs
    t = cache.node("relu")
    assert dict(t.bytes_by_level) == {"L2": 4096}
    assert t.time_s == pytest.approx(max(512 / 1e12, 4096 / 100e9) + 2e-6)


def test_nodes_without_work_are_untouched(results):
    roof, cache = results
    assert cache.node("flatten").time_s == 0.0 == roof.node("flatten").time_s


def _mlp():
    graph, _ = capture_spec("mlp", batch=1)
    return annotate(graph), parse_profile(PROFILE)


def _kernels(costed, profile, machine) -> dict:
    """Each node's kernel in the compiled program, timed by ``machine``'s model (cache_timer, kernel_timer)."""
    result = evaluate(
        costed,
        profile,
        execution_model="compiled",
        node_timer=cache_timer(costed, profile, machine),
        kernel_timer=kernel_timer(costed, profile, machine),
        program=compile_for(costed, profile),
    )
    return {n: k for k in result.program.kernels for n in k.nodes}


def _flat_table(rate: float) -> tuple[GemmRate, ...]:
    # a 2 x 2 x 2 grid with the same rate everywhere: any GEMM runs at it
    return tuple(GemmRate(r, k, n, rate) for r in (1, 64) for k in (256, 1024) for n in (256, 1024))


FLAT_2US = ((1e-9, 2e-6), (1.0, 2e-6))  # an overhead curve of 2 us at every gap


def test_a_vector_family_rate_times_its_nodes_and_only_them():
    costed, profile = _mlp()
    # relu has no measured family: it keeps the GEMM peak and is memory-bound at L2, as without a model
    machine = MachineModel(vector_flop_per_s={"gelu_tanh": 1e9}, overhead_curve=FLAT_2US)
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    assert result.node("relu").time_s == pytest.approx(max(512 / 1e12, 4096 / 100e9) + 2e-6)
    # linear: no table, so the GEMM peak: memory-bound at L3 as before
    assert result.node("linear").time_s == pytest.approx(1_612_864 / 50e9 + 2e-6)


def test_matmuls_run_at_the_gemm_table_rate():
    costed, profile = _mlp()
    machine = MachineModel(gemm_table=_flat_table(1e9), overhead_curve=FLAT_2US, resident_bytes=10**9)
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    # linear: 2*784*512 + 512 bias = 803,328 FLOPs at 1e9 FLOP/s = 803.3 us, above 32.26 us at L3
    assert result.node("linear").time_s == pytest.approx(803_328 / 1e9 + 2e-6)
    assert dict(result.node("linear").bytes_by_level) == {"L3": 1_612_864}


def test_a_gemm_with_a_bias_takes_the_nearest_bias_point_addmm_over_mm():
    costed, profile = _mlp()
    # (1, 784, 512) is nearest (1, 512, 512): net of the tiny pair's 1 and 2 us, addmm (112 - 2) / (101 - 1) = 1.1 x
    # mm; (64, 2048, 2048), 1.5 x, is far from every linear
    bias = ((1, 8, 8, 1e-6, 2e-6), (1, 512, 512, 101e-6, 112e-6), (64, 2048, 2048, 1e-3, 1.5e-3))
    machine = MachineModel(gemm_table=_flat_table(1e9), overhead_curve=FLAT_2US, resident_bytes=10**9, gemm_bias=bias)
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    # nn.Linear with its bias: 803,328 FLOPs at 1e9 / 1.1 FLOP/s
    assert result.node("linear").time_s == pytest.approx(803_328 * 1.1 / 1e9 + 2e-6)


def test_a_model_larger_than_the_resident_bytes_reads_weights_from_dram():
    costed, profile = _mlp()
    machine = MachineModel(gemm_table=_flat_table(1e12), overhead_curve=FLAT_2US, resident_bytes=1000)
    t = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine)).node("linear")
    # weights W 784*512*4 = 1,605,632 B and b 2,048 B = 1,607,680 B from DRAM; x 3,136 B + out 2,048 B = 5,184 B in L2
    assert dict(t.bytes_by_level) == {"DRAM": 1_607_680, "L2": 5_184}
    # memory-bound: 1,607,680 / 5e9 + 5,184 / 100e9 = 321.6 us, above 803,328 / 1e12 = 0.8 us
    assert t.time_s == pytest.approx(1_607_680 / 5e9 + 5_184 / 100e9 + 2e-6)
    assert t.bound.value == "memory"


def test_gemm_table_interpolates_trilinearly_in_log_log_and_is_flat_beyond_its_edges():
    def rate(r, k, n):  # a power law: log-linear in each axis, so log-log interpolation is exact inside the grid
        return 1e8 * r**0.5 * k**0.25 * n**0.25

    table = tuple(GemmRate(r, k, n, rate(r, k, n)) for r in (1, 100) for k in (10, 100) for n in (10, 100))
    m = MachineModel(gemm_table=table)
    assert m.gemm_flop_per_s(10, 31.6, 50) == pytest.approx(rate(10, 31.6, 50))
    assert m.gemm_flop_per_s(1e6, 1, 1e6) == pytest.approx(rate(100, 10, 100))  # beyond the edges: the corner
    with pytest.raises(ValueError, match="full grid"):
        MachineModel(gemm_table=table[:7])


def test_convolutions_run_at_the_table_rate_times_the_measured_conv_factor():
    graph, _ = capture_spec("resnet-block", seq=28)
    costed, profile = annotate(graph), parse_profile(PROFILE)
    # the measured conv ran at half the table's rate at its implicit GEMM: factor 0.5
    machine = MachineModel(
        gemm_table=_flat_table(1e10), conv_points=(GemmRate(784, 576, 64, 5e9),), overhead_curve=FLAT_2US
    )
    t = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine)).node("conv2d_1")
    # 3x3 conv 64 -> 64 on 28 x 28, no bias: 2 * 784 * 576 * 64 = 57,802,752 FLOPs at 5e9 = 11.56 ms
    assert t.flops == 57_802_752
    assert t.time_s == pytest.approx(57_802_752 / 5e9 + 2e-6)


def test_attention_runs_at_the_measured_attention_rate():
    graph, _ = capture_spec("gpt2-block", seq=64)
    costed, profile = annotate(graph), parse_profile(PROFILE)
    rates = ((True, 16, 1e9), (True, 256, 1e11), (False, 64, 1.0))  # causal: log-log in S; S = 64 is halfway
    machine = MachineModel(attention_rates=rates, overhead_curve=FLAT_2US)
    t = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine)).node("scaled_dot_product_attention")
    # causal, S = 64: 10^((9 + 11) / 2) = 1e10 FLOP/s. FLOPs (PB-01): 4*12*64*64*64 = 12,582,912 matmul
    # + 49,152 scores x (scale 1 + mask 1 + softmax 5) = 344,064 -> 12,926,976
    assert t.flops == 12_926_976
    assert t.time_s == pytest.approx(12_926_976 / 1e10 + 2e-6)


def test_overheads_follow_the_time_since_the_same_kind_last_ran():
    costed, profile = _mlp()
    # curve: 1 us at <= 0.1 us since the kind ran, 50 us at >= 100 us, log-log between
    machine = MachineModel(gemm_table=_flat_table(1e9), overhead_curve=((1e-7, 1e-6), (1e-4, 50e-6)))
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    relu_work = 4096 / 100e9  # 0.041 us at L2
    # order: flatten (no work), linear, relu, linear_1, relu_1, linear_2; the graph runs again and again.
    # linear: the previous linear-kind node is linear_2 of the run before, nothing between: the hot 1 us
    assert result.node("linear").overhead_s == pytest.approx(1e-6)
    # relu: since relu_1 of the run before, linear_2 (10.25 us) and linear (803 us) ran: > 100 us -> 50 us
    assert result.node("relu").overhead_s == pytest.approx(50e-6)
    # linear_1: only relu (0.041 + 50 us) ran since linear: log-log between the two points
    gap = relu_work + 50e-6
    w = (math.log(gap) - math.log(1e-7)) / (math.log(1e-4) - math.log(1e-7))
    expected = math.exp(math.log(1e-6) + w * (math.log(50e-6) - math.log(1e-6)))  # about 33.8 us
    assert result.node("linear_1").overhead_s == pytest.approx(expected)
    assert result.node("linear_1").time_s == pytest.approx((2 * 512 * 512 + 512) / 1e9 + expected)
    # relu_1: since relu, linear_1 (525 us) ran -> 50 us; linear_2: only relu_1 ran -> the same as linear_1
    assert result.node("relu_1").overhead_s == pytest.approx(50e-6)
    assert result.node("linear_2").overhead_s == pytest.approx(expected)


def test_families_and_gemm_dims_are_read_from_the_aten_calls():
    graph, _ = capture_spec("gpt2-block", seq=64)
    costed = {c.name: c for c in annotate(graph).nodes}
    assert vector_family(costed["gelu"]) == "gelu_tanh"  # GPT-2's "gelu_new"
    assert vector_family(costed["layer_norm"]) == "layer_norm"
    assert vector_family(costed["add"]) is None
    assert gemm_dims(costed["linear"]) == (64, 768, 2304)  # addmm(b, x[64,768], W^T[768,2304])
    assert gemm_dims(costed["scaled_dot_product_attention"]) is None  # no weight operand
    graph, _ = capture_spec("resnet-block", seq=28)
    costed = {c.name: c for c in annotate(graph).nodes}
    # 3x3 conv 64 -> 64 on 28 x 28: im2col rows 28*28 = 784, k = 64*3*3 = 576, n = 64
    assert gemm_dims(costed["conv2d_1"]) == (784, 576, 64)
    assert gemm_dims(costed["conv2d"]) == (784, 256, 64)  # 1x1, 256 -> 64
    assert vector_family(costed["batch_norm"]) == "batch_norm"


def test_a_kinds_own_hot_cost_replaces_the_curves_hot_point():
    costed, profile = _mlp()
    # curve 2 us at every gap, so it adds nothing above its hot point; relu's own hot cost is 3 us
    machine = MachineModel(overhead_curve=FLAT_2US, overhead_by_kind={"relu": 3e-6})
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    assert result.node("relu").overhead_s == pytest.approx(3e-6)
    assert result.node("linear").overhead_s == pytest.approx(2e-6)  # no "linear" entry: the curve's value
    assert overhead_kind(next(n for n in costed.nodes if n.name == "linear")) == "linear"  # addmm


def test_a_cold_gemm_adds_the_measured_exposed_time_per_weight_byte():
    costed, profile = _mlp()
    # cold - hot = 4,194,304 ns over a 1024 x 1024 fp32 weight (4,194,304 B): 1 ns per weight byte, at every rows
    cold_point = (ColdGemmPoint(1, 1024, 1024, 1e-3, 1e-3 + 4_194_304e-9),)
    machine = MachineModel(
        gemm_table=_flat_table(1e12), overhead_curve=FLAT_2US, resident_bytes=1000, gemm_cold=cold_point
    )
    t = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine)).node("linear")
    # compute 803,328 / 1e12 = 0.80 us + W and b 1,607,680 B x 1 ns = 1,607.68 us; memory 321.6 us (as without it)
    assert t.compute_time_s == pytest.approx(803_328 / 1e12 + 1_607_680e-9)
    assert t.time_s == pytest.approx(803_328 / 1e12 + 1_607_680e-9 + 2e-6)
    assert t.bound.value == "compute"
    # relu has no weight: nothing added; and a model that stays in cache is not cold: nothing added either
    relu = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine)).node("relu")
    assert relu.compute_time_s == pytest.approx(512 / 1e12)
    warm = MachineModel(
        gemm_table=_flat_table(1e12), overhead_curve=FLAT_2US, resident_bytes=10**9, gemm_cold=cold_point
    )
    t = evaluate(costed, profile, node_timer=cache_timer(costed, profile, warm)).node("linear")
    assert t.compute_time_s == pytest.approx(803_328 / 1e12)


def test_exposed_time_per_byte_interpolates_in_log_rows():
    # 16 rows: 3 ms over 64 MiB (all of a 22.4 GB/s DRAM read); 256 rows: none
    m = MachineModel(
        gemm_cold=(ColdGemmPoint(16, 4096, 4096, 4e-3, 7e-3), ColdGemmPoint(256, 4096, 4096, 20e-3, 19e-3))
    )
    per_byte_16 = 3e-3 / (4096 * 4096 * 4)  # 44.7 ps per byte
    assert m.exposed_s_per_weight_byte(16) == pytest.approx(per_byte_16)
    assert m.exposed_s_per_weight_byte(64) == pytest.approx(
        per_byte_16 / 2
    )  # log 64 is halfway between log 16 and log 256
    assert m.exposed_s_per_weight_byte(1024) == 0.0  # cold faster than hot counts as 0, flat beyond
    assert m.exposed_s_per_weight_byte(1) == pytest.approx(per_byte_16)


GPT2_TIMED = (
    "layer_norm",
    "linear",
    "scaled_dot_product_attention",
    "linear_1",
    "add",
    "layer_norm_1",
    "linear_2",
    "gelu",
    "linear_3",
    "add_1",
)


def test_the_two_nodes_after_a_gemm_see_its_bytes_cyclically():
    graph, _ = capture_spec("gpt2-block", seq=64)
    costed = annotate(graph)
    order = [n for n in costed.nodes if n.name in GPT2_TIMED]
    assert tuple(n.name for n in order) == GPT2_TIMED
    # made-up bytes: each GEMM its own figure, every other node 1
    moved = {n: 1 for n in GPT2_TIMED} | {"linear": 100, "linear_1": 20, "linear_2": 300, "linear_3": 4000}
    streamed = _after_gemm_streamed(order, moved)
    # layer_norm: add_1, then linear_3 before it (the run before): linear_3's 4000
    assert streamed["layer_norm"] == 4000
    assert streamed["scaled_dot_product_attention"] == 100  # right after linear (views do no work)
    assert streamed["add"] == 20 and streamed["layer_norm_1"] == 20  # first and second after linear_1
    assert streamed["gelu"] == 300 and streamed["add_1"] == 4000
    assert streamed["linear_2"] == 0  # layer_norm_1 and add before it: no GEMM among the two


def test_a_small_op_right_after_a_gemm_pays_the_after_gemm_cost():
    graph, _ = capture_spec("gpt2-block", seq=64)
    costed, profile = annotate(graph), parse_profile(PROFILE)
    # one streamed size, far below what any GPT-2 node moves: every value is read flat beyond it.
    # 1,000 B: 20 us over hot; 5,000 B: 60 us: 10 ns per byte and 10 us fixed
    after = (AfterGemmPoint(1000, 100, 1e-6, 21e-6), AfterGemmPoint(5000, 100, 2e-6, 62e-6))
    machine = MachineModel(overhead_curve=FLAT_2US, after_gemm=after)
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    plain = evaluate(costed, profile, node_timer=cache_timer(costed, profile, MachineModel(overhead_curve=FLAT_2US)))
    add = result.node("add")
    # add: [1,64,768] + [1,64,768] reads 2 x 196,608 B and writes 196,608 B: 589,824 B, within PROFILE's 1 MiB L2
    assert dict(add.bytes_by_level) == {"L2": 589_824}
    # right after linear_1, which moved far more than 100 B: the flat value at 589,824 B
    assert add.overhead_s == pytest.approx(2e-6 + 10e-6 + 589_824 * 10e-9)  # hot 2 us + 10 us + 5,898 us
    # gelu, right after linear_2, reads 786,432 B and writes as much: 1.5 MiB, past the 1 MiB L2, so it
    # has no bytes at the closest cache and pays nothing more
    assert result.node("gelu").overhead_s == pytest.approx(plain.node("gelu").overhead_s)
    # layer_norm_1, second after linear_1: reads 196,608 B and 6,144 B of weight and bias, writes 196,608 B
    # and native_layer_norm's mean and rstd (2 x 64 x 4 = 512 B): 399,872 B at L2, the flat line's 10 us + 3,998.72 us
    assert result.node("layer_norm_1").overhead_s == pytest.approx(2e-6 + 10e-6 + 399_872 * 10e-9)
    # GEMMs never pay it
    assert result.node("linear").overhead_s == pytest.approx(plain.node("linear").overhead_s)


def test_a_convolution_takes_the_ratio_of_the_nearest_measured_convolution():
    graph, _ = capture_spec("resnet-block", seq=28)
    costed, profile = annotate(graph), parse_profile(PROFILE)
    # a 1x1 point at half the table, a 3x3 point at 0.9 of it (the table is flat at 1e10)
    points = (GemmRate(784, 256, 64, 5e9), GemmRate(784, 576, 64, 9e9))
    machine = MachineModel(gemm_table=_flat_table(1e10), conv_points=points, overhead_curve=FLAT_2US)
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    # conv2d: 1x1 256 -> 64 on 28 x 28, [784, 256] x [256, 64]: the 1x1 point itself, 2*784*256*64 = 25,690,112 FLOPs
    assert result.node("conv2d").compute_time_s == pytest.approx(25_690_112 / 5e9)
    # conv2d_1: 3x3 64 -> 64, [784, 576] x [576, 64]: the 3x3 point, 57,802,752 FLOPs at 9e9
    assert result.node("conv2d_1").compute_time_s == pytest.approx(57_802_752 / 9e9)
    # conv2d_2: 1x1 64 -> 256, [784, 64] x [64, 256]: log distance 2 (ln 4)^2 to the 1x1 point, (ln 9)^2 + (ln 4)^2
    # to the 3x3 one: the 1x1 point's 0.5; 2*784*64*256 = 25,690,112 FLOPs at 5e9
    assert result.node("conv2d_2").compute_time_s == pytest.approx(25_690_112 / 5e9)


def test_an_eager_view_costs_the_measured_view_dispatch_and_nothing_else_changes():
    costed, profile = _mlp()
    # a hot view 1.5 us; ops 3 us (add) and 4 us (linear) at every gap (the flat curve's 2 us is their hot point)
    machine = MachineModel(overhead_curve=FLAT_2US, overhead_by_kind={"add": 3e-6, "linear": 4e-6, "view": 1.5e-6})
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    plain = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    # flatten is the MLP's one view node: 1.5 us in eager, 0 otherwise (a compiled program folds it away)
    assert eager.node("flatten").time_s == pytest.approx(1.5e-6) == eager.node("flatten").overhead_s
    assert eager.node("flatten").bound.value == "none" and eager.node("flatten").flops == 0
    assert plain.node("flatten").time_s == 0.0
    # the nodes that do work are timed the same either way: linear's hot 4 us replaces the curve's 2 us
    for name in ("linear", "relu", "linear_1"):
        assert eager.node(name).time_s == pytest.approx(plain.node(name).time_s)
    assert eager.node("linear").overhead_s == pytest.approx(4e-6)
    # end to end: the plain sum plus the one view's 1.5 us
    assert eager.serial_time_s == pytest.approx(plain.serial_time_s + 1.5e-6)
    # a calibration without a view figure charges views nothing
    old = MachineModel(overhead_curve=FLAT_2US, overhead_by_kind={"add": 3e-6})
    assert (
        evaluate(costed, profile, node_timer=cache_timer(costed, profile, old, eager=True)).node("flatten").time_s == 0
    )


def test_an_eager_node_after_another_kind_pays_at_least_its_kind_in_turn_and_an_nd_linear_its_own_kind():
    costed, profile = _mlp()
    # hot: relu 1 us, 2-D linear 3 us, linear on a 3-D input 4 us, view 1.5 us; in turn: relu 2, linear_nd 5, view 2.5
    machine = MachineModel(
        overhead_curve=FLAT_2US,
        overhead_by_kind={"relu": 1e-6, "linear": 3e-6, "linear_nd": 4e-6, "view": 1.5e-6},
        overhead_mixed={"relu": 2e-6, "linear_nd": 5e-6, "view": 2.5e-6},
    )
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    plain = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    # the MLP runs flatten, linear, relu, linear_1, relu_1, linear_2: no node follows its own kind
    # (flatten follows linear_2, cyclically), so each pays its kind in turn, the larger of it and the hot figure
    assert eager.node("flatten").time_s == pytest.approx(2.5e-6)  # max(1.5, 2.5)
    for name in ("linear", "linear_1", "linear_2"):  # (1, 1, 784) and (1, 1, 512) inputs: linear_nd, max(4, 5)
        assert eager.node(name).overhead_s == pytest.approx(5e-6)
        assert plain.node(name).overhead_s == pytest.approx(3e-6)  # compiled: Inductor calls addmm on 2-D operands
    for name in ("relu", "relu_1"):  # max(1, 2)
        assert eager.node(name).overhead_s == pytest.approx(2e-6)
        assert plain.node(name).overhead_s == pytest.approx(1e-6)
    # end to end: 2.5 (the view) + 3 x (5 - 3) + 2 x (2 - 1) = 10.5 us more than the compiled-style timing
    assert eager.serial_time_s == pytest.approx(plain.serial_time_s + 10.5e-6)


def test_an_eager_view_right_after_a_gemm_pays_the_after_gemm_fixed_part():
    costed, profile = _mlp()
    # the fixed part of the line through (1,000 B, 20 us) and (5,000 B, 60 us): 10 ns per byte, 20 - 10 = 10 us,
    # at one streamed size (100 B) far below what any MLP GEMM moves: read flat beyond it
    after = (AfterGemmPoint(1000, 100, 1e-6, 21e-6), AfterGemmPoint(5000, 100, 2e-6, 62e-6))
    machine = MachineModel(overhead_curve=FLAT_2US, overhead_by_kind={"view": 1.5e-6}, after_gemm=after)
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    # flatten runs first; before it, cyclically, linear_2 (a GEMM): 1.5 us dispatch + 10 us
    assert eager.node("flatten").time_s == pytest.approx(11.5e-6)
    compiled_view = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine))
    assert compiled_view.node("flatten").time_s == 0.0


def test_a_model_that_leaves_the_cache_writes_its_eager_outputs_into_cold_blocks():
    from dfx.measure.machine import ColdWritePoint

    costed, profile = _mlp()
    # 57 us more over 1 MiB: 57e-6 / 1,048,576 s per byte
    write = (ColdWritePoint(2**20, 20e-6, 77e-6),)
    per_byte = 57e-6 / 2**20
    cold = MachineModel(overhead_curve=FLAT_2US, resident_bytes=1000, cold_write=write)
    warm = MachineModel(overhead_curve=FLAT_2US, resident_bytes=10**9, cold_write=write)
    base = MachineModel(overhead_curve=FLAT_2US, resident_bytes=1000)
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, cold, eager=True))
    plain = evaluate(costed, profile, node_timer=cache_timer(costed, profile, base, eager=True))
    # the flat curve's 2 us at every gap is also every kind's hot cost; linear writes [1, 512] fp32: 2,048 B
    # (2 us + 111 ns, above the curve's 2 us); linear_2 [1, 10]: 40 B
    assert eager.node("linear").overhead_s == pytest.approx(2e-6 + 2048 * per_byte)
    assert eager.node("linear").time_s == pytest.approx(plain.node("linear").time_s + 2048 * per_byte)
    assert eager.node("linear_2").overhead_s == pytest.approx(2e-6 + 40 * per_byte)
    # the larger of the two is kept, not the sum: a curve of 5 us at every gap stays 5 us where the write adds less
    curve_5us = ((1e-9, 2e-6), (1e-6, 5e-6), (1.0, 5e-6))
    big = MachineModel(overhead_curve=curve_5us, resident_bytes=1000, cold_write=write)
    t = evaluate(costed, profile, node_timer=cache_timer(costed, profile, big, eager=True)).node("relu")
    # relu last ran as relu_1: linear_2 and linear ran since (linear alone streams 1.6 MB at 50 GB/s, 32 us > 1 us)
    assert t.overhead_s == pytest.approx(5e-6)
    # a model that stays in the cache (footprint under resident_bytes), and compiled programs, pay nothing more
    for machine, eager_flag in ((warm, True), (cold, False)):
        other = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=eager_flag))
        again = evaluate(
            costed,
            profile,
            node_timer=cache_timer(
                costed,
                profile,
                MachineModel(overhead_curve=FLAT_2US, resident_bytes=machine.resident_bytes),
                eager=eager_flag,
            ),
        )
        assert other.node("relu_1").time_s == pytest.approx(again.node("relu_1").time_s)


def test_a_compiled_cnn_runs_its_convolutions_channels_last_and_pays_inductors_layout_copies():
    from dataclasses import replace

    graph, _ = capture_spec("resnet-block", seq=28)
    costed, profile = annotate(graph), parse_profile(PROFILE)
    nchw = MachineModel(
        gemm_table=_flat_table(1e10),
        conv_points=(GemmRate(784, 256, 64, 5e9), GemmRate(784, 576, 64, 9e9)),  # 1x1 at 0.5 of the table, 3x3 at 0.9
        overhead_curve=FLAT_2US,
    )
    # channels-last: 1x1 at 0.8 of the table, 3x3 at 1.0; Inductor's copy 20 us per 1,000,000 B moved: 2e-11 s/B
    cl = replace(
        nchw,
        conv_points_cl=(GemmRate(784, 256, 64, 8e9), GemmRate(784, 576, 64, 1e10)),
        layout_copy=((1_000_000, 2e-5),),
    )

    before, after = _kernels(costed, profile, nchw), _kernels(costed, profile, cl)
    # conv2d: 1x1 256 -> 64 on 28 x 28, 2*784*256*64 = 25,690,112 FLOPs; at 5e9 NCHW, 8e9 channels-last
    assert before["conv2d"].compute_time_s == pytest.approx(25_690_112 / 5e9)
    assert after["conv2d"].compute_time_s == pytest.approx(25_690_112 / 8e9)
    # conv2d_1: 3x3 64 -> 64, 2*784*576*64 = 57,802,752 FLOPs at 9e9, then 1e10
    assert after["conv2d_1"].compute_time_s == pytest.approx(57_802_752 / 1e10)
    assert before["conv2d_1"].compute_time_s == pytest.approx(57_802_752 / 9e9)
    # conv2d's input is the graph's input, [1, 256, 28, 28] fp32 = 802,816 B, copied into channels-last
    # (read and written): 2 * 802,816 * 2e-11 s = 32.11264 us on top of the kernel's time
    copy_s = 2 * 802_816 * 2e-11
    assert after["conv2d"].memory_time_s - before["conv2d"].memory_time_s == pytest.approx(copy_s)
    # relu_2 writes the graph's output, [1, 256, 28, 28], from conv2d_2's channels-last data: reads it across
    # (802,816 B at the copy's cost per byte, 16.05632 us); the NCHW write is its kernel's own
    assert after["relu_2"].time_s - before["relu_2"].time_s == pytest.approx(802_816 * 2e-11)
    # the batch norm between two convolutions converts nothing: its kernel is timed the same
    assert after["batch_norm_1"].time_s == pytest.approx(before["batch_norm_1"].time_s)


class _LinearRmsNorm(__import__("torch").nn.Module):
    """A linear, then an RMS norm's chain: pow, mean, add of the epsilon, rsqrt, mul, mul by its weight."""

    def __init__(self):
        import torch

        super().__init__()
        self.proj = torch.nn.Linear(64, 64, bias=False)
        self.weight = torch.nn.Parameter(torch.ones(64))

    def forward(self, x):
        y = self.proj(x)
        return self.weight * (y * (y.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt())


def _rms_chain(tokens: int):
    import torch

    from dfx.capture import capture

    graph = capture(_LinearRmsNorm(), (torch.ones(1, tokens, 64),), method="export")
    return annotate(graph), parse_profile(PROFILE)


# after a GEMM that moved at least 1,000 B: 100 us first, 40 us second, 25 us from the third on
CHAIN = ((1, 1000, 100e-6), (2, 1000, 40e-6), (3, 1000, 25e-6))


def test_tiny_elementwise_nodes_after_a_gemm_pay_the_chain_at_their_position():
    costed, profile = _rms_chain(tokens=4)
    order = [n.name for n in costed.nodes if n.category.value not in ("view", "none")]
    assert order == ["linear", "pow_1", "mean", "add", "rsqrt", "mul", "mul_1"]
    # mean has its own curve (4 us): it keeps it
    machine = MachineModel(overhead_curve=FLAT_2US, overhead_curve_by_kind={"mean": ((1e-9, 4e-6), (1.0, 4e-6))})
    chained = MachineModel(
        overhead_curve=FLAT_2US, overhead_curve_by_kind=machine.overhead_curve_by_kind, after_gemm_chain=CHAIN
    )
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, chained, eager=True))
    plain = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    # the linear moves its 64 x 64 fp32 weight (16,384 B), its input and output (2 x 4 x 64 x 4 = 2,048 B): over 1,000 B
    # pow_1, first after it: the curve's 2 us (no after_gemm table); mean: its own curve's 4 us
    assert eager.node("pow_1").overhead_s == pytest.approx(2e-6)
    assert eager.node("mean").overhead_s == pytest.approx(4e-6)
    # third to sixth after the linear, 4 x 64 = 256 elements or fewer each: the chain's third point on,
    # mul_1 too although a mul ran just before it (a tiny call pays the chain whatever ran)
    for name in ("add", "rsqrt", "mul", "mul_1"):
        assert eager.node(name).overhead_s == pytest.approx(25e-6)
        assert plain.node(name).overhead_s == pytest.approx(2e-6)
    # end to end: 4 x (25 - 2) us more
    assert eager.serial_time_s == pytest.approx(plain.serial_time_s + 92e-6)
    # compiled (not eager): a generated kernel dispatches no aten call; nothing changes
    compiled = evaluate(costed, profile, node_timer=cache_timer(costed, profile, chained))
    assert compiled.node("rsqrt").overhead_s == pytest.approx(2e-6)


def test_a_parallel_node_after_a_gemm_pays_the_chain_unless_its_kind_ran_since_and_a_cold_block_on_top():
    from dfx.measure.machine import ColdWritePoint

    costed, profile = _rms_chain(tokens=512)
    # resident 1 B: the model leaves the cache, so every eager output is written into a cold block, at
    # (2 - 1) us / 1,000 B = 1 ns per byte
    cold = {"resident_bytes": 1, "cold_write": (ColdWritePoint(1000, 1e-6, 2e-6),)}
    machine = MachineModel(overhead_curve=FLAT_2US, after_gemm_chain=CHAIN, **cold)
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    without = MachineModel(overhead_curve=FLAT_2US, **cold)
    before = evaluate(costed, profile, node_timer=cache_timer(costed, profile, without, eager=True))
    # mul and mul_1 write 512 x 64 = 32,768 fp32 elements (torch's grain: they run on every thread), 131,072 B:
    # 131.072 us of cold block. mul is the first mul since the linear (fifth after it): 25 us + 131.072;
    # mul_1 follows it: its hot 2 us + 131.072 (without the chain both pay the larger of 2 and 2 + 131.072)
    assert eager.node("mul").overhead_s == pytest.approx(25e-6 + 131.072e-6)
    assert eager.node("mul_1").overhead_s == pytest.approx(2e-6 + 131.072e-6)
    assert before.node("mul").overhead_s == pytest.approx(2e-6 + 131.072e-6)
    # mean on [1, 512, 64] -> [1, 512, 1] (512 elements; no curve of its own here), second after the
    # linear: 40 us + its 2,048 B of cold block
    assert eager.node("mean").overhead_s == pytest.approx(40e-6 + 2.048e-6)
    # after a GEMM that moved less than the chain's (the 16 KiB weight and 256 KiB of activations, under 10 MB)
    far = tuple((p, 10**7, t) for p, _, t in CHAIN)
    machine = MachineModel(overhead_curve=FLAT_2US, after_gemm_chain=far, **cold)
    small = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    assert small.node("mul").overhead_s == pytest.approx(before.node("mul").overhead_s)


def test_compiled_kernels_take_the_measured_compiled_call_costs_and_an_older_calibration_keeps_todays():
    from dataclasses import replace

    from dfx.schema.calibration import read_calibration_tables

    costed, profile = _mlp()
    old = MachineModel(
        gemm_table=_flat_table(1e10), overhead_curve=FLAT_2US, overhead_by_kind={"linear": 3e-6, "relu": 1e-6}
    )
    new = replace(old, compiled_overhead={"generated": 1.8e-6, "addmm": 5e-6, "mm": 4e-6, "first_addmm": 6.5e-6})

    before, after = _kernels(costed, profile, old), _kernels(costed, profile, new)
    # before: a generated kernel pays the cheapest tiny kind's hot cost (relu, 1 us); an extern GEMM its node's
    # calibrated overhead, the tiny linear's 3 us (the curve is flat: nothing added for the gap)
    assert before["relu"].overhead_s == pytest.approx(1e-6) and before["linear_1"].overhead_s == pytest.approx(3e-6)
    # after: the generated ReLUs 1.8 us; the linears (addmm: all three have a bias) 5 us + (3 - 3) us of the curve
    assert after["relu"].overhead_s == pytest.approx(1.8e-6) and after["relu_1"].overhead_s == pytest.approx(1.8e-6)
    assert after["linear_1"].overhead_s == pytest.approx(5e-6) and after["linear_2"].overhead_s == pytest.approx(5e-6)
    # the first linear runs the wrapper's entry too: 6.5 - 5 = 1.5 us more, 6.5 us
    assert after["linear"].overhead_s == pytest.approx(6.5e-6)
    # nothing else moves: the kernels' times differ by their overheads alone
    for name in ("linear", "relu", "linear_1", "relu_1", "linear_2"):
        assert after[name].time_s - before[name].time_s == pytest.approx(
            after[name].overhead_s - before[name].overhead_s
        )
    # a calibration written before the table (no compiled_overhead key) reads as an empty one, and predicts as before
    tables = read_calibration_tables({"overhead_by_kind": {"linear": 3e-6, "relu": 1e-6}})
    assert (
        "compiled_overhead" in tables.missing() and dict(MachineModel.from_calibration(tables).compiled_overhead) == {}
    )
    again = _kernels(
        costed, profile, replace(old, compiled_overhead=MachineModel.from_calibration(tables).compiled_overhead)
    )
    assert {n: k.time_s for n, k in again.items()} == {n: k.time_s for n, k in before.items()}


def test_a_node_charged_its_kinds_own_curve_adds_its_cold_output_block():
    from dfx.measure.machine import ColdWritePoint

    costed, profile = _rms_chain(tokens=512)
    # resident 1 B: the model leaves the cache; a cold block costs (2 - 1) us / 1,000 B = 1 ns per byte.
    # mean's own curve: 4 us at every gap, timed on 8-element calls (no output block to speak of)
    own = {"mean": ((1e-9, 4e-6), (1.0, 4e-6))}
    machine = MachineModel(
        overhead_curve=FLAT_2US,
        overhead_curve_by_kind=own,
        resident_bytes=1,
        cold_write=(ColdWritePoint(1000, 1e-6, 2e-6),),
    )
    eager = evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True))
    # mean writes [1, 512, 1] fp32: 2,048 B, 2.048 us of cold block on top of its curve's 4 us
    # (a node charged the median curve keeps the larger: mul, 131,072 B, max(2, 2 + 131.072) us)
    assert eager.node("mean").overhead_s == pytest.approx(4e-6 + 2.048e-6)
    assert eager.node("mul").overhead_s == pytest.approx(2e-6 + 131.072e-6)
