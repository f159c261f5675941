"""Ridge points per memory level and the bound of a node either side of (and at) the ridge."""

import pytest

from dfx.costs.record import Cost
from dfx.hardware import load_profile
from dfx.roofline import Bound, classify, evaluate, ridge_points


@pytest.mark.parametrize(
    ("profile_id", "dtype", "level", "expected"),
    [
        ("h100", "bfloat16", "HBM3", 295.34),  # 989.4e12 / 3.35e12 = 295.34 FLOP/B
        ("h100", "bfloat16", "L2", 179.89),  # 989.4e12 / 5.5e12
        ("h100", "float8_e4m3fn", "HBM3", 590.72),  # 1978.9e12 / 3.35e12
        ("a100", "bfloat16", "HBM2e", 153.02),  # 312e12 / 2.039e12
        ("h200", "bfloat16", "HBM3e", 206.13),  # 989.4e12 / 4.8e12
        ("tpu-v4", "bfloat16", "HBM2", 229.17),  # 275e12 / 1.2e12
        ("tpu-v5e", "bfloat16", "HBM", 240.54),  # 197e12 / 819e9
        ("tpu-v6e", "bfloat16", "HBM", 560.44),  # 918e12 / 1638e9
        ("spyre", "float16", "LPDDR5", 500.0),  # 75e12 / 150e9
        ("spyre", "float16", "LX", 4.58),  # 75e12 / 16.384e12
        ("groq", "float16", "C2C", 391.67),  # 188e12 / 480e9
        ("groq", "float16", "SRAM", 2.35),  # 188e12 / 80e12
        ("cpu", "bfloat16", "DDR5", 354.82),  # 109e12 / 307.2e9
    ],
)
def test_ridge_points(profile_id, dtype, level, expected):
    assert ridge_points(load_profile(profile_id), dtype)[level] == pytest.approx(expected, abs=0.01)


def test_levels_without_bandwidth_have_no_ridge():
    assert set(ridge_points(load_profile("a100"), "bf16")) == {"HBM2e"}  # SMEM, L2 bandwidths unpublished


def test_ridge_uses_the_fallback_peak():
    # bf16 on Spyre (fp16 only) uses the fp16 peak: same ridge
    spyre = load_profile("spyre")
    assert ridge_points(spyre, "bfloat16") == ridge_points(spyre, "float16")


def test_classify_tie_is_compute():
    # ridge = 1e12 / 1e10 = 100 FLOP/B; intensity 100 exactly
    assert classify(100_000_000, 1_000_000, 1e12, 1e10) is Bound.COMPUTE
    assert classify(99_999_999, 1_000_000, 1e12, 1e10) is Bound.MEMORY
    assert classify(0, 0, 1e12, 1e10) is Bound.NONE
    assert classify(0, 1, 1e12, 1e10) is Bound.MEMORY  # pure data movement
    assert classify(1, 0, 1e12, 1e10) is Bound.COMPUTE


@pytest.mark.parametrize(
    ("flops", "bound"),
    [
        (295_000_000, Bound.MEMORY),  # intensity 295.0 < ridge 295.34
        (296_000_000, Bound.COMPUTE),  # intensity 296.0 > ridge 295.34
    ],
)
def test_node_just_below_and_just_above_the_h100_ridge(single, flops, bound):
    costed = single(Cost(flops=flops, bytes_read=600_000, bytes_written=400_000), dtype="bfloat16")  # 1,000,000 B
    node = evaluate(costed, "h100").node("op")
    assert node.intensity == flops / 1_000_000
    assert node.bound is bound
    # compute time = flops / 989.4e12; memory time = 1e6 / 3.35e12 = 0.2985 us
    assert node.memory_time_s == pytest.approx(1e6 / 3.35e12)
    assert node.compute_time_s == pytest.approx(flops / 989.4e12)


def test_node_at_the_ridge_is_compute_bound(single, tiny):
    # tiny, run eager: 1 TFLOP/s over 10 GB/s: ridge 100; 100 MFLOP over 1 MB sits on it
    from dfx.roofline import ExecutionModel

    node = evaluate(single(Cost(100_000_000, 1_000_000, 0)), tiny(), execution_model=ExecutionModel.EAGER).node("op")
    assert node.compute_time_s == node.memory_time_s == pytest.approx(1e-4)
    assert node.bound is Bound.COMPUTE
