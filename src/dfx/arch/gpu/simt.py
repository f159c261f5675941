"""The SIMT execution model of a GPU: warps, occupancy per SM, waves, masked lanes, divergence.

A kernel launches a grid of thread blocks (Triton calls each one a *program*). A block's threads run
in warps that issue one instruction at a time: 32 lanes on an NVIDIA GPU, 64 on an AMD CDNA GPU
(a *wavefront*, run on one of the CU's four SIMDs). The width is the profile's
``simt.warp_size_threads`` (:func:`block_warps`); an AMD CU plays the SM's part. The block scheduler keeps as many blocks
resident on each SM as its four limits allow (registers, shared memory, warp slots, block slots:
the CUDA occupancy calculator's rules, :func:`occupancy`). The grid then runs in waves of
``SMs x blocks per SM`` blocks; the last wave may be partly empty (:func:`waves`).

All of it is plain arithmetic on a profile's ``simt`` section (:class:`dfx.hardware.schema.Simt`).
Sources: NVIDIA ``cuda_occupancy.h`` (the occupancy calculator as code: ``cudaOccMaxBlocksPerSMRegsLimit``,
``cudaOccMaxBlocksPerSMSmemLimit``, ``cudaOccMaxBlocksPerSMWarpsLimit``); the CUDA C++ Programming
Guide's table of technical specifications per compute capability, and its SIMT architecture section
for warps, masked lanes and divergence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.hardware.schema import Simt

__all__ = [
    "BlockWarps",
    "Limit",
    "Occupancy",
    "SimtSpec",
    "Waves",
    "divergent_warp_cost",
    "block_warps",
    "masked_fraction",
    "occupancy",
    "simt_spec",
    "waves",
]


@dataclass(frozen=True)
class SimtSpec:
    """What the SIMT model needs of a GPU: its SM count, clock and per-SM limits."""

    profile_id: str
    sms: int
    clock_hz: float | None
    limits: Simt

    @property
    def warp_size(self) -> int:
        return self.limits.warp_size_threads


def simt_spec(profile: HardwareProfile) -> SimtSpec:
    """The SIMT spec of a GPU profile.

    Raises
    ------
    DfxError
        If the profile has no ``simt`` section or no SM count (``compute.cores``).
    """
    if profile.simt is None or profile.compute.cores is None:
        raise DfxError(
            f"profile {profile.id!r} has no simt section (SM limits); use a GPU profile such as "
            "nvidia-h100-sxm, nvidia-b200 or amd-mi300x"
        )
    return SimtSpec(profile.id, profile.compute.cores, profile.compute.clock_hz, profile.simt)


@dataclass(frozen=True)
class BlockWarps:
    """A block of ``threads`` threads cut into warps of ``warp_size`` lanes; the last warp's spare lanes are masked."""

    threads: int
    warp_size: int

    @property
    def warps(self) -> int:
        return math.ceil(self.threads / self.warp_size)

    @property
    def lanes(self) -> int:
        """Lanes the block occupies: whole warps."""
        return self.warps * self.warp_size

    @property
    def masked_lanes(self) -> int:
        """Lanes of the last warp with no thread (predicated off for every instruction)."""
        return self.lanes - self.threads

    def to_dict(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "warp_size_threads": self.warp_size,
            "warps": self.warps,
            "lanes": self.lanes,
            "masked_lanes": self.masked_lanes,
            "masked_fraction": self.masked_lanes / self.lanes,
        }


def block_warps(threads: int, warp_size: int) -> BlockWarps:
    """``warps = ceil(threads / warp_size)``, ``masked lanes = warps * warp_size - threads``.

    A warp (a wavefront on AMD) issues one instruction for all its lanes, so a block whose size is
    not a multiple of the width leaves lanes of its last warp idle (CUDA C++ Programming Guide,
    "SIMT Architecture"; HIP "Hardware implementation": 64-lane wavefronts on CDNA).

    Examples
    --------
    >>> b = block_warps(90, 32)      # H100: 3 warps, 3 * 32 - 90 = 6 lanes masked
    >>> b.warps, b.masked_lanes
    (3, 6)
    >>> b = block_warps(90, 64)      # MI300X: 2 wavefronts, 2 * 64 - 90 = 38 lanes masked
    >>> b.warps, b.masked_lanes
    (2, 38)

    Raises
    ------
    DfxError
        Fewer than one thread or lane.
    """
    if threads < 1 or warp_size < 1:
        raise DfxError(f"a block needs >= 1 thread and a warp >= 1 lane, got {threads} threads, {warp_size} lanes")
    return BlockWarps(threads, warp_size)


class Limit(str, Enum):
    """What caps the number of resident blocks on an SM (the occupancy calculator's four limits)."""

    REGISTERS = "registers"
    SHARED_MEMORY = "shared_memory"
    WARPS = "warps"
    BLOCKS = "blocks"

    def __str__(self) -> str:
        return self.value


def _round_up(x: int, unit: int) -> int:
    return unit * math.ceil(x / unit)


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM, each limit's cap, and which limit binds (the smallest; ties listed)."""

    blocks_per_sm: int
    by_limit: dict[Limit, int]
    warps_per_block: int
    registers_per_warp: int  # after rounding to the allocation unit
    shared_memory_per_block_bytes: int  # after the reserve and rounding to the allocation unit
    max_warps_per_sm: int
    warp_size_threads: int = 32  # lanes per warp (64 per AMD wavefront)

    @property
    def binding(self) -> tuple[Limit, ...]:
        return tuple(k for k, v in self.by_limit.items() if v == self.blocks_per_sm)

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def fraction(self) -> float:
        """Resident warps / the SM's warp slots (what ``ncu`` calls theoretical occupancy)."""
        return self.warps_per_sm / self.max_warps_per_sm

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "fraction": self.fraction,
            "binding": [b.value for b in self.binding],
            "by_limit": {k.value: v for k, v in self.by_limit.items()},
            "registers_per_warp": self.registers_per_warp,
            "shared_memory_per_block_bytes": self.shared_memory_per_block_bytes,
        }


def occupancy(
    spec: SimtSpec, *, threads_per_block: int, registers_per_thread: int, shared_memory_bytes: int
) -> Occupancy:
    """Resident blocks per SM under the CUDA occupancy rules (``cuda_occupancy.h``).

    ::

        warps/block     = ceil(threads / 32)                          # 64 per AMD wavefront
        regs/warp       = round_up(regs/thread * 32, 256)              # register allocation unit
        by registers    = (regs/SM / 4 // regs/warp) * 4 // warps/block # 4 sub-partitions
        smem/block      = round_up(smem + 1 KiB reserve, 128)          # allocation unit
        by shared mem   = smem/SM // smem/block
        by warps        = warps/SM // warps/block
        by blocks       = blocks/SM
        blocks/SM       = min of the four

    Shared memory per SM is the largest carveout (the driver picks a carveout that fits; the
    calculator's default preference is the maximum).

    Parameters
    ----------
    spec : SimtSpec
    threads_per_block : int
        ``num_warps * warp size`` for a Triton program (32 lanes a warp; 64 a wavefront on AMD CDNA).
    registers_per_thread : int
        32-bit registers each thread holds (the compiler's count; an estimate for Triton kernels,
        see :func:`dfx.arch.gpu.configs.gemm_registers_per_thread`).
    shared_memory_bytes : int
        Dynamic plus static shared memory one block uses.

    Raises
    ------
    DfxError
        If one block cannot fit on an SM at all (too many threads, registers or shared memory).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> occ = occupancy(simt_spec(load_profile("h100")), threads_per_block=256,
    ...                 registers_per_thread=128, shared_memory_bytes=160 * 1024)
    >>> occ.blocks_per_sm, [b.value for b in occ.binding]   # 160 KiB + 1 KiB reserve: 228 // 161 = 1
    (1, ['shared_memory'])
    """
    lim = spec.limits
    if not 1 <= threads_per_block <= lim.max_threads_per_block:
        raise DfxError(
            f"a block of {threads_per_block} threads: it must be 1..{lim.max_threads_per_block} on {spec.profile_id}"
        )
    if not 0 <= registers_per_thread <= lim.max_registers_per_thread:
        raise DfxError(
            f"{registers_per_thread} registers per thread: at most {lim.max_registers_per_thread} on {spec.profile_id}"
        )
    warps_per_block = math.ceil(threads_per_block / spec.warp_size)
    regs_per_warp = _round_up(registers_per_thread * spec.warp_size, lim.register_allocation_unit)
    parts = lim.register_sub_partitions
    regs_assumed = regs_per_warp * _round_up(warps_per_block, parts)  # the hardware's per-block check
    if regs_assumed > lim.max_registers_per_block:
        raise DfxError(
            f"{warps_per_block} warps x {registers_per_thread} registers per thread exceed the "
            f"{lim.max_registers_per_block} registers a block may use on {spec.profile_id}; use fewer warps or registers"
        )
    by_regs = (
        (lim.registers_per_sm // parts // regs_per_warp) * parts // warps_per_block
        if regs_per_warp
        else lim.max_blocks_per_sm
    )
    smem = _round_up(
        int(shared_memory_bytes + lim.shared_memory_reserved_per_block_bytes),
        int(lim.shared_memory_allocation_unit_bytes),
    )
    if shared_memory_bytes > lim.shared_memory_per_block_optin_bytes:
        raise DfxError(
            f"{shared_memory_bytes} B of shared memory per block exceed the {lim.shared_memory_per_block_optin_bytes:.0f} B "
            f"a block may use on {spec.profile_id}; use smaller blocks or fewer stages"
        )
    by_limit = {Limit.REGISTERS: by_regs}
    if smem:  # no shared memory and no per-block reserve (AMD's LDS): shared memory limits nothing
        by_limit[Limit.SHARED_MEMORY] = int(lim.shared_memory_per_sm_bytes // smem)
    by_limit[Limit.WARPS] = lim.max_warps_per_sm // warps_per_block
    by_limit[Limit.BLOCKS] = lim.max_blocks_per_sm
    return Occupancy(
        min(by_limit.values()), by_limit, warps_per_block, regs_per_warp, smem, lim.max_warps_per_sm, spec.warp_size
    )


@dataclass(frozen=True)
class Waves:
    """A grid of ``programs`` run ``per_wave`` at a time: the wave count and the last wave's fill."""

    programs: int
    per_wave: int

    @property
    def count(self) -> int:
        return math.ceil(self.programs / self.per_wave)

    @property
    def tail_programs(self) -> int:
        """Programs in the last wave (``per_wave`` when the grid divides evenly)."""
        return self.programs - (self.count - 1) * self.per_wave

    @property
    def tail_fill(self) -> float:
        return self.tail_programs / self.per_wave

    @property
    def efficiency(self) -> float:
        """programs / (waves x per_wave): the share of wave slots that do work."""
        return self.programs / (self.count * self.per_wave)

    def sizes(self) -> list[int]:
        """Programs in each wave, in order."""
        return [self.per_wave] * (self.count - 1) + [self.tail_programs]

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "per_wave": self.per_wave,
            "tail_programs": self.tail_programs,
            "tail_fill": self.tail_fill,
            "efficiency": self.efficiency,
        }


# Each wave is timed on its own (its panels, its L2 reuse): about 25 us of CPU here, so a million
# waves is about 25 s for one kernel; beyond it a kernel is refused, not computed for minutes.
MAX_WAVES = 1_000_000


def waves(programs: int, sms: int, blocks_per_sm: int) -> Waves:
    """``waves = ceil(programs / (SMs x blocks per SM))``, with the tail the last one leaves.

    Examples
    --------
    >>> w = waves(1024, 132, 1)          # 1024 = 7 * 132 + 100
    >>> w.count, w.tail_programs
    (8, 100)

    Raises
    ------
    DfxError
        No programs, SMs or blocks, or more than :data:`MAX_WAVES` waves (a budget: each is timed).
    """
    if programs < 1 or sms < 1 or blocks_per_sm < 1:
        raise DfxError(f"waves need >= 1 program, SM and block per SM, got {programs}, {sms}, {blocks_per_sm}")
    count = -(-programs // (sms * blocks_per_sm))
    if count > MAX_WAVES:
        raise DfxError(
            f"a kernel of {programs:,} programs runs {count:,} waves, beyond dfx's budget of "
            f"{MAX_WAVES:,} waves per kernel (each is timed); give smaller sizes (a smaller --seq or "
            "--batch, or --input-shape: attention holds seq x seq scores per head)"
        )
    return Waves(programs, sms * blocks_per_sm)


def masked_fraction(sizes: tuple[int, ...], blocks: tuple[int, ...]) -> float:
    """Share of lanes masked off when each dimension is covered by whole blocks.

    ``1 - prod(size) / prod(ceil(size / block) * block)``: a partial edge tile still occupies full
    warps; its out-of-range lanes are predicated off (Triton's ``mask=``).

    Examples
    --------
    >>> masked_fraction((100,), (64,))   # 128 lanes for 100 elements
    0.21875
    """
    if len(sizes) != len(blocks):
        raise DfxError(f"masked_fraction: {len(sizes)} sizes but {len(blocks)} block sizes")
    used = math.prod(sizes)
    covered = math.prod(math.ceil(s / b) * b for s, b in zip(sizes, blocks))
    return 1 - used / covered


def divergent_warp_cost(p_then: float, then_cycles: float, else_cycles: float, lanes: int = 32) -> float:
    """Expected cycles of one warp at an ``if``, lanes taking the branch independently with ``p_then``.

    A warp issues one instruction for all its lanes, so when some lanes take each side it runs both
    sides in turn with the other lanes masked (CUDA Programming Guide, "SIMT Architecture")::

        P(all then) = p^32,  P(all else) = (1-p)^32,  P(diverged) = 1 - both
        cost = p^32 * then + (1-p)^32 * else + P(diverged) * (then + else)

    Examples
    --------
    >>> round(divergent_warp_cost(0.5, 10, 10), 6)   # almost every warp diverges: both sides
    20.0
    >>> divergent_warp_cost(0.0, 10, 30)   # no lane takes the branch
    30.0
    """
    if not 0 <= p_then <= 1:
        raise DfxError(f"branch probability {p_then} is not in [0, 1]")
    all_then, all_else = p_then**lanes, (1 - p_then) ** lanes
    return all_then * then_cycles + all_else * else_cycles + (1 - all_then - all_else) * (then_cycles + else_cycles)
