"""Scratchpad tiling of a matmul: the tile a compiler would pick, its off-chip traffic and time.

Dimension letters: ``C[M, N] = A[M, K] @ B[K, N]``, ``batch`` independent copies (bmm). Output-
stationary loop nest over tiles (tm, tn, tk): for each output tile, stream the K dimension in
steps of tk, loading an A tile (tm x tk) and a B tile (tk x tn) per step; the output tile stays
in the scratchpad until its K loop ends, then is written once. Off-chip traffic (elements)::

    A is re-read once per column block, B once per row block, C written once:
    M*K*ceil(N/tn) + K*N*ceil(M/tm) + M*N

(ignores a partial-tile tail's padding; tk does not enter the traffic, only the working set)::

    working set = elem * buffers * (tm*tk + tk*tn) + acc * tm*tn,  buffers = 2 if double-buffered

The output tile is held at the accumulator's width ``acc`` (``Gemm.acc_bytes``): ``dfx tile``
accumulates bf16/fp16 (and fp8) inputs in fp32 and int8 in int32 (``--acc-dtype``; as a TPU MXU or
a tensor core accumulates), 4 bytes per output element where the inputs take 2; left unset, the
accumulator is the element width (what the compile stage's tiling still assumes). The output is
written off chip at the element width. Tile sides are multiples of the matrix array's side (``compute.array_rows`` /
``array_cols``: 8 on Spyre, 128 on a TPU MXU) unless they cover the whole dimension.

Time with the work divided across cores: the ``ceil(M/tm) * ceil(N/tn) * batch`` output tiles are
dealt to ``cores`` in waves; compute time = waves * 2*tm*tn*K / (peak / cores), memory time =
traffic / off-chip bandwidth (shared by every core); time = max of the two.
"""

from __future__ import annotations

from dfx.schema.bound import Bound  # the vocabulary itself: dfx.roofline would import the whole roofline

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from dfx.costs.terms import FMA_FLOPS
from dfx.errors import DfxError
from dfx.limits import MAX_DIM

__all__ = [
    "Gemm",
    "Machine",
    "TileChoice",
    "choose_tile",
    "evaluate_tile",
    "largest_square_tile",
    "offchip_elements",
    "working_set_bytes",
]


@dataclass(frozen=True)
class Gemm:
    """``batch`` copies of ``[M, K] @ [K, N]`` at ``elem_bytes`` per element, accumulated at
    ``acc_bytes`` per output element (``None``: at ``elem_bytes``)."""

    m: int
    k: int
    n: int
    elem_bytes: int = 2
    batch: int = 1
    name: str = "gemm"
    acc_bytes: int | None = None

    @property
    def accumulator_bytes(self) -> int:
        return self.elem_bytes if self.acc_bytes is None else self.acc_bytes

    def __post_init__(self) -> None:
        if min(self.m, self.k, self.n, self.elem_bytes, self.batch, self.accumulator_bytes) < 1:
            raise DfxError(f"GEMM {self.name}: M, K, N, element size and batch must be >= 1, got {self}")
        if max(self.m, self.k, self.n) > MAX_DIM:
            raise DfxError(f"GEMM {self.name}: M, K and N must be at most {MAX_DIM:,} (2**31 - 1); give smaller sizes")

    @property
    def flops(self) -> int:
        return FMA_FLOPS * self.batch * self.m * self.k * self.n  # 2*M*K*N per copy


@dataclass(frozen=True)
class Machine:
    """What tiling needs of a device: one core's scratchpad, core count, peak, off-chip bandwidth."""

    scratchpad_bytes: float
    cores: int
    peak_flop_per_s: float
    offchip_bytes_per_s: float
    granule_m: int = 1  # tile sides are multiples of these (the matrix array's rows / cols)
    granule_n: int = 1
    granule_k: int = 1


class RooflineTime:
    """``time_s`` and ``bound`` of a record with ``compute_time_s`` and ``memory_time_s``.

    Compute and memory overlap: the time is the larger; a tie is compute-bound (the roofline's rule).
    """

    compute_time_s: float
    memory_time_s: float

    @property
    def time_s(self) -> float:
        return max(self.compute_time_s, self.memory_time_s)

    @property
    def bound(self) -> Bound:
        return Bound.MEMORY if self.memory_time_s > self.compute_time_s else Bound.COMPUTE


@dataclass(frozen=True)
class TileChoice(RooflineTime):
    """One tiling of a GEMM on a machine, with its traffic, intensity, time and bound."""

    gemm: Gemm
    tm: int
    tn: int
    tk: int
    working_set_bytes: int
    scratchpad_bytes: float
    offchip_bytes: int
    intensity: float
    compute_time_s: float
    memory_time_s: float

    def to_dict(self) -> dict[str, Any]:
        g = self.gemm
        return {
            "name": g.name,
            "m": g.m,
            "k": g.k,
            "n": g.n,
            "batch": g.batch,
            "elem_bytes": g.elem_bytes,
            "acc_bytes": g.accumulator_bytes,
            "flops": g.flops,
            "tile": {"tm": self.tm, "tn": self.tn, "tk": self.tk},
            "working_set_bytes": self.working_set_bytes,
            "scratchpad_bytes": self.scratchpad_bytes,
            "offchip_bytes": self.offchip_bytes,
            "intensity": self.intensity,
            "compute_time_s": self.compute_time_s,
            "memory_time_s": self.memory_time_s,
            "time_s": self.time_s,
            "bound": self.bound.value,
        }


def offchip_elements(m: int, k: int, n: int, tm: int, tn: int) -> int:
    """``M*K*ceil(N/tn) + K*N*ceil(M/tm) + M*N`` elements moved off chip by one GEMM.

    Examples
    --------
    >>> offchip_elements(4, 3, 4, 2, 2)  # 4*3*2 + 3*4*2 + 4*4
    64
    """
    return m * k * math.ceil(n / tn) + k * n * math.ceil(m / tm) + m * n


def working_set_bytes(
    tm: int, tn: int, tk: int, elem_bytes: int, double_buffer: bool = True, acc_bytes: int | None = None
) -> int:
    """``elem * buffers * (tm*tk + tk*tn) + acc * tm*tn`` bytes held in the scratchpad (``acc``:
    the accumulator's bytes per output element, ``elem`` when ``None``).

    Examples
    --------
    >>> working_set_bytes(2, 2, 3, 2)  # 2 * (2 * (6 + 6) + 4)
    56
    >>> working_set_bytes(2, 2, 3, 2, acc_bytes=4)  # 2 * 2 * (6 + 6) + 4 * 4
    64
    """
    buffers = 2 if double_buffer else 1
    acc = elem_bytes if acc_bytes is None else acc_bytes
    return elem_bytes * buffers * (tm * tk + tk * tn) + acc * tm * tn


def largest_square_tile(
    scratchpad_bytes: float, elem_bytes: int, acc_bytes: int, tk: int, granule: int = 1, double_buffer: bool = True
) -> int:
    """The largest ``t`` (a multiple of ``granule``) whose ``t x t`` output tile, with its ``t x tk``
    and ``tk x t`` input tiles, fits: ``elem * buffers * 2*t*tk + acc * t^2 <= scratchpad``.

    Examples
    --------
    >>> largest_square_tile(1 << 20, 2, 4, 8, 8)   # bf16 inputs, an fp32 accumulator, 1 MiB: 64t + 4t^2
    504
    >>> largest_square_tile(1 << 20, 2, 2, 8, 8)   # the accumulator at bf16: 64t + 2t^2
    704

    Raises
    ------
    DfxError
        If not even one granule fits.
    """
    buffers = 2 if double_buffer else 1
    lin, quad = elem_bytes * buffers * 2 * tk, acc_bytes
    t = int((-lin + math.sqrt(lin * lin + 4 * quad * scratchpad_bytes)) / (2 * quad))  # the quadratic's root
    while t > 0 and quad * t * t + lin * t > scratchpad_bytes:  # floating point: step down to a fitting t
        t -= 1
    t = t // granule * granule
    if t < max(granule, 1):
        raise DfxError(f"not even a {granule}x{granule} output tile fits {scratchpad_bytes:.0f} B")
    return t


def evaluate_tile(gemm: Gemm, machine: Machine, tm: int, tn: int, tk: int, double_buffer: bool = True) -> TileChoice:
    """Traffic, intensity and time of ``gemm`` tiled (tm, tn, tk) on ``machine``."""
    traffic = gemm.batch * gemm.elem_bytes * offchip_elements(gemm.m, gemm.k, gemm.n, tm, tn)  # C written at elem
    tiles = gemm.batch * math.ceil(gemm.m / tm) * math.ceil(gemm.n / tn)
    waves = math.ceil(tiles / machine.cores)
    per_core_peak = machine.peak_flop_per_s / machine.cores
    compute = waves * FMA_FLOPS * tm * tn * gemm.k / per_core_peak
    return TileChoice(
        gemm,
        tm,
        tn,
        tk,
        working_set_bytes(tm, tn, tk, gemm.elem_bytes, double_buffer, gemm.accumulator_bytes),
        machine.scratchpad_bytes,
        traffic,
        gemm.flops / traffic,
        compute,
        traffic / machine.offchip_bytes_per_s,
    )


def _sides(dim: int, granule: int) -> list[int]:
    """Candidate tile sides: for every block count r, the smallest granule multiple covering dim/r.

    A side's traffic depends only on ceil(dim/side), so these are the only sides worth trying.
    Block counts giving the same ceil(dim/r) are skipped, so the loop runs about 2*sqrt(dim) times.
    """
    return list(_side_tuple(dim, granule))


@lru_cache(maxsize=4096)
def _side_tuple(dim: int, granule: int) -> tuple[int, ...]:
    """:func:`_sides`, kept per ``(dim, granule)``: a sweep's GEMMs share their dimensions (K and N are
    the model's widths, M = batch x seq recurs), and a search asks each dimension's sides again."""
    out = set()
    blocks = 1
    while True:
        raw = math.ceil(dim / blocks)
        side = min(dim, granule * math.ceil(raw / granule))
        out.add(side)
        if side <= granule or raw <= 1:
            break
        blocks = max(blocks + 1, math.ceil(dim / (raw - 1)))  # the first r with ceil(dim/r) < raw
    return tuple(sorted(out))


def clear_sides() -> None:
    """Forget every dimension's candidate sides kept in this process (benchmarks that start afresh)."""
    _side_tuple.cache_clear()


# Tile pairs (tm, tn) searched per GEMM: 4 million take a few seconds here. Sides number about
# 2*sqrt(dim) per dimension, so this covers M and N up to about a million each.
TILE_SEARCH_BUDGET = 4_000_000


def _candidates(gemm: Gemm, machine: Machine, double_buffer: bool) -> Iterator[tuple[int, int, int]]:
    tk = min(gemm.k, machine.granule_k)  # the thinnest K slice: leaves the most room for tm x tn
    sides_m, sides_n = _sides(gemm.m, machine.granule_m), _sides(gemm.n, machine.granule_n)
    if len(sides_m) * len(sides_n) > TILE_SEARCH_BUDGET:
        raise DfxError(
            f"GEMM {gemm.name}: {len(sides_m) * len(sides_n):,} candidate tiles is beyond dfx's search budget of "
            f"{TILE_SEARCH_BUDGET:,}; give M and N below about a million"
        )
    # the sides ascend and the working set grows with tm and with tn: the first tn that does not fit
    # ends its row, and a tm whose smallest tn does not fit ends the search
    for tm in sides_m:
        fits_any = False
        for tn in sides_n:
            if working_set_bytes(tm, tn, tk, gemm.elem_bytes, double_buffer, gemm.acc_bytes) > machine.scratchpad_bytes:
                break
            fits_any = True
            yield tm, tn, tk
        if not fits_any:
            break


def _widest_k(gemm: Gemm, machine: Machine, tm: int, tn: int, double_buffer: bool) -> int:
    """The largest tk (granule multiple, <= K) keeping the working set within the scratchpad."""
    buffers = 2 if double_buffer else 1
    room = (machine.scratchpad_bytes - gemm.accumulator_bytes * tm * tn) / gemm.elem_bytes
    tk = int(room // (buffers * (tm + tn)))
    tk = min(gemm.k, (tk // machine.granule_k) * machine.granule_k)
    return max(tk, min(gemm.k, machine.granule_k))


def _output_tiles(gemm: Gemm, tm: int, tn: int) -> int:
    return gemm.batch * math.ceil(gemm.m / tm) * math.ceil(gemm.n / tn)


def choose_tile(gemm: Gemm, machine: Machine, double_buffer: bool = True) -> TileChoice:
    """The tile with the least off-chip traffic whose working set fits one core's scratchpad.

    Like Spyre's work division, the compiler first gives every core work: among the fitting
    tiles, only those making at least ``cores`` output tiles are considered (all of them if none
    does). Ties go to the faster tile, then the squarer one; tk is then widened as far as the
    scratchpad allows (fewer K steps; traffic does not depend on it).

    Raises
    ------
    DfxError
        If even the smallest tile (one granule on each side) does not fit.

    Examples
    --------
    >>> m = Machine(scratchpad_bytes=2 * 1024 * 1024, cores=32, peak_flop_per_s=75e12,
    ...             offchip_bytes_per_s=150e9, granule_m=8, granule_n=8, granule_k=8)
    >>> t = choose_tile(Gemm(4096, 4096, 4096), m)
    >>> t.working_set_bytes <= t.scratchpad_bytes, (t.tm, t.tn), t.bound.value
    (True, (512, 1024), 'memory')
    """
    tm, tn = _least_traffic(gemm, machine, double_buffer)
    return evaluate_tile(gemm, machine, tm, tn, _widest_k(gemm, machine, tm, tn, double_buffer), double_buffer)


def _least_traffic(gemm: Gemm, machine: Machine, double_buffer: bool) -> tuple[int, int]:
    """The first tile of :func:`_candidates`' order with the least ``(offchip_bytes, time_s, |tm - tn|)``
    of :func:`evaluate_tile`, among those giving every core work (among all if none does).

    Searched row by row (one ``tm``) without visiting every candidate: along a row the sides ascend,
    so the tiles that fit and the tiles that give every core work are each a prefix of the row (the
    working set grows with ``tn``, the output tiles shrink), and the off-chip bytes, which depend on
    ``tn`` only through ``ceil(N / tn)``, are least at the prefix's end and tie only on its last run
    of equal ``ceil(N / tn)``. Only that run is ranked, by the same expressions as
    :func:`evaluate_tile` (no record built), and rows are compared in order, so the pick is the
    first least key of the whole search.

    Raises
    ------
    DfxError
        If no tile fits, or the candidates exceed :data:`TILE_SEARCH_BUDGET`.
    """
    from bisect import bisect_left, bisect_right

    b, eb, m, k, n = gemm.batch, gemm.elem_bytes, gemm.m, gemm.k, gemm.n
    ab = gemm.accumulator_bytes
    cores, bandwidth, scratch = machine.cores, machine.offchip_bytes_per_s, machine.scratchpad_bytes
    per_core_peak = machine.peak_flop_per_s / machine.cores
    tk = min(k, machine.granule_k)  # the thinnest K slice: leaves the most room for tm x tn
    sides_m, sides_n = _side_tuple(m, machine.granule_m), _side_tuple(n, machine.granule_n)
    if len(sides_m) * len(sides_n) > TILE_SEARCH_BUDGET:
        raise DfxError(
            f"GEMM {gemm.name}: {len(sides_m) * len(sides_n):,} candidate tiles is beyond dfx's search budget of "
            f"{TILE_SEARCH_BUDGET:,}; give M and N below about a million"
        )
    blocks_n = [math.ceil(n / tn) for tn in sides_n]

    def key(tm: int, j: int) -> tuple[int, float, int]:
        tn = sides_n[j]
        traffic = b * eb * offchip_elements(m, k, n, tm, tn)
        waves = math.ceil(b * math.ceil(m / tm) * blocks_n[j] / cores)
        compute = waves * FMA_FLOPS * tm * tn * k / per_core_peak
        return (traffic, max(compute, traffic / bandwidth), abs(tm - tn))  # TileChoice.time_s = max(compute, memory)

    def row_best(tm: int, end: int) -> tuple[tuple[int, float, int], int]:
        start = end - 1
        while start > 0 and blocks_n[start - 1] == blocks_n[end - 1]:
            start -= 1
        return min((key(tm, j), j) for j in range(start, end))  # the first least key of the run

    # In whole numbers (sizes, element bytes and cores are integers), both prefixes' ends are closed
    # forms: the working set elem*buffers*tm*tk + tn * (elem*buffers*tk + acc*tm) is at most the
    # scratchpad (at most floor(scratch), being an integer) for tn <= (floor(scratch) -
    # elem*buffers*tm*tk) // (elem*buffers*tk + acc*tm); and rows_m * blocks < cores for blocks <
    # ceil(cores / rows_m).
    exact = all(type(v) is int for v in (b, eb, ab, m, n, tk, cores)) and eb > 0
    buffers = 2 if double_buffer else 1
    room = math.floor(scratch) if exact and math.isfinite(scratch) else None
    negated_blocks = [-blocks for blocks in blocks_n]  # ascending
    best: dict[bool, tuple[tuple[int, float, int], int, int] | None] = {True: None, False: None}  # busy?
    for tm in sides_m:
        if room is not None:
            fit = bisect_right(sides_n, (room - eb * buffers * tm * tk) // (eb * buffers * tk + ab * tm))
        else:
            fit = bisect_left(
                sides_n, True, key=lambda tn: working_set_bytes(tm, tn, tk, eb, double_buffer, ab) > scratch
            )
        if fit == 0:
            break  # the working set grows with tm too: no later row fits
        rows_m = b * math.ceil(m / tm)
        if exact:
            busy = min(fit, bisect_right(negated_blocks, -cores // rows_m))  # -ceil(cores / rows_m)
        else:
            busy = min(fit, bisect_left(blocks_n, True, key=lambda blocks: rows_m * blocks < cores))
        for is_busy, end in ((True, busy), (False, fit)):
            if end:
                (row_key, j) = row_best(tm, end)
                if best[is_busy] is None or row_key < best[is_busy][0]:
                    best[is_busy] = (row_key, tm, sides_n[j])
    pick = best[True] or best[False]
    if pick is None:
        raise DfxError(
            f"GEMM {gemm.name}: even a {machine.granule_m}x{machine.granule_n}x{tk} tile needs more than the "
            f"{machine.scratchpad_bytes:.0f} B scratchpad"
        )
    return pick[1], pick[2]
