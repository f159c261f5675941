"""The cache-aware timer on the MLP, against hand arithmetic on a made-up calibrated profile."""

import pytest

from dfx.analysis import capture_spec
from dfx.costs import annotate
from dfx.hardware import parse_profile
from dfx.measure.cache_model import cache_timer
from dfx.roofline import evaluate

PROFILE = {
    "id": "test-cpu", "name": "test", "vendor": "test", "kind": "cpu",
    "peak_flop_per_s": {"float32": 1e12},
    "memory": [
        {"name": "L2", "capacity_bytes": 2**20, "bandwidth_bytes_per_s": 100e9, "managed": "cache", "on_chip": True},
        {"name": "L3", "capacity_bytes": 32 * 2**20, "bandwidth_bytes_per_s": 50e9, "managed": "cache", "on_chip": True},
        {"name": "DRAM", "capacity_bytes": None, "bandwidth_bytes_per_s": 5e9, "managed": "software", "on_chip": False},
    ],
    "compute": {}, "scheduling": {"commitment": "dynamic", "description": "test"}, "memory_model": "cache", "op_overhead_s": 2e-6,
    "sources": {"peak_flop_per_s": "test", "memory": "test", "op_overhead_s": "test"},
}  # fmt: skip


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


def test_a_vector_rate_times_elementwise_flops_but_not_matmuls():
    graph, _ = capture_spec("mlp", batch=1)
    costed = annotate(graph)
    profile = parse_profile(PROFILE)
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, vector_flop_per_s=1e9))
    # relu: 512 FLOPs at 1 GFLOP/s = 0.512 us, above 4,096 B / 100 GB/s = 0.041 us; + 2 us overhead
    assert result.node("relu").time_s == pytest.approx(512 / 1e9 + 2e-6)
    assert result.node("relu").bound.value == "compute"
    # linear stays at the GEMM peak: memory-bound at L3 as before
    assert result.node("linear").time_s == pytest.approx(1_612_864 / 50e9 + 2e-6)


def test_gemm_curve_interpolates_in_log_log_and_clamps():
    from dfx.measure.cache_model import gemm_rate

    curve = [(1e6, 1e9), (1e8, 1e10)]
    assert gemm_rate(curve, 1e7, 1e12) == pytest.approx(10**9.5)  # log10 flops 7 is halfway from 6 to 8
    assert gemm_rate(curve, 1e3, 1e12) == 1e9 and gemm_rate(curve, 1e12, 1e12) == 1e10  # flat beyond the ends
    assert gemm_rate(curve, 1e12, 5e9) == 5e9  # never above the peak
    assert gemm_rate((), 1e7, 1e12) == 1e12


def test_matmuls_use_the_curve_and_others_do_not():
    graph, _ = capture_spec("mlp", batch=1)
    costed = annotate(graph)
    profile = parse_profile(PROFILE)
    # a flat curve of 1e9 FLOP/s: linear's 803,328 FLOPs take 803.3 us, above 32.26 us at L3
    result = evaluate(costed, profile, node_timer=cache_timer(costed, profile, gemm_curve=[(1e6, 1e9)]))
    assert result.node("linear").time_s == pytest.approx(803_328 / 1e9 + 2e-6)
    assert result.node("relu").time_s == pytest.approx(max(512 / 1e12, 4096 / 100e9) + 2e-6)
