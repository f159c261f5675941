"""Triton kernel configurations the way Inductor and Triton choose them (BLOCK sizes, warps, stages).

GEMMs. Inductor's Triton mm template (``max_autotune``) starts from one list of
``GemmConfig(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)`` (torch 2.13,
``torch/_inductor/template_heuristics/triton.py``, ``BaseConfigHeuristic.mm_configs``, copied in
:data:`INDUCTOR_MM_CONFIGS`), scales each to the problem (``_scale_mm_configs``: every block side
is capped at the next power of two of its dimension, at least 16), caps ``num_warps`` at
``BLOCK_M * BLOCK_N / 256`` (``_finalize_mm_configs``: a warp computes a 16 x 16 tile), drops
duplicates, and then *benchmarks* the survivors on the GPU and keeps the fastest. dfx does the same
with its wave-time model standing in for the benchmark (:func:`dfx.arch.gpu.kernel.choose_gemm_config`).
Triton's own matmul tutorial (``python/tutorials/03-matrix-multiplication.py``, ``get_cuda_autotune_config``)
autotunes over a similar list; ``GROUP_M = 8`` grouped program ordering is common to both.

Pointwise and reduction kernels follow Inductor's runtime heuristics
(``torch/_inductor/runtime/triton_heuristics.py``: ``pointwise``, ``triton_config``,
``triton_config_reduction``, ``_num_warps``, ``_reduction_configs``, ``_persistent_reduction_configs``;
persistent when the reduction has at most 1024 elements, ``choices.should_use_persistent_reduction``).
Only the 1-D pointwise and the inner (contiguous) reduction cases are modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.errors import DfxError

__all__ = [
    "INDUCTOR_MM_CONFIGS",
    "GemmConfig",
    "ReductionConfig",
    "PointwiseConfig",
    "gemm_candidates",
    "gemm_registers_per_thread",
    "gemm_shared_memory_bytes",
    "next_power_of_2",
    "pointwise_candidates",
    "reduction_candidates",
]

_WARP_TILE_ELEMENTS = 256  # Inductor: "each warp computes a 16x16 tile = 256 elements"
_MIN_BLOCK = 16  # Inductor's min_block_size (and min_block_size_k for non-int8)
_MAX_REGS = 255  # Inductor's _prune_reg_spill_configs NUM_REG
_ACC_BYTES = 4  # the fp32 accumulator of tl.dot
# Registers a GEMM thread holds besides its accumulator (pointers, loop counters, operand
# fragments): an estimate, not a compiler count (Triton reports n_regs only after compiling).
_GEMM_BASE_REGS = 32


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (Inductor's ``next_power_of_2``); 1 for n <= 1."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class GemmConfig:
    """One Triton matmul configuration: block sizes, software pipeline depth, warps, group size."""

    block_m: int
    block_n: int
    block_k: int
    num_stages: int
    num_warps: int
    group_m: int = 8  # Inductor's GemmConfig default and Triton's tutorial GROUP_SIZE_M

    def __post_init__(self) -> None:
        if min(self.block_m, self.block_n, self.block_k, self.num_stages, self.num_warps, self.group_m) < 1:
            raise DfxError(f"GEMM config {self}: every field must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        return {
            "BLOCK_M": self.block_m,
            "BLOCK_N": self.block_n,
            "BLOCK_K": self.block_k,
            "num_stages": self.num_stages,
            "num_warps": self.num_warps,
            "GROUP_M": self.group_m,
        }


# torch 2.13 torch/_inductor/template_heuristics/triton.py, BaseConfigHeuristic.__init__, mm_configs:
# GemmConfig(block_m, block_n, block_k, num_stages, num_warps), in the file's order.
INDUCTOR_MM_CONFIGS: tuple[GemmConfig, ...] = tuple(
    GemmConfig(*c)
    for c in (
        (32, 32, 16, 1, 2),
        (32, 32, 128, 2, 4),
        (32, 64, 32, 5, 8),
        (64, 32, 32, 5, 8),
        (64, 32, 128, 5, 4),
        (64, 64, 16, 2, 4),
        (64, 64, 32, 2, 4),
        (64, 64, 64, 3, 8),
        (64, 64, 128, 5, 4),
        (64, 128, 32, 3, 4),
        (64, 128, 32, 4, 8),
        (64, 128, 64, 3, 4),
        (64, 128, 128, 4, 4),
        (128, 64, 32, 3, 4),
        (128, 64, 32, 4, 8),
        (128, 128, 32, 2, 8),
        (128, 128, 32, 3, 4),
        (128, 128, 64, 3, 4),
        (128, 128, 64, 5, 8),
        (128, 128, 128, 4, 8),
        (128, 256, 64, 4, 8),
    )
)


def gemm_size_hints(m: int, k: int, n: int) -> tuple[int, int, int]:
    """``(M, N, K)`` as :func:`gemm_candidates` sees them: each ``max(next_power_of_2(X), 16)``.

    The candidates depend on the sizes through these alone (GEMMs with equal hints have equal candidates).

    >>> gemm_size_hints(100, 4096, 1)
    (128, 16, 4096)

    Raises
    ------
    DfxError
        A size below 1.
    """
    if min(m, k, n) < 1:
        raise DfxError(f"GEMM M, K, N must be >= 1, got {m}, {k}, {n}")
    return max(next_power_of_2(m), _MIN_BLOCK), max(next_power_of_2(n), _MIN_BLOCK), max(next_power_of_2(k), _MIN_BLOCK)


def gemm_candidates(m: int, k: int, n: int, configs: tuple[GemmConfig, ...] = INDUCTOR_MM_CONFIGS) -> list[GemmConfig]:
    """Inductor's candidate configs for an ``[M, K] @ [K, N]`` GEMM, scaled and deduplicated.

    ``block_x = max(min(block_x, max(next_power_of_2(X), 16)), 16)`` per side
    (``_scale_mm_configs`` with scale 1), then ``num_warps = min(num_warps, BM * BN // 256)``
    (``_finalize_mm_configs``), keeping the first of equal configs.

    Examples
    --------
    >>> sorted({(c.block_m, c.block_n, c.block_k) for c in gemm_candidates(16, 16, 16)})   # all shrink
    [(16, 16, 16)]
    """
    hint_m, hint_n, hint_k = gemm_size_hints(m, k, n)
    seen: dict[tuple[int, ...], GemmConfig] = {}
    for c in configs:
        bm = max(min(c.block_m, hint_m), _MIN_BLOCK)
        bn = max(min(c.block_n, hint_n), _MIN_BLOCK)
        bk = max(min(c.block_k, hint_k), _MIN_BLOCK)
        warps = max(1, min(c.num_warps, bm * bn // _WARP_TILE_ELEMENTS))
        scaled = GemmConfig(bm, bn, bk, c.num_stages, warps, c.group_m)
        seen.setdefault((bm, bn, bk, c.num_stages, warps, c.group_m), scaled)
    return list(seen.values())


def gemm_shared_memory_bytes(config: GemmConfig, elem_bytes: int) -> int:
    """``num_stages * (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * bytes``: the operand ring buffer.

    Inductor's ``get_shared_memory_estimation`` adds 128 bytes for barriers; dfx leaves them out
    (the 1 KiB per-block reserve of the occupancy rules dwarfs them).

    Examples
    --------
    >>> gemm_shared_memory_bytes(GemmConfig(128, 128, 64, 3, 4), 2)   # 3 * (8192 + 8192) * 2
    98304
    """
    c = config
    return c.num_stages * (c.block_m * c.block_k + c.block_k * c.block_n) * elem_bytes


def gemm_registers_per_thread(config: GemmConfig, warp_size: int = 32, max_registers: int = _MAX_REGS) -> int:
    """Estimated registers per thread: the fp32 accumulator's share plus a fixed 32, capped at 255.

    ``ceil(BM * BN / (num_warps * warp_size))`` accumulator registers is Inductor's own lower bound
    (``_prune_reg_spill_configs``, 32-lane warps); the extra 32 (addresses, loop state, operand
    fragments) is a dfx estimate, not a compiler count. ``warp_size`` is 64 on AMD CDNA (a wavefront
    spreads the tile over twice the lanes), and ``max_registers`` the profile's cap (512 VGPRs there).

    Examples
    --------
    >>> gemm_registers_per_thread(GemmConfig(128, 128, 32, 3, 4))   # 16384 / 128 + 32
    160
    >>> gemm_registers_per_thread(GemmConfig(128, 128, 32, 3, 4), 64, 512)   # 16384 / 256 + 32
    96
    """
    acc = math.ceil(config.block_m * config.block_n / (config.num_warps * warp_size))
    return min(max_registers, acc + _GEMM_BASE_REGS)


def gemm_spills(config: GemmConfig, warp_size: int = 32, max_registers: int = _MAX_REGS) -> bool:
    """Inductor's sure-spill test: the accumulator alone needs more than 255 registers per thread
    (``max_registers`` of ``warp_size``-lane warps on another machine)."""
    return math.ceil(config.block_m * config.block_n / (config.num_warps * warp_size)) > max_registers


# -- pointwise -------------------------------------------------------------------------------------
_TRITON_MAX_BLOCK_X = 4096  # torch/_inductor/runtime/hints.py TRITON_MAX_BLOCK["X"] (CUDA)


@dataclass(frozen=True)
class PointwiseConfig:
    """A 1-D pointwise Triton config: ``XBLOCK`` elements per program, ``num_warps`` warps."""

    xblock: int
    num_warps: int

    def to_dict(self) -> dict[str, Any]:
        return {"XBLOCK": self.xblock, "num_warps": self.num_warps, "num_stages": 1}


def _num_warps(num_warps: int, max_num_warps: int = 8, min_num_warps: int = 2, register_intensive: bool = False) -> int:
    """Inductor's ``_num_warps`` for 32-lane warps: clamp, halve the cap if register intensive, power of 2."""
    if register_intensive:
        max_num_warps //= 2
    return next_power_of_2(min(max(num_warps, min_num_warps), max_num_warps))


def _pointwise_config(numel_hint: int, x: int, elements_per_warp: int) -> PointwiseConfig:
    """Inductor's ``triton_config`` for one dimension (no y/z, ``min_elem_per_thread = 0``)."""
    target = x if numel_hint >= x else x // 8
    x = min(x, numel_hint)
    while x < min(numel_hint, _TRITON_MAX_BLOCK_X) and x < target:
        x *= 2
    warps = _num_warps(x // elements_per_warp, min_num_warps=1)
    if x >= 128:  # "we still want at least 4 warps if there's enough elements per thread"
        warps = max(warps, 4)
    return PointwiseConfig(min(x, numel_hint), warps)


def pointwise_candidates(numel: int) -> list[PointwiseConfig]:
    """Inductor's two autotuned configs for a 1-D pointwise kernel of ``numel`` elements.

    ``bs = max(256, min(hint // 128, 1024))``; configs ``triton_config(hints, bs, 256 per warp)``
    and ``triton_config(hints, bs // 2, 64 per warp)`` (``pointwise`` with ``autotune_pointwise``,
    its default), size hint ``next_power_of_2(numel)``.

    Examples
    --------
    >>> [(c.xblock, c.num_warps) for c in pointwise_candidates(1 << 20)]   # bs = 1024
    [(1024, 4), (512, 8)]
    """
    if numel < 1:
        raise DfxError(f"a pointwise kernel needs >= 1 element, got {numel}")
    hint = next_power_of_2(numel)
    bs = max(256, min(hint // 128, 1024))  # Inductor's numel is the product of the (power-of-2) size hints
    found = [_pointwise_config(hint, bs, 256), _pointwise_config(hint, bs // 2, 64)]
    return list(dict.fromkeys(found))


# -- reduction -------------------------------------------------------------------------------------
_PERSISTENT_MAX_RNUMEL = 1024  # choices.should_use_persistent_reduction, ReductionHint.INNER
_MAX_PERSISTENT_BLOCK_NUMEL = 4096  # _persistent_reduction_configs
_MAX_R0_BLOCK = 2048  # _reduction_configs before Blackwell
_PERSISTENT_XBLOCKS = (1, 8, 32, 128)  # _persistent_reduction_configs xblock_vals (CUDA)


@dataclass(frozen=True)
class ReductionConfig:
    """An inner reduction config: ``XBLOCK`` rows per program, ``RBLOCK`` columns per loop step."""

    xblock: int
    rblock: int
    num_warps: int
    persistent: bool  # the whole row in registers, no loop over the reduction

    def to_dict(self) -> dict[str, Any]:
        return {
            "XBLOCK": self.xblock,
            "R0_BLOCK": self.rblock,
            "num_warps": self.num_warps,
            "num_stages": 1,
            "persistent": self.persistent,
        }


def _reduction_config(
    x_hint: int, r_hint: int, x: int, r: int, *, persistent: bool, num_warps: int | None = None, min_num_warps: int = 2
) -> ReductionConfig:
    """Inductor's ``triton_config_reduction`` for one x and one r dimension, inner hint."""
    x = min(x, x_hint)
    if num_warps is None:
        num_warps = r // 128  # ReductionHint.INNER: at least 8 elements per thread
    cap = 16 if r <= 8192 else 32
    warps = _num_warps(num_warps, max_num_warps=cap, min_num_warps=min_num_warps, register_intensive=persistent)
    return ReductionConfig(x, r, warps, persistent)


def reduction_candidates(rows: int, cols: int) -> list[ReductionConfig]:
    """Inductor's configs for reducing each of ``rows`` rows of ``cols`` contiguous elements.

    Persistent (``cols <= 1024``): ``R0_BLOCK = next_power_of_2(cols)``; with ``rnumel >= 256``
    one config (``XBLOCK = 1``, or ``min(1024 // rnumel, 8)`` rows on one warp when there are at
    least 1024 rows), else ``XBLOCK`` in (1, 8, 32, 128) with ``XBLOCK * rnumel <= 4096``.
    Looped (``cols > 1024``): the contiguous config, ``XBLOCK = 2 if rnumel <= 2048 else 1``,
    ``R0_BLOCK = min(rnumel, 2048)``. Warps ``rnumel // 128`` clamped to [2, 16] (8 when persistent).

    Examples
    --------
    >>> [c.to_dict()["R0_BLOCK"] for c in reduction_candidates(4096, 4096)]
    [2048]
    """
    if rows < 1 or cols < 1:
        raise DfxError(f"a reduction needs >= 1 row and column, got {rows} x {cols}")
    x_hint, r_hint = next_power_of_2(rows), next_power_of_2(cols)
    if cols > _PERSISTENT_MAX_RNUMEL:
        x = 2 if r_hint <= 2048 else 1
        return [_reduction_config(x_hint, r_hint, x, min(r_hint, _MAX_R0_BLOCK), persistent=False)]
    if r_hint >= 256:
        if x_hint // 8 < 128:
            return [_reduction_config(x_hint, r_hint, 1, r_hint, persistent=True)]
        return [
            _reduction_config(
                x_hint, r_hint, min(1024 // r_hint, 8), r_hint, persistent=True, num_warps=1, min_num_warps=1
            )
        ]
    xs = [x for x in _PERSISTENT_XBLOCKS if x == 1 or (r_hint * x <= _MAX_PERSISTENT_BLOCK_NUMEL and x <= x_hint)]
    return list(dict.fromkeys(_reduction_config(x_hint, r_hint, x, r_hint, persistent=True) for x in xs))
