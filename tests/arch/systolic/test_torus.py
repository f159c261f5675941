"""A TPU pod or slice as a torus: chips, peak, diameter in hops and bisection, by hand."""

import json
import subprocess
import sys

import pytest

from dfx.arch.systolic.torus import Torus, parse_dims, torus_of
from dfx.errors import DfxError
from dfx.hardware import load_profile

TPU_V4 = load_profile("google-tpu-v4")


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


def test_a_4x4x8_tpu_v4_slice_by_hand():
    t = torus_of(TPU_V4, (4, 4, 8))
    # 4 * 4 * 8 = 128 chips x 275 TFLOP/s (bf16) = 35.2 PFLOP/s
    assert t.chips == 128 and t.peak_flop_per_s == pytest.approx(35.2e15)
    # a ring of d chips is at most d // 2 hops around: 2 + 2 + 4 = 8
    assert t.diameter_hops == 8
    # halving the 8-long axis cuts 4 * 4 = 16 rings twice (the wraparound): 32 links,
    # x 45 GB/s one way x 2 directions = 2.88 TB/s
    assert t.bisection_links == 32 and t.bisection_bytes_per_s == pytest.approx(2.88e12)


def test_the_full_pod():
    t = torus_of(TPU_V4)
    # 16^3 = 4,096 chips x 275 TFLOP/s = 1.1264 EFLOP/s; diameter 8 + 8 + 8 = 24 hops;
    # bisection 16 * 16 * 2 = 512 links x 45 GB/s x 2 = 46.08 TB/s
    assert (t.dims, t.chips, t.diameter_hops, t.bisection_links) == ((16, 16, 16), 4096, 24, 512)
    assert t.peak_flop_per_s == pytest.approx(4096 * 275e12)
    assert t.bisection_bytes_per_s == pytest.approx(46.08e12)


def test_a_mesh_has_no_wraparound():
    # without wraparound links: (4 - 1) + (4 - 1) + (8 - 1) = 13 hops; the cut crosses 16 links once
    t = Torus((4, 4, 8), 1.0, "bfloat16", 1.0, wraparound=False)
    assert t.diameter_hops == 13 and t.bisection_links == 16


def test_command_line_states_the_slice():
    r = dfx("hw", "show", "google-tpu-v4", "--slice", "4x4x8", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["diameter_hops"] == 8 and doc["chips"] == 128 and doc["peak_flop_per_s"] == pytest.approx(35.2e15)
    text = dfx("hw", "show", "google-tpu-v4").stdout
    assert "4,096 chips" in text and "24 hops" in text


@pytest.mark.parametrize(
    ("hw", "dims", "message"),
    [("h100", (4, 4), "has no torus"), ("tpu-v4", (4, 4, 32), "does not fit"), ("tpu-v4", (4, 4), "does not fit")],
)
def test_bad_slices_are_refused(hw, dims, message):
    with pytest.raises(DfxError, match=message):
        torus_of(load_profile(hw), dims)


def test_parse_dims():
    assert parse_dims("4x4x8") == (4, 4, 8)
    with pytest.raises(DfxError, match="4x4x8"):
        parse_dims("4xa")
