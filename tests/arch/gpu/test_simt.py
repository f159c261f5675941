"""The SIMT model against hand arithmetic under the CUDA occupancy rules (cuda_occupancy.h)."""

import pytest

from dfx.arch.gpu import (
    GemmConfig,
    Limit,
    divergent_warp_cost,
    gemm_kernel,
    masked_fraction,
    occupancy,
    simt_spec,
    waves,
)
from dfx.errors import DfxError
from dfx.hardware import load_profile

H100 = load_profile("nvidia-h100-sxm")
A100 = load_profile("nvidia-a100-sxm-80gb")


def test_4096_cubed_with_128_blocks_is_1024_programs_in_8_waves():
    # 4096/128 = 32 row blocks x 32 column blocks = 1,024 programs. Shared memory per program:
    # 5 stages x (128*64 + 64*128) x 2 B = 163,840 B, + 1,024 B reserve = 164,864 B (a multiple of
    # 128); 228 KiB = 233,472 B // 164,864 = 1 program per SM. Registers: 128*128 / (8 warps * 32)
    # = 64 accumulator + 32 = 96 per thread -> 3,072 per warp -> 16,384 per sub-partition // 3,072
    # = 5 warps x 4 = 20 warps // 8 = 2 programs. Warps 64 // 8 = 8. So shared memory binds at 1.
    # Waves: ceil(1024 / 132) = 8; the last has 1024 - 7 * 132 = 100 programs: 100/132 full.
    k = gemm_kernel(4096, 4096, 4096, H100, config=GemmConfig(128, 128, 64, 5, 8))
    assert k.programs == 1024 and k.grid == (32, 32, 1)
    assert k.shared_memory_bytes == 163_840
    assert k.occupancy.by_limit == {Limit.REGISTERS: 2, Limit.SHARED_MEMORY: 1, Limit.WARPS: 8, Limit.BLOCKS: 32}
    assert k.occupancy.binding == (Limit.SHARED_MEMORY,)
    assert (k.waves.count, k.waves.tail_programs) == (8, 100)
    assert k.waves.tail_fill == pytest.approx(100 / 132)
    assert k.k_iterations == 64  # 4096 / 64


def test_registers_bind_a_four_warp_128_tile():
    # 128x128x32, 3 stages, 4 warps: accumulator 16,384 / 128 threads = 128 + 32 = 160 registers;
    # 160 * 32 = 5,120 per warp (a multiple of 256); 16,384 // 5,120 = 3 warps per sub-partition
    # -> 12 warps // 4 = 3 programs. Shared memory 3 * (4,096 + 4,096) * 2 = 49,152 + 1,024 =
    # 50,176 -> 233,472 // 50,176 = 4. Warps 64 // 4 = 16. Registers bind at 3; 4096^3 then runs
    # ceil(1024 / (132 * 3)) = 3 waves, the last 1024 - 2 * 396 = 232 programs.
    k = gemm_kernel(4096, 4096, 4096, H100, config=GemmConfig(128, 128, 32, 3, 4))
    assert k.registers_per_thread == 160
    assert k.occupancy.by_limit[Limit.SHARED_MEMORY] == 4
    assert (k.occupancy.blocks_per_sm, k.occupancy.binding) == (3, (Limit.REGISTERS,))
    assert (k.waves.count, k.waves.tail_programs) == (3, 232)


def test_warps_bind_eight_warp_blocks_with_few_registers():
    # A100, 256 threads = 8 warps, 16 registers: 512 per warp -> 16,384 // 512 = 32 per
    # sub-partition x 4 = 128 warps // 8 = 16 blocks; warps 64 // 8 = 8; shared memory 0 + 1,024
    # reserve -> 167,936 // 1,024 = 164; blocks 32. Warps bind at 8 (100% occupancy).
    occ = occupancy(simt_spec(A100), threads_per_block=256, registers_per_thread=16, shared_memory_bytes=0)
    assert occ.by_limit == {Limit.REGISTERS: 16, Limit.SHARED_MEMORY: 164, Limit.WARPS: 8, Limit.BLOCKS: 32}
    assert occ.binding == (Limit.WARPS,) and occ.fraction == 1.0


def test_block_slots_bind_one_warp_blocks():
    # 32 threads, 32 registers: 1,024 per warp -> 16 per sub-partition -> 64 warps -> 64 blocks;
    # warps 64; the 32 block slots bind: 32 warps resident, half the 64 warp slots.
    occ = occupancy(simt_spec(H100), threads_per_block=32, registers_per_thread=32, shared_memory_bytes=0)
    assert (occ.blocks_per_sm, occ.binding, occ.fraction) == (32, (Limit.BLOCKS,), 0.5)


def test_register_allocation_unit_rounds_up_per_warp():
    # 33 registers x 32 lanes = 1,056 -> rounded up to 1,280 (unit 256); 16,384 // 1,280 = 12 warps
    # per sub-partition x 4 = 48 warps // 4 warps = 12 blocks (without the rounding: 15).
    occ = occupancy(simt_spec(H100), threads_per_block=128, registers_per_thread=33, shared_memory_bytes=0)
    assert occ.registers_per_warp == 1280 and occ.by_limit[Limit.REGISTERS] == 12


def test_shared_memory_reserve_and_allocation_unit():
    # A100 164 KiB = 167,936 B per SM. 32,512 B + 1,024 reserve = 33,536 = 262 x 128: 5 fit
    # (167,680). One byte more: 33,537 rounds up to 33,664, and 5 x 33,664 = 168,320 > 167,936: 4.
    spec = simt_spec(A100)
    assert (
        occupancy(spec, threads_per_block=128, registers_per_thread=32, shared_memory_bytes=32_512).by_limit[
            Limit.SHARED_MEMORY
        ]
        == 5
    )
    occ = occupancy(spec, threads_per_block=128, registers_per_thread=32, shared_memory_bytes=32_513)
    assert occ.shared_memory_per_block_bytes == 33_664 and occ.by_limit[Limit.SHARED_MEMORY] == 4


def test_a_block_that_cannot_fit_is_refused():
    spec = simt_spec(H100)
    with pytest.raises(DfxError, match="shared memory"):
        occupancy(spec, threads_per_block=128, registers_per_thread=32, shared_memory_bytes=228 * 1024)
    with pytest.raises(DfxError, match="registers"):  # 32 warps x 255 regs -> 8,192 x 32 > 65,536
        occupancy(spec, threads_per_block=1024, registers_per_thread=255, shared_memory_bytes=0)
    with pytest.raises(DfxError, match="threads"):
        occupancy(spec, threads_per_block=2048, registers_per_thread=32, shared_memory_bytes=0)


def test_waves_and_tail():
    w = waves(264, 132, 2)  # exactly one wave of 132 x 2
    assert (w.count, w.tail_programs, w.efficiency) == (1, 264, 1.0)
    w = waves(265, 132, 2)  # one program past it: a second wave holding 1 of 264 slots
    assert (w.count, w.tail_programs, w.sizes()) == (2, 1, [264, 1])
    assert w.efficiency == pytest.approx(265 / 528)


def test_masked_lanes_of_ragged_tiles():
    # 100^3 with 64 x 64 x 32 blocks: 128 x 128 x 128 lanes run for 1,000,000 useful:
    # 1 - 1e6 / 2,097,152 = 0.523163...
    assert masked_fraction((100, 100, 100), (64, 64, 32)) == pytest.approx(1 - 1e6 / 2_097_152)
    k = gemm_kernel(100, 100, 100, H100, config=GemmConfig(64, 64, 32, 2, 4))
    assert k.masked_lane_fraction == pytest.approx(1 - 1e6 / 2_097_152)
    assert masked_fraction((4096,), (1024,)) == 0.0


def test_divergence_serialises_both_sides():
    # p = 1/2: a warp is uniform with probability 2 * 2**-32, so it costs about then + else = 12.
    assert divergent_warp_cost(0.5, 10, 2) == pytest.approx(12.0)
    assert divergent_warp_cost(0.0, 10, 2) == 2.0  # no lane branches: only the else side
    assert divergent_warp_cost(1.0, 10, 2) == 10.0
    # p = 1/64: a warp stays uniform with probability (63/64)**32 = 0.6045...; else it runs both.
    uniform = (63 / 64) ** 32
    assert divergent_warp_cost(1 / 64, 10, 2) == pytest.approx(
        uniform * 2 + (1 - uniform - 64.0**-32) * 12 + 64.0**-32 * 10
    )
