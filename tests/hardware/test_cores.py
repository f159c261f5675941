"""Part of a chip: ``restrict_to_cores`` and ``--cores`` (issue 35), every expected value by hand."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dfx.hardware import HardwareProfileError, load_profile, restrict_to_cores
from dfx.hardware.cores import core_total


def test_one_spyre_core_has_a_32nd_of_peak_and_its_own_scratchpad():
    one = restrict_to_cores(load_profile("ibm-spyre"), 1)
    assert one.id == "ibm-spyre-1of32" and one.compute.cores == 1 and core_total(one) == 1
    # peaks / 32: fp16 75 TFLOP/s / 32 = 2.34375 TFLOP/s; int8 300 / 32 = 9.375 TOPS
    assert one.peak_flop_per_s["float16"] == pytest.approx(75e12 / 32)
    assert one.peak_flop_per_s["int8"] == pytest.approx(300e12 / 32)
    assert one.compute.units == 2  # 64 corelets / 32 cores
    lx = one.level("LX")
    # 64 MB of LX in 32 instances -> one core's 2 MB; 16.384 TB/s / 32 = 512 GB/s
    assert (lx.capacity_bytes, lx.instances) == (pytest.approx(2e6), 1)
    assert lx.bandwidth_bytes_per_s == pytest.approx(512e9)
    # LPDDR5: min(150 GB/s whole, 1 core x 150 GB/s a core can draw) = 150 GB/s; capacity unchanged
    off = one.off_chip_level()
    assert off.bandwidth_bytes_per_s == pytest.approx(150e9) and off.capacity_bytes == pytest.approx(112e9)
    assert "restrict_to_cores" in one.source_of("peak_flop_per_s.float16")
    assert "core_bandwidth_bytes_per_s" in one.source_of("memory.LPDDR5.bandwidth_bytes_per_s")


def test_without_a_per_core_figure_the_off_chip_share_is_proportional_and_says_estimate():
    four = restrict_to_cores(load_profile("h100"), 4)
    assert four.id == "nvidia-h100-sxm-4of132"
    # 3.35 TB/s x 4 / 132 = 101.5 GB/s; bf16 989.4 TFLOP/s x 4 / 132 = 29.98 TFLOP/s; L2 50 MB x 4 / 132
    assert four.off_chip_level().bandwidth_bytes_per_s == pytest.approx(3.35e12 * 4 / 132)
    assert four.peak_flop_per_s["bfloat16"] == pytest.approx(989.4e12 * 4 / 132)
    assert four.level("L2").capacity_bytes == pytest.approx(50e6 * 4 / 132)
    assert four.level("SMEM").instances == 4
    assert "estimate" in four.source_of("memory.HBM3.bandwidth_bytes_per_s")


def test_all_cores_is_the_profile_itself():
    spyre = load_profile("ibm-spyre")
    assert restrict_to_cores(spyre, 32) is spyre


@pytest.mark.parametrize("bad", [0, -1, 33, 1.5, True])
def test_out_of_range_is_refused_naming_the_value_and_the_range(bad):
    with pytest.raises(HardwareProfileError) as err:
        restrict_to_cores(load_profile("ibm-spyre"), bad)
    assert repr(bad) in str(err.value) or f"cores={bad}" in str(err.value)
    assert "1 to 32" in str(err.value)


def test_a_core_cannot_draw_more_than_the_whole_level():
    data = load_profile("ibm-spyre").to_si_dict()
    data["memory"][1]["core_bandwidth_bytes_per_s"] = 200e9  # LPDDR5 is 150 GB/s in all
    from dfx.hardware import parse_profile

    with pytest.raises(HardwareProfileError, match="core_bandwidth_bytes_per_s"):
        parse_profile(data)


def test_cli_cores_out_of_range_is_one_line_and_exit_2():
    result = subprocess.run(
        [sys.executable, "-m", "dfx.cli", "analyze", "gpt2-block", "--hw", "spyre", "--cores", "64"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cores=64" in lines[0] and "--cores between 1 and 32" in lines[0]
