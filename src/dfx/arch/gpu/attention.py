"""The FlashAttention program as Triton's fused-attention tutorial runs it: grid, blocks, KV loop, shared memory.

Dimension letters: ``B`` batch, ``H`` heads, ``S`` sequence (queries and keys), ``D`` head dim.
Triton's tutorial 06 (``python/tutorials/06-fused-attention.py``, the forward kernel ``_attn_fwd``)
launches one program per ``BLOCK_M`` query rows of one (batch, head)::

    grid = (cdiv(S, BLOCK_M), B * H, 1)

Each program loads its ``Q`` block ``[BLOCK_M, D]`` once, then loops over the keys in
``cdiv(S, BLOCK_N)`` steps: load ``K`` and ``V`` blocks ``[BLOCK_N, D]``, ``qk = Q @ K^T``
``[BLOCK_M, BLOCK_N]``, the online softmax (running max ``m_i`` and sum ``l_i`` per row; Dao,
FlashAttention-2, 2023, Algorithm 1), ``acc += P @ V`` into an fp32 ``[BLOCK_M, D]`` accumulator,
and writes ``O`` once. Its autotune space is ``BLOCK_M`` in (64, 128), ``BLOCK_N`` in (32, 64, 128),
``num_warps`` in (4, 8); dfx takes ``BLOCK_M = 128, BLOCK_N = 64, 8 warps, 3 stages`` unless told.

Stated model (estimates, not a compiler's counts):

- shared memory per program = ``(BLOCK_M * D + num_stages * 2 * BLOCK_N * D) * elem``: the Q block
  and a ``num_stages``-deep ring of K and V blocks (Triton's software pipeliner);
- registers per thread = ``ceil((BLOCK_M * D + BLOCK_M * BLOCK_N) / threads) + 32``: the fp32
  accumulator and the ``qk`` tile spread over the program's threads, plus dfx's 32 for the rest;
- FLOPs = ``4 * B * H * S * S * D`` (two matmuls; dfx's convention: no causal halving, softmax not
  counted); per program ``4 * BLOCK_M * S * D`` (masked rows of a partial block included);
- HBM bytes = Q, K, V read and O written once, ``4 * B * H * S * D * elem``: the K and V blocks every
  program of one head re-reads are taken as served by L2;
- a wave's time = max(its programs' FLOPs on the busiest SM's share of the tensor-core peak, its
  share of the HBM bytes / bandwidth); time = the sum over waves + the per-kernel overhead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.arch.gpu.kernel import _dtype_bytes, _machine
from dfx.arch.gpu.simt import Occupancy, Waves, occupancy, simt_spec, waves
from dfx.costs.terms import FMA_FLOPS
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile

__all__ = ["AttentionConfig", "AttentionKernel", "attention_kernel", "default_config"]

_MATMULS = 2  # Q @ K^T and P @ V
_ACC_BYTES = 4  # the fp32 accumulator and qk tile
_BASE_REGS = 32  # registers besides the accumulator and qk (pointers, m_i, l_i, loop state): an estimate
# The tutorial autotunes NUM_STAGES_OPTIONS = [1] under HIP (`if is_hip(): NUM_STAGES_OPTIONS = [1]`,
# python/tutorials/06-fused-attention.py): on AMD's 64-lane wavefronts and 64 KiB LDS per workgroup
# the 3-stage ring at D = 128 (131,072 B) cannot be launched, 1 stage (65,536 B) can.
_HIP_WAVEFRONT_LANES = 64
_HIP_STAGES = 1


@dataclass(frozen=True)
class AttentionConfig:
    """The tutorial's ``BLOCK_M``, ``BLOCK_N``, ``num_warps``, ``num_stages``."""

    block_m: int = 128
    block_n: int = 64
    num_warps: int = 8
    num_stages: int = 3

    def to_dict(self) -> dict[str, Any]:
        return {
            "BLOCK_M": self.block_m,
            "BLOCK_N": self.block_n,
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
        }


@dataclass(frozen=True)
class AttentionKernel:
    """One FlashAttention forward launch: grid, the program's KV loop, occupancy, waves, time."""

    b: int
    h: int
    s: int
    d: int
    dtype: str
    profile_id: str
    config: AttentionConfig
    warp_size: int
    registers_per_thread: int
    shared_memory_bytes: int
    occupancy: Occupancy
    waves: Waves
    wave_times_s: tuple[float, ...]
    flops: int
    hbm_bytes: int
    overhead_s: float
    peak_flop_per_s: float
    sms: int

    @property
    def grid(self) -> tuple[int, int, int]:
        """``(cdiv(S, BLOCK_M), B * H, 1)``, as the tutorial launches it."""
        return (math.ceil(self.s / self.config.block_m), self.b * self.h, 1)

    @property
    def programs(self) -> int:
        return math.prod(self.grid)

    @property
    def kv_iterations(self) -> int:
        return math.ceil(self.s / self.config.block_n)

    @property
    def time_s(self) -> float:
        return sum(self.wave_times_s) + self.overhead_s

    def to_dict(self) -> dict[str, Any]:
        c = self.config
        return {
            "kind": "attention",
            "b": self.b,
            "h": self.h,
            "s": self.s,
            "d": self.d,
            "dtype": self.dtype,
            "hardware": self.profile_id,
            "config": c.to_dict(),
            "chosen_from": 1,
            "grid": list(self.grid),
            "programs": self.programs,
            "program": {
                "q_block": [c.block_m, self.d],
                "kv_loop_iterations": self.kv_iterations,
                "kv_step": c.block_n,
                "loads_per_iteration": {"k": [c.block_n, self.d], "v": [c.block_n, self.d]},
                "scores": [c.block_m, c.block_n],
                "accumulator": [c.block_m, self.d],
                "accumulator_dtype": "float32",
                "softmax_state": {"m_i": [c.block_m], "l_i": [c.block_m]},
            },
            "warps_per_program": c.num_warps,
            "warp_size_threads": self.warp_size,
            "threads_per_program": c.num_warps * self.warp_size,
            "registers_per_thread": self.registers_per_thread,
            "registers_estimated": True,
            "shared_memory_per_program_bytes": self.shared_memory_bytes,
            "occupancy_blocks_per_sm": self.occupancy.blocks_per_sm,
            "occupancy_limited_by": [b.value for b in self.occupancy.binding],
            "occupancy": self.occupancy.to_dict(),
            "sms": self.sms,
            "waves": self.waves.count,
            "wave": self.waves.to_dict(),
            "masked_lane_fraction": 1 - self.s / (self.grid[0] * c.block_m),
            "flops": self.flops,
            "hbm_bytes": self.hbm_bytes,
            "overhead_s": self.overhead_s,
            "time_s": self.time_s,
            "flop_per_s": self.flops / self.time_s,
            "fraction_of_peak": self.flops / self.time_s / self.peak_flop_per_s,
        }


def default_config(profile: HardwareProfile) -> AttentionConfig:
    """The tutorial's defaults on ``profile``: 128 x 64, 8 warps, 3 stages; 1 stage on a GPU with
    64-lane wavefronts (AMD CDNA, where the tutorial runs under HIP with ``num_stages=1``).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> default_config(load_profile("h100")).num_stages, default_config(load_profile("mi300x")).num_stages
    (3, 1)
    """
    if simt_spec(profile).warp_size == _HIP_WAVEFRONT_LANES:
        return AttentionConfig(num_stages=_HIP_STAGES)
    return AttentionConfig()


def attention_kernel(
    b: int,
    h: int,
    s: int,
    d: int,
    profile: HardwareProfile,
    *,
    dtype: str = "bfloat16",
    config: AttentionConfig | None = None,
    registers_per_thread: int | None = None,
) -> AttentionKernel:
    """The tutorial's FlashAttention forward for ``[B, H, S, D]`` Q, K, V on ``profile``.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> k = attention_kernel(2, 16, 4096, 128, load_profile("h100"))
    >>> k.grid, k.programs, k.kv_iterations      # (4096 / 128, 2 * 16), 4096 / 64
    ((32, 32, 1), 1024, 64)

    Raises
    ------
    DfxError
        Sizes below 1, or a program that cannot fit on an SM (shared memory, registers, threads).
    """
    if min(b, h, s, d) < 1:
        raise DfxError(f"attention needs B, H, S, D >= 1, got {b}, {h}, {s}, {d}")
    c = config or default_config(profile)
    if min(c.block_m, c.block_n, c.num_warps, c.num_stages) < 1:
        raise DfxError(f"attention config {c.to_dict()}: every block size, warp and stage count must be >= 1")
    spec = simt_spec(profile)
    name, elem = _dtype_bytes(dtype)
    mach = _machine(profile, spec, name)
    threads = c.num_warps * spec.warp_size
    smem = (c.block_m * d + c.num_stages * 2 * c.block_n * d) * elem
    regs = registers_per_thread
    if regs is None:
        regs = min(
            spec.limits.max_registers_per_thread,
            math.ceil((c.block_m * d + c.block_m * c.block_n) / threads) + _BASE_REGS,
        )
    occ = occupancy(spec, threads_per_block=threads, registers_per_thread=regs, shared_memory_bytes=smem)
    if occ.blocks_per_sm < 1:
        raise DfxError(f"attention config {c.to_dict()} cannot run on {profile.id}: no program fits on an SM")
    grid_m = math.ceil(s / c.block_m)
    w = waves(grid_m * b * h, spec.sms, occ.blocks_per_sm)
    per_program_flops = _MATMULS * FMA_FLOPS * c.block_m * s * d  # Q@K^T and P@V of one query block
    hbm = 4 * b * h * s * d * elem  # Q, K, V read once, O written once
    per_sm_peak = mach.peak_flop_per_s / spec.sms
    times = tuple(
        max(
            math.ceil(size / spec.sms) * per_program_flops / per_sm_peak, hbm * size / w.programs / mach.hbm_bytes_per_s
        )
        for size in w.sizes()
    )
    flops = _MATMULS * FMA_FLOPS * b * h * s * s * d
    return AttentionKernel(
        b,
        h,
        s,
        d,
        name,
        profile.id,
        c,
        spec.warp_size,
        regs,
        smem,
        occ,
        w,
        times,
        flops,
        hbm,
        mach.overhead_s,
        mach.peak_flop_per_s,
        spec.sms,
    )
