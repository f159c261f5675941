"""Warp width from the profile: 32-lane warps on NVIDIA, 64-lane wavefronts on AMD CDNA (MI300X)."""

import json
import subprocess
import sys

import pytest

from dfx.arch.gpu import GemmConfig, gemm_kernel, occupancy, pointwise_kernel, simt_spec
from dfx.arch.gpu.simt import block_warps
from dfx.errors import DfxError
from dfx.hardware import load_profile

H100 = load_profile("nvidia-h100-sxm")
MI300X = load_profile("amd-mi300x")


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


def test_a_90_thread_block_in_python():
    # H100: ceil(90 / 32) = 3 warps, 3 * 32 - 90 = 6 masked lanes
    h = block_warps(90, simt_spec(H100).warp_size)
    assert (h.warps, h.lanes, h.masked_lanes) == (3, 96, 6)
    # MI300X: ceil(90 / 64) = 2 wavefronts, 2 * 64 - 90 = 38 masked lanes
    m = block_warps(90, simt_spec(MI300X).warp_size)
    assert (m.warps, m.lanes, m.masked_lanes) == (2, 128, 38)


@pytest.mark.parametrize(("hw", "width", "warps", "masked"), [("h100", 32, 3, 6), ("amd-mi300x", 64, 2, 38)])
def test_a_90_thread_block_on_the_command_line(hw, width, warps, masked):
    r = dfx("triton", "--threads", "90", "--hw", hw, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["warp_size_threads"], doc["warps"], doc["masked_lanes"]) == (width, warps, masked)
    text = dfx("triton", "--threads", "90", "--hw", hw).stdout
    assert f"{masked} lanes" in text and ("wavefronts of 64" in text) == (width == 64)


def test_gemm_json_reports_64_lane_wavefronts_on_the_mi300x():
    r = dfx("triton", "--gemm", "1024,1024,1024", "--hw", "amd-mi300x", "--block", "64,64,32", "--warps", "4", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # 4 wavefronts x 64 lanes = 256 threads per program
    assert doc["warp_size_threads"] == 64 and doc["threads_per_program"] == 256
    # accumulator 64 * 64 / (4 * 64) = 16 registers + dfx's 32 = 48 (on an H100: 64*64/(4*32) + 32 = 64)
    assert doc["registers_per_thread"] == 48
    h = gemm_kernel(1024, 1024, 1024, H100, config=GemmConfig(64, 64, 32, 3, 4))
    assert h.to_dict()["threads_per_program"] == 128 and h.registers_per_thread == 64


def test_mi300x_occupancy_by_hand():
    # 4 wavefronts of 64 lanes, 128 VGPRs each: 128 * 64 = 8,192 registers per wavefront (a multiple of
    # the 512 granule); per SIMD 131,072 / 4 = 32,768 // 8,192 = 4 wavefronts x 4 SIMDs = 16 // 4 = 4
    # blocks. LDS 16 KiB (a multiple of 512 B): 64 KiB // 16 KiB = 4. Wavefronts 32 // 4 = 8. Blocks 16.
    occ = occupancy(simt_spec(MI300X), threads_per_block=256, registers_per_thread=128, shared_memory_bytes=16384)
    assert occ.warps_per_block == 4 and occ.registers_per_warp == 8192
    assert occ.blocks_per_sm == 4 and {b.value for b in occ.binding} == {"registers", "shared_memory"}
    assert occ.fraction == 16 / 32


def test_no_shared_memory_limits_nothing_on_the_mi300x():
    # no LDS and no per-block reserve: only registers, wavefront slots and block slots count
    occ = occupancy(simt_spec(MI300X), threads_per_block=64, registers_per_thread=32, shared_memory_bytes=0)
    assert "shared_memory" not in occ.to_dict()["by_limit"] and occ.blocks_per_sm == 16


def test_a_wider_wavefront_diverges_more():
    # p = 0.95: all lanes take the branch with 0.95**32 = 0.194 on a warp but 0.95**64 = 0.038 on a
    # wavefront, so the wavefront runs both sides more often
    branch = (0.95, 10.0, 10.0)
    n = 64 * 1024
    h = pointwise_kernel(n, H100, branch=branch)
    m = pointwise_kernel(n, MI300X, branch=branch)
    assert m.simt_efficiency < h.simt_efficiency


def test_a_bad_block_is_refused():
    with pytest.raises(DfxError, match="1 thread"):
        block_warps(0, 64)
