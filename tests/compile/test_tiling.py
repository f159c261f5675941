"""The tiling pass: tiles that fit one core's on-chip memory, and the traffic they imply."""

import math

from dfx.targets import compile_for, target_for
from dfx.costs import annotate
from dfx.hardware import load_profile

from .test_placement import mm_graph


def _gemm(hw: str, m: int, k: int, n: int):
    program = compile_for(annotate(mm_graph(m, k, n)), load_profile(hw))
    (kernel,) = program.kernels
    return kernel


def _core_memory(profile: str):
    hw = load_profile(profile)
    return target_for(hw).core_memory(hw)


def test_core_memory_is_one_cores_share_of_the_on_chip_level():
    # H100: 33 MiB of SMEM over 132 SMs = 256 KiB; Spyre: 64 MB of LX over 32 cores = 2 MB;
    # Groq: 220 MiB of SRAM over 88 slices = 2.5 MiB; TPU v6e: no on-chip capacity in its profile
    assert _core_memory("h100").per_core_bytes == 256 * 1024
    assert _core_memory("spyre").per_core_bytes == 2e6
    assert _core_memory("groq").per_core_bytes == 220 * 2**20 / 88
    assert _core_memory("tpu-v6e").per_core_bytes is None


def test_spyre_gemm_tile_fits_its_scratchpad_in_multiples_of_the_array():
    kernel = _gemm("spyre", 1024, 1024, 1024)  # bf16
    tm, tn, tk = kernel.tile_shape
    assert tm % 8 == 0 and tn % 8 == 0 and tk % 8 == 0  # 8 x 8 arrays
    # double-buffered A and B tiles plus the output tile, 2 bytes each, within 2 MB
    assert 2 * (2 * (tm * tk + tk * tn) + tm * tn) <= 2e6
    assert kernel.tiles == math.ceil(1024 / tm) * math.ceil(1024 / tn)
    assert kernel.tiles >= 32  # every core gets work
    # traffic of the tile loop: A re-read per column block, B per row block, C written once
    traffic = 2 * (1024 * 1024 * math.ceil(1024 / tn) + 1024 * 1024 * math.ceil(1024 / tm) + 1024 * 1024)
    unique = 2 * 3 * 1024 * 1024
    assert kernel.tile_traffic_bytes == kernel.offchip_bytes + traffic - unique
    assert kernel.offchip_bytes == unique  # each tensor once, whatever the tiling


def test_groq_mxm_tile_spans_all_twenty_superlanes():
    kernel = _gemm("groq", 128, 64, 128)
    # 128 x 128 fits one 320 x 320 MXM tile (side capped at the dimension); it spans 320 / 16 = 20 superlanes
    assert kernel.tile_shape[:2] == (128, 128)
    assert kernel.tiles == 20 and kernel.cores == 20


def test_spyre_reduction_tiles_whole_rows_over_the_cores():
    from .test_fusion import _sum_then_scale

    program = compile_for(annotate(_sum_then_scale()), load_profile("spyre"))
    s = next(k for k in program.kernels if k.nodes == ("s",))
    # 4 rows of 8: ceil(32 / 32 cores) = 1 element per core, but a row stays whole: 1 row per tile
    assert s.tile_shape == (1, 8) and s.tiles == 4
