"""Triton-style tile programs on a GPU: grid, warps, occupancy, waves, and the kernel's time from its waves.

Dimension letters: ``C[M, N] = A[M, K] @ B[K, N]``, ``batch`` copies. A GEMM program owns one
``BLOCK_M x BLOCK_N`` output tile and loops over K in ``BLOCK_K`` steps, loading an A tile and a B
tile into a ``num_stages``-deep shared-memory ring and accumulating ``tl.dot`` into fp32 registers
(Triton tutorial 03, Inductor's ``mm`` template). Programs are numbered in Triton's grouped order
(``GROUP_M`` row blocks at a time) and the block scheduler runs them in that order, ``SMs x blocks
per SM`` at a time (one *wave*).

Each wave's time is the roofline of the tiles it runs (dfx's stated model)::

    rounds   = ceil(programs in the wave / SMs)                 # tiles the busiest SM runs
    compute  = rounds * 2*BM*BN*ceil(K/BK)*BK / (peak / SMs)     # masked lanes still occupy the MMA
    smem     = rounds * (BM + BN)*ceil(K/BK)*BK*bytes / (128 B/clk * clock)   # operands read once from SMEM
    hbm      = the wave's unique A row panels and B column panels, read once (L2 shares a panel among
               the wave's programs) while they fit L2; of the share L2/panels beyond that fits, the
               rest is read by every program that needs it; + its C tiles; / HBM bandwidth
    wave     = max(compute, smem, hbm)
    time     = sum over waves + the profile's per-kernel overhead

Assumptions: programs resident on one SM share its tensor cores evenly; L2 keeps nothing between
waves; the L2-to-SM bandwidth is not a roof (the measured L2 figure, about 5.5 TB/s on an H100, would
cap a 128x128 bf16 tile program at 64 FLOP/B x 5.5 TB/s = 352 TFLOP/s, far below the 794 TFLOP/s
measured for large GEMMs, so it is not what binds them); the pipeline's prologue and epilogue cost
nothing. Pointwise and reduction programs run on the FP32 SIMT lanes at the profile's ``float32``
peak and read and write HBM once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from dfx.arch.gpu.configs import (
    GemmConfig,
    PointwiseConfig,
    ReductionConfig,
    gemm_candidates,
    gemm_size_hints,
    gemm_registers_per_thread,
    gemm_shared_memory_bytes,
    gemm_spills,
    pointwise_candidates,
    reduction_candidates,
)
from dfx.arch.gpu.simt import (
    MAX_WAVES,
    Occupancy,
    SimtSpec,
    Waves,
    divergent_warp_cost,
    masked_fraction,
    occupancy,
    simt_spec,
    waves,
)
from dfx.costs.terms import FMA_FLOPS
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.ir import DTYPE_ITEMSIZE_BYTES, normalize_dtype

__all__ = [
    "GemmKernel",
    "SimtKernel",
    "WaveTime",
    "autotune_pick",
    "choose_gemm_config",
    "fitting_gemm_configs",
    "gemm_kernel",
    "gemm_kernel_time_s",
    "gemm_kernels",
    "pointwise_kernel",
    "reduction_kernel",
]

_SIMT_REGS_ESTIMATE = 32  # registers per thread of a pointwise or reduction program: an estimate
_VECTOR_DTYPE = "float32"  # Triton computes elementwise math in fp32 on the SIMT lanes
_TIE_TOLERANCE = 0.01  # configs within 1% of the fastest predicted time count as tied


@dataclass(frozen=True)
class WaveTime:
    """One wave: its programs, the busiest SM's rounds, and the three roofs (seconds)."""

    programs: int
    rounds: int
    compute_s: float
    smem_s: float
    hbm_s: float
    hbm_bytes: float

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.smem_s, self.hbm_s)

    @property
    def bound(self) -> str:
        roofs = {"compute": self.compute_s, "shared_memory": self.smem_s, "memory": self.hbm_s}
        return max(roofs, key=roofs.get)

    def to_dict(self) -> dict[str, Any]:
        return {
            "programs": self.programs,
            "rounds": self.rounds,
            "compute_s": self.compute_s,
            "smem_s": self.smem_s,
            "hbm_s": self.hbm_s,
            "hbm_bytes": self.hbm_bytes,
            "time_s": self.time_s,
            "bound": self.bound,
        }


@dataclass(frozen=True)
class _Machine:
    sms: int
    peak_flop_per_s: float
    peak_dtype: str
    hbm_bytes_per_s: float
    l2_bytes: float
    smem_bytes_per_s_per_sm: float | None
    overhead_s: float


def _machine(profile: HardwareProfile, spec: SimtSpec, dtype: str) -> _Machine:
    off = profile.off_chip_level()
    if off is None:
        raise DfxError(f"profile {profile.id!r} has no off-chip bandwidth; the GPU model needs HBM's")
    l2 = next((lv for lv in profile.memory if lv.on_chip and lv.managed.value == "cache" and lv.capacity_bytes), None)
    peak = profile.peak(dtype)
    per_clock = spec.limits.shared_memory_bytes_per_clock_per_sm
    smem_bw = per_clock * spec.clock_hz if per_clock and spec.clock_hz else None
    return _Machine(
        spec.sms,
        peak.flop_per_s,
        peak.used,
        off.bandwidth_bytes_per_s,
        l2.capacity_bytes if l2 else 0.0,
        smem_bw,
        profile.op_overhead_s,
    )


def _dtype_bytes(dtype: str) -> tuple[str, int]:
    try:
        name = normalize_dtype(dtype)
    except ValueError as exc:
        raise DfxError(f"dtype {dtype!r}: {exc}") from None
    return name, DTYPE_ITEMSIZE_BYTES[name]


# -- GEMM ------------------------------------------------------------------------------------------
def _grouped_segments(lo: int, hi: int, pid_m: int, pid_n: int, group_m: int) -> tuple[int, list[tuple[int, int]]]:
    """Unique row blocks and the column-block intervals of programs ``lo..hi-1`` of one matrix.

    Triton's grouped order: ``group = pid // (GROUP_M * num_pid_n)``; inside a group of ``gs`` row
    blocks, ``pid_m = first + offset % gs``, ``pid_n = offset // gs``.
    """
    per_group = group_m * pid_n
    rows, cols = 0, []
    pid = lo
    while pid < hi:
        g = pid // per_group
        end = min(hi, (g + 1) * per_group)
        gs = min(pid_m - g * group_m, group_m)
        o1, o2 = pid - g * per_group, end - g * per_group
        rows += gs if o2 - o1 >= gs else o2 - o1
        cols.append((o1 // gs, (o2 - 1) // gs))
        pid = end
    return rows, cols


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, -1
    for a, b in sorted(intervals):
        if b > reach:
            total += b - max(a, reach + 1) + 1
            reach = b
    return total


def _wave_panels(lo: int, hi: int, tiles: int, pid_m: int, pid_n: int, group_m: int) -> tuple[int, int]:
    """Unique A row panels and B column panels read by programs ``lo..hi-1`` (batch outermost)."""
    if lo == 0 and hi % tiles == 0:  # whole matrices (one wave holding the grid: a small GEMM's only wave)
        # each matrix's grouped order visits every row block once (the groups' sizes add up to pid_m) and
        # every column block (each group spans columns 0..pid_n-1): what the walk below counts
        return hi // tiles * pid_m, hi // tiles * pid_n
    rows = cols = 0
    pid = lo
    while pid < hi:
        b = pid // tiles
        end = min(hi, (b + 1) * tiles)
        r, intervals = _grouped_segments(pid - b * tiles, end - b * tiles, pid_m, pid_n, group_m)
        rows, cols = rows + r, cols + _union_length(intervals)
        pid = end
    return rows, cols


@dataclass(frozen=True)
class GemmKernel:
    """A Triton GEMM kernel on a GPU: its config, grid, occupancy, waves and predicted time."""

    m: int
    k: int
    n: int
    batch: int
    dtype: str
    profile_id: str
    config: GemmConfig
    registers_per_thread: int
    shared_memory_bytes: int
    occupancy: Occupancy
    waves: Waves
    wave_times: tuple[WaveTime, ...]
    overhead_s: float
    peak_flop_per_s: float
    sms: int
    chosen_from: int = 1  # candidate configs compared (1 when the config was given)
    notes: tuple[str, ...] = field(default=())

    @property
    def grid(self) -> tuple[int, int, int]:
        """``(ceil(M / BLOCK_M), ceil(N / BLOCK_N), batch)``."""
        return (math.ceil(self.m / self.config.block_m), math.ceil(self.n / self.config.block_n), self.batch)

    @property
    def programs(self) -> int:
        return math.prod(self.grid)

    @property
    def k_iterations(self) -> int:
        return math.ceil(self.k / self.config.block_k)

    @property
    def flops(self) -> int:
        return FMA_FLOPS * self.batch * self.m * self.k * self.n

    @property
    def masked_lane_fraction(self) -> float:
        c = self.config
        return masked_fraction((self.m, self.n, self.k), (c.block_m, c.block_n, c.block_k))

    @property
    def time_s(self) -> float:
        return sum(w.time_s for w in self.wave_times) + self.overhead_s

    @property
    def flop_per_s(self) -> float:
        return self.flops / self.time_s

    @property
    def hbm_bytes(self) -> float:
        return sum(w.hbm_bytes for w in self.wave_times)

    def to_dict(self) -> dict[str, Any]:
        c = self.config
        return {
            "kind": "gemm",
            "m": self.m,
            "k": self.k,
            "n": self.n,
            "batch": self.batch,
            "dtype": self.dtype,
            "hardware": self.profile_id,
            "config": c.to_dict(),
            "chosen_from": self.chosen_from,
            "grid": list(self.grid),
            "programs": self.programs,
            "program": {
                "output_tile": [c.block_m, c.block_n],
                "k_loop_iterations": self.k_iterations,
                "k_step": c.block_k,
                "loads_per_iteration": {"a": [c.block_m, c.block_k], "b": [c.block_k, c.block_n]},
                "accumulator": [c.block_m, c.block_n],
                "accumulator_dtype": "float32",
            },
            "warps_per_program": c.num_warps,
            "warp_size_threads": self.occupancy.warp_size_threads,
            "threads_per_program": c.num_warps * self.occupancy.warp_size_threads,
            "registers_per_thread": self.registers_per_thread,
            "registers_estimated": True,
            "shared_memory_per_program_bytes": self.shared_memory_bytes,
            "occupancy_blocks_per_sm": self.occupancy.blocks_per_sm,
            "occupancy_limited_by": [b.value for b in self.occupancy.binding],
            "occupancy": self.occupancy.to_dict(),
            "sms": self.sms,
            "waves": self.waves.count,
            "wave": self.waves.to_dict(),
            "masked_lane_fraction": self.masked_lane_fraction,
            "flops": self.flops,
            "hbm_bytes": self.hbm_bytes,
            "overhead_s": self.overhead_s,
            "time_s": self.time_s,
            "flop_per_s": self.flop_per_s,
            "fraction_of_peak": self.flop_per_s / self.peak_flop_per_s,
            "wave_times": [w.to_dict() for w in _collapse(self.wave_times)],
            "notes": list(self.notes),
        }


def _collapse(waves_: tuple[WaveTime, ...]) -> list[WaveTime]:
    """At most the first two and the last wave (the export stays small for big grids)."""
    return list(waves_) if len(waves_) <= 3 else [waves_[0], waves_[1], waves_[-1]]


def _l2_reads(shared: float, unshared: float, l2_bytes: float) -> float:
    """HBM reads of a wave: its unique panels once while they fit L2; beyond, the share that does
    not fit is read by every program that needs it (linear in the overflow)."""
    if shared <= l2_bytes:
        return shared
    fits = l2_bytes / shared
    return fits * shared + (1 - fits) * max(unshared, shared)


def _gemm_waves(
    m: int,
    k: int,
    n: int,
    batch: int,
    elem_bytes: int,
    c: GemmConfig,
    w: Waves,
    mach: _Machine,
    rows=None,
    b_bytes=None,
) -> tuple[WaveTime, ...]:
    """Each wave's :class:`WaveTime`, from ``rows`` where the autotuner already made them (:func:`_gemm_wave_rows`)."""
    made: dict[int, WaveTime] = {}  # a repeated wave's row is one tuple, and its WaveTime one object
    out = []
    for row in _gemm_wave_rows(m, k, n, batch, elem_bytes, c, w, mach, b_bytes) if rows is None else rows:
        wt = made.get(id(row))
        if wt is None:
            wt = made[id(row)] = WaveTime(*row)
        out.append(wt)
    return tuple(out)


def _gemm_wave_rows(
    m: int, k: int, n: int, batch: int, elem_bytes: int, c: GemmConfig, w: Waves, mach: _Machine, b_bytes=None
) -> list[tuple[int, int, float, float, float, float]]:
    """Each wave's :class:`WaveTime` fields, as tuples (the autotuner times candidates from them).

    ``b_bytes``: bytes per element of B as stored (0.5 for int4 weights), read at that width from HBM
    and into shared memory and dequantised in registers; ``None``: ``elem_bytes``, as A and C.
    """
    b = elem_bytes if b_bytes is None else b_bytes
    pid_m, pid_n = math.ceil(m / c.block_m), math.ceil(n / c.block_n)
    tiles = pid_m * pid_n
    k_pad = math.ceil(k / c.block_k) * c.block_k
    tile_flops = FMA_FLOPS * c.block_m * c.block_n * k_pad
    tile_smem = (c.block_m * elem_bytes + c.block_n * b) * k_pad
    per_sm_peak = mach.peak_flop_per_s / mach.sms
    # every program reads its own panels (edge panels clipped): the no-reuse traffic, shared per program
    own_panels = batch * (m * k * pid_n * elem_bytes + k * n * pid_m * b) / w.programs
    c_bytes = batch * m * n * elem_bytes / w.programs  # each program writes its C tile once
    per_group = c.group_m * pid_n
    full_groups = pid_m // c.group_m  # groups of GROUP_M row blocks; a last, shorter one follows if any

    def wave(lo: int, size: int) -> tuple[int, int, float, float, float, float]:
        rows, cols = _wave_panels(lo, lo + size, tiles, pid_m, pid_n, c.group_m)
        shared = (min(rows * c.block_m, batch * m) * elem_bytes + min(cols * c.block_n, batch * n) * b) * k
        reads = _l2_reads(shared, own_panels * size, mach.l2_bytes)
        hbm = reads + c_bytes * size
        rounds = math.ceil(size / mach.sms)
        smem_s = rounds * tile_smem / mach.smem_bytes_per_s_per_sm if mach.smem_bytes_per_s_per_sm else 0.0
        return (size, rounds, rounds * tile_flops / per_sm_peak, smem_s, hbm / mach.hbm_bytes_per_s, hbm)

    # A wave inside one matrix of the batch that touches only full groups reads the same panels as
    # any other wave of its size starting at the same offset in a group (Triton's grouped order
    # repeats group by group), so its WaveTime is made once per (offset, size): a long sequence's
    # thousands of waves cost a few distinct ones. The result is the same object, bit for bit.
    same: dict[tuple[int, int], tuple] = {}
    out, lo = [], 0
    for size in w.sizes():
        in_batch = lo % tiles
        if in_batch + size <= tiles and (in_batch + size - 1) // per_group < full_groups:
            key = (in_batch % per_group, size)
            wt = same.get(key)
            if wt is None:
                wt = same[key] = wave(lo, size)
        else:
            wt = wave(lo, size)
        out.append(wt)
        lo += size
    return out


def split_seconds(
    roofs: Iterable[tuple[float, float, float]],
    split: int,
    partial_sum_bytes: int,
    hbm_bytes_per_s: float,
    overhead_s: float,
) -> float:
    """A GEMM's seconds from its waves' ``(compute_s, smem_s, hbm_s)`` roofs, its K loop cut ``split`` ways.

    ``split == 1``: ``sum(max(roofs)) + overhead``, :attr:`GemmKernel.time_s`. Otherwise each wave's
    compute and shared-memory roofs shrink by ``split``, and the fp32 partial sums
    (``partial_sum_bytes``, written and read back) cross HBM: ``sum(max(c / s, m / s, h)) +
    partial_sum_bytes / hbm_bytes_per_s + overhead`` (seconds).
    """
    if split == 1:
        return sum(max(r) for r in roofs) + overhead_s
    waves_s = sum(max(c / split, m / split, h) for c, m, h in roofs)
    return waves_s + partial_sum_bytes / hbm_bytes_per_s + overhead_s


def gemm_kernel(
    m: int,
    k: int,
    n: int,
    profile: HardwareProfile,
    *,
    dtype: str = "bfloat16",
    batch: int = 1,
    config: GemmConfig | None = None,
    registers_per_thread: int | None = None,
    b_bytes: float | None = None,
) -> GemmKernel:
    """The Triton GEMM kernel for ``batch x [M, K] @ [K, N]`` on ``profile``, with its predicted time.

    With no ``config``, Inductor's candidates are compared (:func:`choose_gemm_config`).

    Parameters
    ----------
    m, k, n, batch : int
        Sizes; ``2 * batch * M * K * N`` FLOPs.
    profile : HardwareProfile
        A GPU profile with a ``simt`` section.
    dtype : str
        Operand dtype (its width sets the bytes; its peak the compute roof).
    config : GemmConfig, optional
    registers_per_thread : int, optional
        Override the estimate of :func:`~dfx.arch.gpu.configs.gemm_registers_per_thread`.
    b_bytes : float, optional
        Bytes per element of B as stored where it is narrower or wider than ``dtype`` (weight-only
        quantisation: int4 weights 0.5, dequantised in registers after the load; compute stays in
        ``dtype``). Default: ``dtype``'s width. NB: configs are still fitted at ``dtype``'s width.

    Raises
    ------
    DfxError
        Bad sizes, a profile without ``simt``, or a config that cannot fit on an SM.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> kern = gemm_kernel(4096, 4096, 4096, load_profile("h100"), config=GemmConfig(128, 128, 64, 5, 8))
    >>> kern.programs, kern.occupancy.blocks_per_sm, kern.waves.count, kern.waves.tail_programs
    (1024, 1, 8, 100)
    """
    if min(m, k, n, batch) < 1:
        raise DfxError(f"GEMM sizes must be >= 1, got M={m}, K={k}, N={n}, batch={batch}")
    if config is None:
        config = choose_gemm_config(m, k, n, dtype, profile, batch=batch, b_bytes=b_bytes)
        return _evaluate(
            m,
            k,
            n,
            batch,
            dtype,
            profile,
            config,
            registers_per_thread,
            len(fitting_gemm_configs(m, k, n, dtype, profile)),
            b_bytes=b_bytes,
        )
    return _evaluate(m, k, n, batch, dtype, profile, config, registers_per_thread, 1, b_bytes=b_bytes)


def gemm_kernels(
    m: int,
    k: int,
    n: int,
    profile: HardwareProfile,
    configs: Sequence[GemmConfig],
    *,
    dtype: str,
    batch: int = 1,
    b_bytes: float | None = None,
) -> list[GemmKernel]:
    """``[gemm_kernel(m, k, n, profile, dtype=dtype, batch=batch, config=c) for c in configs]``, the
    machine's figures looked up once for all of them (an autotuner times every candidate).

    Raises
    ------
    DfxError
        As :func:`gemm_kernel`.
    """
    if min(m, k, n, batch) < 1:
        raise DfxError(f"GEMM sizes must be >= 1, got M={m}, K={k}, N={n}, batch={batch}")
    env = _env(profile, dtype)
    return [_evaluate(m, k, n, batch, dtype, profile, c, None, 1, env, b_bytes=b_bytes) for c in configs]


def _env(profile: HardwareProfile, dtype: str) -> tuple[SimtSpec, str, int, _Machine]:
    """``(simt_spec, dtype's name, its bytes, _machine)``: what a GEMM reads of the machine, once per
    (profile, dtype) in a process (keyed like :data:`_LAUNCHES`, cleared with it)."""
    key = ("gemm", id(profile), dtype)
    hit = _SIMT_ENVS.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1]
    spec = simt_spec(profile)
    name, elem = _dtype_bytes(dtype)
    env = spec, name, elem, _machine(profile, spec, name)
    if len(_SIMT_ENVS) >= _LAUNCHES_MAX:
        _SIMT_ENVS.clear()
    _SIMT_ENVS[key] = (profile, env)
    return env


# A config's registers, shared memory and occupancy depend on the config, the machine and the operand
# width only, not on the GEMM's sizes: an autotune of every GEMM of a sweep meets the same ~20 configs
# per machine again and again. Keyed by the profile's identity (the entry holds the profile, so its id
# is not recycled); bounded, and cleared with the GEMM plans (dfx.arch.gpu.plan.clear_gemm_plans).
_LAUNCHES: dict[tuple, tuple[HardwareProfile, int, int, Occupancy]] = {}
_LAUNCHES_MAX = 1 << 14


# The pointwise and reduction kernels' machine figures per (profile, dtype) and block occupancies per
# (profile, threads, registers, shared memory): _simt_env, _simt_occupancy. Cleared with the launches.
_SIMT_ENVS: dict[tuple, tuple[HardwareProfile, tuple]] = {}
_SIMT_OCCUPANCY: dict[tuple, tuple[HardwareProfile, Occupancy]] = {}


def clear_launches() -> None:
    """Forget every config's occupancy, and every GEMM's fitting configs, worked out in this process (the
    pointwise and reduction kernels' machine figures and occupancies too)."""
    _LAUNCHES.clear()
    _SIMT_ENVS.clear()
    _SIMT_OCCUPANCY.clear()
    _FITTING.clear()
    _TABLES.clear()


def _occupied(profile, c: GemmConfig, regs, env) -> tuple[int, int, Occupancy]:
    spec, _, elem, _ = env
    key = (id(profile), elem, c) if regs is None else None
    hit = _LAUNCHES.get(key) if key else None
    if hit is not None and hit[0] is profile:
        return hit[1:]
    lim = spec.limits
    regs = gemm_registers_per_thread(c, spec.warp_size, lim.max_registers_per_thread) if regs is None else regs
    smem = gemm_shared_memory_bytes(c, elem)
    occ = occupancy(
        spec, threads_per_block=c.num_warps * spec.warp_size, registers_per_thread=regs, shared_memory_bytes=smem
    )
    if key:
        if len(_LAUNCHES) >= _LAUNCHES_MAX:
            _LAUNCHES.clear()
        _LAUNCHES[key] = (profile, regs, smem, occ)
    return regs, smem, occ


def _launch(m, n, batch, profile, c: GemmConfig, regs, env) -> tuple[int, int, Occupancy, Waves]:
    """Registers, shared memory, occupancy and waves of ``c``; raises as :func:`gemm_kernel` where it cannot run."""
    spec = env[0]
    regs, smem, occ = _occupied(profile, c, regs, env)
    if occ.blocks_per_sm < 1:
        raise DfxError(
            f"config {c.to_dict()} cannot run on {profile.id}: no block fits on an SM ({occ.to_dict()['by_limit']})"
        )
    programs = batch * math.ceil(m / c.block_m) * math.ceil(n / c.block_n)
    return regs, smem, occ, waves(programs, spec.sms, occ.blocks_per_sm)


def _evaluate(
    m, k, n, batch, dtype, profile, c: GemmConfig, regs, chosen_from, env=None, launch=None, rows=None, b_bytes=None
) -> GemmKernel:
    env = _env(profile, dtype) if env is None else env
    spec, name, elem, mach = env
    regs, smem, occ, w = _launch(m, n, batch, profile, c, regs, env) if launch is None else launch
    notes = () if mach.peak_dtype == name else (f"peak of {mach.peak_dtype} used for {name}",)
    if b_bytes is not None and b_bytes != elem:
        notes += (f"B read as stored, {b_bytes:g} bytes per element (computed in {name})",)
    return GemmKernel(
        m,
        k,
        n,
        batch,
        name,
        profile.id,
        c,
        regs,
        smem,
        occ,
        w,
        _gemm_waves(m, k, n, batch, elem, c, w, mach, rows, b_bytes),
        mach.overhead_s,
        mach.peak_flop_per_s,
        spec.sms,
        chosen_from,
        notes,
    )


# Floors are computed in a different order of operations than the wave sums they bound; this margin
# (far above the rounding of a sum of MAX_WAVES terms, ~1e-10) keeps them below in floating point.
_FLOOR_MARGIN = 1 - 1e-6


def autotune_gemm(
    m: int,
    k: int,
    n: int,
    profile: HardwareProfile,
    configs: Sequence[GemmConfig],
    *,
    dtype: str,
    batch: int = 1,
    split_of,
    partial_sum_bytes_per_element: int,
    b_bytes: float | None = None,
) -> tuple[GemmKernel, tuple[int, float]]:
    """The kernel :func:`autotune_pick` keeps among ``configs``, timing only the configs needed to know it.

    Same answer as ``kernels = gemm_kernels(...)``, each timed split ``split_of`` ways
    (:func:`split_seconds`), then :func:`autotune_pick`, without building a kernel record per
    candidate. A config's time is bounded below, before its waves are built, by its *floor*:
    ``overhead + max(R * tile FLOPs / per-SM peak / split, R * tile shared-memory bytes / per-SM
    shared-memory bandwidth / split, HBM bytes / HBM bandwidth) + partial-sum bytes / HBM bandwidth``
    (:func:`split_seconds`), with ``R = ceil(programs / SMs)`` (every wave's rounds are
    ``ceil(size / SMs)``, and they add up to at least ``R``). The HBM bytes: every A and B panel read
    and every C tile written once, ``batch * (M*K + K*N + M*N) * elem``; where the whole grid runs in
    one wave, that wave's bytes as :func:`_gemm_wave_rows` counts them (its panels beyond L2 read
    again, :func:`_l2_reads`), so a one-wave config's floor is its time (less the margin).

    The pick is the first config, in the tie-break order (largest ``BM * BN``, then largest
    ``BLOCK_K``, then the order given), whose time is within the tie tolerance of the best time
    ``best``. The config with the least floor is timed first; then the search walks the tie-break
    order and settles each config with two bounds on ``best``: an upper one ``U`` (the least time
    found so far) and a lower one ``L`` (the least of the times found and of the floors of the
    configs not timed). A config whose floor, or time, exceeds ``U * (1 + tol)`` cannot tie; one
    whose time is at most ``L * (1 + tol)`` surely ties, and is the pick. In between, the untimed
    config with the least floor is timed (raising ``L`` or lowering ``U``) until one of the two
    holds. On the bench sweep's 432 GEMMs this times 1.6 configs a GEMM of 18.9 (one where the
    least floor is the pick). Floating point: ``L <= best <= U`` hold as floats (each floor is
    below its time: :data:`_FLOOR_MARGIN`), and ``x * (1 + tol)`` is monotone in ``x``, so each
    comparison agrees with :func:`autotune_pick`'s ``t <= best * (1 + tol)``.

    Parameters
    ----------
    split_of : callable ``(programs, block_k, sms) -> int``
        The split-K factor the kernel will run with (1 for none).
    partial_sum_bytes_per_element : int
        Bytes of one split-K partial sum (4, fp32); a split ``s`` moves ``2 * (s - 1) * batch * M * N``
        of them (:func:`split_seconds`).
    b_bytes : float, optional
        B's bytes per element as stored (:func:`gemm_kernel`); its panels' bytes in every floor too.

    Returns
    -------
    (GemmKernel, (split, seconds))
        The winner (built in full; the others are timed from their waves' roofs alone) and its timing.

    Raises
    ------
    DfxError
        As :func:`gemm_kernels` (every config's launch is checked, in order, before any is timed).
    """
    if min(m, k, n, batch) < 1:
        raise DfxError(f"GEMM sizes must be >= 1, got M={m}, K={k}, N={n}, batch={batch}")
    env = _env(profile, dtype)
    _, _, elem, mach = env
    b = elem if b_bytes is None else b_bytes
    sms = mach.sms
    table = _config_table(profile, configs, env)
    hbm_floor_s = batch * (m * k * elem + k * n * b + m * n * elem) / mach.hbm_bytes_per_s
    per_sm_peak = mach.peak_flop_per_s / sms
    smem_bw = mach.smem_bytes_per_s_per_sm
    partial_unit = 2 * batch * m * n * partial_sum_bytes_per_element  # a split's fp32 partial sums, per extra slice
    panels = batch * (m * elem + n * b) * k  # every A row panel and B column panel once
    occupied, floors, splits = [], [], []
    for c, occ_entry, block_m, block_n, _, blocks, _ in table.rows:
        programs = batch * -(-m // block_m) * -(-n // block_n)
        if blocks < 1 or sms < 1 or -(-programs // (sms * blocks)) > MAX_WAVES:
            _launch(m, n, batch, profile, c, None, env)  # raises, naming the config and the limit
        occupied.append((occ_entry, programs))
    # every config's launch is checked, in order, before any is timed (as gemm_kernels builds them)
    for (_, _, block_m, block_n, block_k, blocks, _), (_, programs) in zip(table.rows, occupied):
        rounds = -(-programs // sms)
        k_pad = -(-k // block_k) * block_k
        split = split_of(programs, block_k, sms)
        splits.append(split)
        compute_s = rounds * (FMA_FLOPS * block_m * block_n * k_pad) / per_sm_peak / split
        smem_s = rounds * ((block_m * elem + block_n * b) * k_pad) / smem_bw / split if smem_bw else 0.0
        hbm_s = hbm_floor_s
        if programs <= sms * blocks:  # one wave holding the grid: _gemm_wave_rows' wave, its L2 spill too
            unshared = batch * (m * k * -(-n // block_n) * elem + k * n * -(-m // block_m) * b)
            hbm_s = (_l2_reads(panels, unshared, mach.l2_bytes) + batch * m * n * elem) / mach.hbm_bytes_per_s
        partial_s = (split - 1) * partial_unit / mach.hbm_bytes_per_s  # split_seconds adds it whole
        floors.append((max(compute_s, smem_s, hbm_s) + partial_s) * _FLOOR_MARGIN + mach.overhead_s)
    timed: dict[int, tuple[int, float]] = {}
    rows: dict[int, list] = {}  # each timed config's wave rows: the winner's become its WaveTimes
    launches: dict[int, tuple] = {}

    def time(i: int) -> float:
        (regs, smem, occ), programs = occupied[i]
        launches[i] = (regs, smem, occ, waves(programs, sms, occ.blocks_per_sm))
        rows[i] = _gemm_wave_rows(m, k, n, batch, elem, configs[i], launches[i][3], mach, b_bytes)
        split = splits[i]
        seconds = split_seconds(
            [r[2:5] for r in rows[i]], split, (split - 1) * partial_unit, mach.hbm_bytes_per_s, mach.overhead_s
        )
        timed[i] = (split, seconds)
        return seconds

    ties = table.ties  # autotune_pick's order (sorted is stable: the order given last)
    tol = 1 + _TIE_TOLERANCE
    by_floor = sorted(range(len(configs)), key=lambda i: (floors[i], ties[i]))
    least = 0  # by_floor[least:] holds every config not timed (and some timed ones)
    best = time(by_floor[0])  # U: the least time found (the least floor's first: often the best)
    win = None
    for i in table.tie_order:
        if floors[i] > best * tol:
            continue  # slower than the best found by more than the tolerance: cannot tie
        t = timed[i][1] if i in timed else time(i)
        best = min(best, t)
        while t <= best * tol:
            while least < len(by_floor) and by_floor[least] in timed:
                least += 1
            low = best if least == len(by_floor) else min(best, floors[by_floor[least]])  # L
            if t <= low * tol:
                win = i  # within the tolerance of every time there is: ties, and nothing before it does
                break
            best = min(best, time(by_floor[least]))
        if win is not None:
            break
    kern = _evaluate(m, k, n, batch, dtype, profile, configs[win], None, 1, env, launches[win], rows[win], b_bytes)
    return kern, timed[win]


class _ConfigTable:
    """What :func:`autotune_gemm` reads of its configs on one machine and operand width, whatever the
    GEMM's sizes: per config ``(config, _occupied's entry, block_m, block_n, block_k, blocks per SM,
    tie key)``, and the configs in :func:`autotune_pick`'s tie-break order."""

    __slots__ = ("configs", "profile", "rows", "ties", "tie_order")

    def __init__(self, profile: HardwareProfile, configs: Sequence[GemmConfig], env) -> None:
        self.profile, self.configs = profile, tuple(configs)
        self.rows = []
        for c in self.configs:
            occ = _occupied(profile, c, None, env)
            tie = (-c.block_m * c.block_n, -c.block_k)
            self.rows.append((c, occ, c.block_m, c.block_n, c.block_k, occ[2].blocks_per_sm, tie))
        self.ties = [row[6] for row in self.rows]
        self.tie_order = sorted(range(len(self.rows)), key=self.ties.__getitem__)


# (id(profile), operand bytes, the configs' ids) -> their table; an entry holds the profile and the
# configs, so no id in its key is recycled while it lives. Cleared with the launches.
_TABLES: dict[tuple, _ConfigTable] = {}


def _config_table(profile: HardwareProfile, configs: Sequence[GemmConfig], env) -> _ConfigTable:
    key = (id(profile), env[2], *map(id, configs))
    table = _TABLES.get(key)
    if table is None or table.profile is not profile:
        if len(_TABLES) >= _LAUNCHES_MAX:
            _TABLES.clear()
        table = _TABLES[key] = _ConfigTable(profile, configs, env)
    return table


_FITTING: dict[tuple, tuple[HardwareProfile, list[GemmConfig]]] = {}  # as _LAUNCHES, by size hints


def fitting_gemm_configs(m: int, k: int, n: int, dtype: str, profile: HardwareProfile) -> list[GemmConfig]:
    """Inductor's candidates that fit one SM (shared memory, registers) and would not surely spill.

    Memoized per machine, operand width and :func:`~dfx.arch.gpu.configs.gemm_size_hints` (the
    candidates depend on the sizes through those alone); a new list each call.
    """
    spec = simt_spec(profile)
    _, elem = _dtype_bytes(dtype)
    key = (id(profile), elem, gemm_size_hints(m, k, n))
    hit = _FITTING.get(key)
    if hit is None or hit[0] is not profile:
        if len(_FITTING) >= _LAUNCHES_MAX:
            _FITTING.clear()
        hit = _FITTING[key] = (profile, _fitting(m, k, n, elem, spec))
    return list(hit[1])


def _fitting(m: int, k: int, n: int, elem: int, spec: SimtSpec) -> list[GemmConfig]:
    lim = spec.limits
    out = []
    for c in gemm_candidates(m, k, n):
        w, cap = spec.warp_size, lim.max_registers_per_thread
        if gemm_spills(c, w, cap) or gemm_shared_memory_bytes(c, elem) > lim.shared_memory_per_block_optin_bytes:
            continue  # Inductor's _prune_reg_spill_configs and _prune_exceeding_max_shared_mem_configs
        regs_per_warp = (
            math.ceil(gemm_registers_per_thread(c, w, cap) * w / lim.register_allocation_unit)
            * lim.register_allocation_unit
        )
        if (
            regs_per_warp * math.ceil(c.num_warps / lim.register_sub_partitions) * lim.register_sub_partitions
            > lim.max_registers_per_block
        ):
            continue
        out.append(c)
    return out


def choose_gemm_config(
    m: int, k: int, n: int, dtype: str, profile: HardwareProfile, *, batch: int = 1, b_bytes: float | None = None
) -> GemmConfig:
    """The config Inductor's autotuning would keep, with dfx's wave model as the benchmark.

    Candidates: :func:`~dfx.arch.gpu.configs.gemm_candidates` that fit an SM. The fastest predicted
    wins; configs within 1% of it count as tied, and the tie goes to the largest output tile
    (``BM * BN``: the operand reuse the model's roofs under-count), then the largest ``BLOCK_K``,
    then Inductor's order.

    Raises
    ------
    DfxError
        If no candidate fits (never for the shipped GPU profiles).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> choose_gemm_config(4096, 4096, 4096, "bf16", load_profile("h100")).to_dict()["BLOCK_M"]
    128
    """
    fitting = fitting_gemm_configs(m, k, n, dtype, profile)
    if not fitting:
        raise DfxError(f"no Inductor GEMM config fits an SM of {profile.id} for M={m}, K={k}, N={n}")
    timed = [(_evaluate(m, k, n, batch, dtype, profile, c, None, 1, b_bytes=b_bytes).time_s, c) for c in fitting]
    return fitting[autotune_pick(timed)]


def autotune_pick(timed: Sequence[tuple[float, GemmConfig]]) -> int:
    """The index of the config an autotuner keeps among ``(predicted seconds, config)`` pairs.

    The fastest wins; configs within 1% of it count as tied, and the tie goes to the largest output
    tile (``BM * BN``: the operand reuse the model's roofs under-count), then the largest
    ``BLOCK_K``, then the order given.
    """
    best = min(t for t, _ in timed)
    tied = [
        (-c.block_m * c.block_n, -c.block_k, i) for i, (t, c) in enumerate(timed) if t <= best * (1 + _TIE_TOLERANCE)
    ]
    return min(tied)[-1]


def gemm_kernel_time_s(
    m: int, k: int, n: int, dtype: str, profile: HardwareProfile, *, batch: int = 1, config: GemmConfig | None = None
) -> float:
    """Predicted seconds of the Triton GEMM kernel (its waves plus the per-kernel overhead).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> h100 = load_profile("h100")
    >>> gemm_kernel_time_s(4096, 4096, 4096, "bf16", h100) > 2 * 4096**3 / 989.4e12
    True
    """
    return gemm_kernel(m, k, n, profile, dtype=dtype, batch=batch, config=config).time_s


# -- pointwise and reduction ------------------------------------------------------------------------
@dataclass(frozen=True)
class SimtKernel:
    """A pointwise or reduction Triton kernel: its config, grid, occupancy, waves and time."""

    kind: str  # "pointwise" or "reduction"
    shape: tuple[int, ...]  # (N,) or (rows, cols)
    dtype: str
    profile_id: str
    config: PointwiseConfig | ReductionConfig
    block: tuple[int, ...]  # elements one program covers per step: (XBLOCK,) or (XBLOCK, RBLOCK)
    loop_iterations: int  # steps one program takes (1 unless a looped reduction)
    registers_per_thread: int
    shared_memory_bytes: int
    occupancy: Occupancy
    waves: Waves
    wave_times: tuple[WaveTime, ...]
    overhead_s: float
    flops: float
    bytes: float
    simt_efficiency: float  # useful lane-cycles / issued lane-cycles (divergence)
    sms: int
    chosen_from: int = 1

    @property
    def grid(self) -> tuple[int, ...]:
        return (self.waves.programs,)

    @property
    def masked_lane_fraction(self) -> float:
        padded = tuple(b * (self.loop_iterations if i == 1 else 1) for i, b in enumerate(self.block))
        return masked_fraction(self.shape, padded)

    @property
    def time_s(self) -> float:
        return sum(w.time_s for w in self.wave_times) + self.overhead_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "hardware": self.profile_id,
            "config": self.config.to_dict(),
            "chosen_from": self.chosen_from,
            "grid": list(self.grid),
            "programs": self.waves.programs,
            "program": {"block": list(self.block), "loop_iterations": self.loop_iterations},
            "warps_per_program": self.config.num_warps,
            "warp_size_threads": self.occupancy.warp_size_threads,
            "threads_per_program": self.config.num_warps * self.occupancy.warp_size_threads,
            "registers_per_thread": self.registers_per_thread,
            "registers_estimated": True,
            "shared_memory_per_program_bytes": self.shared_memory_bytes,
            "occupancy_blocks_per_sm": self.occupancy.blocks_per_sm,
            "occupancy_limited_by": [b.value for b in self.occupancy.binding],
            "occupancy": self.occupancy.to_dict(),
            "sms": self.sms,
            "waves": self.waves.count,
            "wave": self.waves.to_dict(),
            "masked_lane_fraction": self.masked_lane_fraction,
            "simt_efficiency": self.simt_efficiency,
            "flops": self.flops,
            "hbm_bytes": self.bytes,
            "overhead_s": self.overhead_s,
            "time_s": self.time_s,
            "wave_times": [w.to_dict() for w in _collapse(self.wave_times)],
        }


def _simt_waves(
    w: Waves, per_program_flops: float, per_program_bytes: float, mach: _Machine, vector_peak: float
) -> tuple[WaveTime, ...]:
    per_sm = vector_peak / mach.sms
    out = []
    for size in w.sizes():
        rounds = math.ceil(size / mach.sms)
        hbm = size * per_program_bytes
        out.append(WaveTime(size, rounds, rounds * per_program_flops / per_sm, 0.0, hbm / mach.hbm_bytes_per_s, hbm))
    return tuple(out)


def _simt_env(profile: HardwareProfile, dtype: str) -> tuple[SimtSpec, str, _Machine, float]:
    """What a pointwise or reduction kernel reads of the machine at an operand dtype, whatever its sizes:
    ``(simt_spec, dtype's name, _machine, vector peak FLOP/s)``, once per (profile, dtype) in a process
    (keyed like :data:`_LAUNCHES`, cleared with it)."""
    key = (id(profile), dtype)
    hit = _SIMT_ENVS.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1]
    spec = simt_spec(profile)
    name, _ = _dtype_bytes(dtype)
    env = spec, name, _machine(profile, spec, name), profile.peak(_VECTOR_DTYPE).flop_per_s
    if len(_SIMT_ENVS) >= _LAUNCHES_MAX:
        _SIMT_ENVS.clear()
    _SIMT_ENVS[key] = (profile, env)
    return env


def _simt_occupancy(profile: HardwareProfile, spec: SimtSpec, threads: int, regs: int, smem: int) -> Occupancy:
    """:func:`occupancy` of a SIMT kernel's block on ``profile``, once per (profile, threads, registers,
    shared memory) in a process (a frozen record: callers share it; keyed like :data:`_LAUNCHES`)."""
    key = (id(profile), threads, regs, smem)
    hit = _SIMT_OCCUPANCY.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1]
    occ = occupancy(spec, threads_per_block=threads, registers_per_thread=regs, shared_memory_bytes=smem)
    if len(_SIMT_OCCUPANCY) >= _LAUNCHES_MAX:
        _SIMT_OCCUPANCY.clear()
    _SIMT_OCCUPANCY[key] = (profile, occ)
    return occ


def _simt_kernel(
    kind, shape, dtype, profile, cfg, block, iters, smem, regs, flops_per_program, bytes_total, eff, chosen_from
):
    spec, name, mach, vector_peak = _simt_env(profile, dtype)
    occ = _simt_occupancy(profile, spec, cfg.num_warps * spec.warp_size, regs, smem)
    w = waves(math.ceil(shape[0] / block[0]), spec.sms, occ.blocks_per_sm)
    # each program's bytes are the kernel's bytes shared evenly (masked lanes move nothing)
    per_program_bytes = bytes_total / w.programs
    return SimtKernel(
        kind,
        shape,
        name,
        profile.id,
        cfg,
        block,
        iters,
        regs,
        smem,
        occ,
        w,
        _simt_waves(w, flops_per_program, per_program_bytes, mach, vector_peak),
        mach.overhead_s,
        flops_per_program * w.programs,
        bytes_total,
        eff,
        spec.sms,
        chosen_from,
    )


def pointwise_kernel(
    numel: int,
    profile: HardwareProfile,
    *,
    dtype: str = "bfloat16",
    inputs: int = 1,
    outputs: int = 1,
    flops_per_element: float = 1.0,
    branch: tuple[float, float, float] | None = None,
    config: PointwiseConfig | None = None,
    registers_per_thread: int = _SIMT_REGS_ESTIMATE,
    hbm_bytes: float | None = None,
) -> SimtKernel:
    """A fused 1-D elementwise Triton kernel over ``numel`` elements.

    Each program covers ``XBLOCK`` elements; bytes = ``numel * (inputs + outputs) * itemsize``.
    ``branch = (p, then_flops, else_flops)`` adds an ``if`` each lane takes with probability ``p``
    independently: a warp whose lanes split runs both sides (:func:`~dfx.arch.gpu.simt.divergent_warp_cost`),
    so the issued FLOPs per element are that expected cost and ``simt_efficiency`` the useful share.
    With no ``config``, Inductor's two candidates are compared and the faster kept. ``hbm_bytes``
    replaces the bytes (a fused kernel's off-chip bytes, from the compile stage).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> k = pointwise_kernel(1 << 20, load_profile("h100"))
    >>> k.config.xblock, k.config.num_warps, k.waves.programs      # 2**20 / 1024
    (1024, 4, 1024)
    """
    if numel < 1 or inputs < 0 or outputs < 1 or flops_per_element < 0:
        raise DfxError(
            f"pointwise: need numel >= 1, inputs >= 0, outputs >= 1, flops >= 0; got {numel}, {inputs}, {outputs}, {flops_per_element}"
        )
    name, elem = _dtype_bytes(dtype)
    issued = useful = flops_per_element
    if branch is not None:
        p, then_f, else_f = branch
        lanes = simt_spec(profile).warp_size  # a 64-lane wavefront diverges more often than a 32-lane warp
        issued = flops_per_element + divergent_warp_cost(p, then_f, else_f, lanes)
        useful = flops_per_element + p * then_f + (1 - p) * else_f
    eff = useful / issued if issued else 1.0
    bytes_total = numel * (inputs + outputs) * elem if hbm_bytes is None else hbm_bytes
    configs = [config] if config is not None else pointwise_candidates(numel)
    kernels = [
        _simt_kernel(
            "pointwise",
            (numel,),
            name,
            profile,
            c,
            (c.xblock,),
            1,
            0,
            registers_per_thread,
            c.xblock * issued,
            bytes_total,
            eff,
            len(configs),
        )
        for c in configs
    ]
    return min(kernels, key=lambda kern: kern.time_s)


def reduction_kernel(
    rows: int,
    cols: int,
    profile: HardwareProfile,
    *,
    dtype: str = "bfloat16",
    flops_per_element: float = 1.0,
    config: ReductionConfig | None = None,
    registers_per_thread: int = _SIMT_REGS_ESTIMATE,
    hbm_bytes: float | None = None,
) -> SimtKernel:
    """A Triton inner reduction: each of ``rows`` rows of ``cols`` contiguous elements reduced to one.

    A program takes ``XBLOCK`` rows and walks the row in ``R0_BLOCK`` steps (one step when
    persistent). Bytes = ``rows * cols * itemsize`` read + ``rows * itemsize`` written. Shared
    memory: the cross-warp combine, ``num_warps * XBLOCK * 4`` bytes (an estimate of what
    ``tl.reduce`` allocates; 0 with one warp). ``hbm_bytes`` replaces the bytes (a fused kernel's).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> k = reduction_kernel(4096, 4096, load_profile("h100"))
    >>> k.config.to_dict()["R0_BLOCK"], k.loop_iterations, k.waves.programs   # 4096 rows, 1 per program
    (2048, 2, 4096)
    """
    if rows < 1 or cols < 1 or flops_per_element < 0:
        raise DfxError(f"reduction: need rows, cols >= 1 and flops >= 0; got {rows}, {cols}, {flops_per_element}")
    name, elem = _dtype_bytes(dtype)
    configs = [config] if config is not None else reduction_candidates(rows, cols)
    bytes_total = (rows * cols + rows) * elem if hbm_bytes is None else hbm_bytes
    kernels = []
    for c in configs:
        iters = math.ceil(cols / c.rblock)
        smem = c.num_warps * c.xblock * 4 if c.num_warps > 1 else 0
        flops = c.xblock * c.rblock * iters * flops_per_element
        kernels.append(
            _simt_kernel(
                "reduction",
                (rows, cols),
                name,
                profile,
                c,
                (c.xblock, c.rblock),
                iters,
                smem,
                registers_per_thread,
                flops,
                bytes_total,
                1.0,
                len(configs),
            )
        )
    return min(kernels, key=lambda kern: kern.time_s)
