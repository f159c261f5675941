"""A GEMM split over the chips of a pod, with the ring collective that gathers the result."""

from __future__ import annotations

import pytest

from dfx.arch.systolic import MxuSpec, ShardAxis, sharded_gemm
from dfx.errors import DfxError

SPEC = MxuSpec(units=1, rows=128, cols=128, clock_hz=1e9, clock_source="test")


def test_split_rows_then_all_gather():
    s = sharded_gemm(1024, 128, 128, chips=4, hw=SPEC, ici_bandwidth_bytes_per_s=1e9, word_bytes=2)
    # each chip: WS [256, 128] @ [128, 128]: 2*128 + 128 + 256 - 2 = 638 cycles = 638 ns
    assert s.per_chip.m == 256 and s.compute_time_s == pytest.approx(638e-9)
    # ring all-gather: 3/4 of the 1024 * 128 * 2-byte result leaves each chip, at 1 GB/s
    assert s.comm_bytes_per_chip == pytest.approx(0.75 * 1024 * 128 * 2)
    assert s.comm_time_s == pytest.approx(196_608e-9)
    assert s.single_chip_time_s == pytest.approx((2 * 128 + 128 + 1024 - 2) * 1e-9)
    assert s.total_time_s == pytest.approx(638e-9 + 196_608e-9)


def test_split_k_all_reduces_twice_the_bytes_plus_hop_latency():
    s = sharded_gemm(128, 1024, 128, chips=8, hw=SPEC, ici_bandwidth_bytes_per_s=1e9, axis="k", hop_latency_s=1e-6)
    assert s.axis is ShardAxis.K and s.per_chip.k == 128
    assert s.comm_bytes_per_chip == pytest.approx(2 * 7 / 8 * 128 * 128 * 2)
    assert s.comm_time_s == pytest.approx(2 * 7 / 8 * 128 * 128 * 2 / 1e9 + 2 * 7 * 1e-6)


def test_one_chip_needs_no_collective():
    s = sharded_gemm(512, 256, 256, chips=1, hw="google-tpu-v4", ici_bandwidth_bytes_per_s=45e9)
    assert s.comm_time_s == 0 and s.speedup == pytest.approx(1.0)


def test_bad_values_are_one_line_errors():
    with pytest.raises(DfxError, match="chips"):
        sharded_gemm(8, 8, 8, chips=0, hw=SPEC, ici_bandwidth_bytes_per_s=1e9)
    with pytest.raises(DfxError, match="shard axis"):
        sharded_gemm(8, 8, 8, chips=2, hw=SPEC, ici_bandwidth_bytes_per_s=1e9, axis="q")
    with pytest.raises(DfxError, match="no matrix units"):
        sharded_gemm(8, 8, 8, chips=2, hw="h100", ici_bandwidth_bytes_per_s=1e9)
