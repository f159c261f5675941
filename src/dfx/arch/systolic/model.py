"""The analytical cycle model of one GEMM on one R x C systolic array (SCALE-Sim's conventions).

With ``(Sr, Sc, T)`` the dimensions the dataflow maps to rows, columns and time (see
:mod:`dfx.arch.systolic.dataflow`)::

    row_folds  = ceil(Sr / R)            col_folds = ceil(Sc / C)          folds = row_folds * col_folds
    per_fold   = R + C + T - 2           (+ R when the stationary tile is preloaded: ws, is)
    compute    = folds * per_fold        (folds run back to back, each with its own fill and drain)
    pipelined  = per_fold + (folds - 1) * max(T, R)   (next tile shifted in while this one streams)

``compute_cycles`` is a *count* of cycles; SCALE-Sim reports the index of the last cycle, one less
(``last_cycle_index``). SRAM traffic counts words as SCALE-Sim does: the matrix spanning
``(Sr, Sc)`` is touched once, the one spanning ``(Sr, T)`` once per column fold, the one spanning
``(Sc, T)`` once per row fold (so ws/is write partial sums once per K fold).
NB: SCALE-Sim's OS adds a spurious ``R + C`` writes per fold (``ofmap_writes += shape[0] + shape[1]``);
dfx does not.

Stalls and DRAM bytes are dfx's own stated model, not SCALE-Sim's trace-driven one: an operand
whose unique bytes fit half its SRAM (SCALE-Sim's double buffer, ``active_buf_frac = 0.5``) is read
from DRAM once, else once per SRAM touch; outputs likewise (spilled partial sums are written and
read back). DRAM words move at ``bandwidth`` words/cycle overlapped with compute, so
``stall_cycles = max(0, ceil(dram_words / bandwidth) - compute_cycles)``; no bandwidth: no stalls.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from dfx.arch.systolic.dataflow import Dataflow, parse_dataflow
from dfx.errors import DfxError

__all__ = ["SramKB", "SystolicResult", "gemm"]

_DOUBLE_BUFFER_FRACTION = 0.5  # SCALE-Sim's active_buf_frac: half of each SRAM is being filled
_BYTES_PER_KB = 1024  # SCALE-Sim multiplies its *SramSzkB by 1024
_SCALESIM_WORD_BYTES = 1  # SCALE-Sim's word_size (single_layer_sim.run)


@dataclass(frozen=True)
class SramKB:
    """Capacities of the three operand SRAMs in KiB (SCALE-Sim's ``IfmapSramSzkB`` etc.)."""

    ifmap: float
    filter: float
    ofmap: float


@dataclass(frozen=True)
class SystolicResult:
    """One GEMM on one array: cycles, efficiency, folds and memory traffic.

    Cycle fields are counts (``compute_cycles`` = SCALE-Sim's "Compute cycles" + 1).
    ``drain_cycles`` is what PB-18 adds for OS (``R`` per fold to shift the results out), which
    SCALE-Sim leaves out; it is 0 for ws/is, whose counts already include the partial-sum drain.
    """

    m: int
    k: int
    n: int
    rows: int
    cols: int
    dataflow: Dataflow
    pipelined: bool
    row_folds: int
    col_folds: int
    cycles_per_fold: int
    compute_cycles: int
    drain_cycles: int
    stall_cycles: int
    mapping_efficiency: float
    sram_reads: int  # words: ifmap + filter reads
    sram_writes: int  # words: ofmap writes (partial sums included)
    ifmap_sram_reads: int
    filter_sram_reads: int
    dram_bytes: int
    word_bytes: int

    @property
    def folds(self) -> int:
        return self.row_folds * self.col_folds

    @property
    def total_cycles(self) -> int:
        return self.compute_cycles + self.stall_cycles

    @property
    def compute_cycles_with_drain(self) -> int:
        """PB-18's count for OS (``2R + C + T - 2`` per fold); equal to ``compute_cycles`` for ws/is."""
        return self.compute_cycles + self.drain_cycles

    @property
    def last_cycle_index(self) -> int:
        """What SCALE-Sim reports as its "Compute cycles": the 0-based index of the last cycle."""
        return self.total_cycles - 1

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n

    @property
    def utilization(self) -> float:
        """MACs / (R * C * total_cycles). SCALE-Sim's "Overall utilization" divides by the index instead."""
        return self.macs / (self.rows * self.cols * self.total_cycles)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["dataflow"] = self.dataflow.value
        out.update(
            folds=self.folds,
            total_cycles=self.total_cycles,
            utilization=self.utilization,
            compute_cycles_with_drain=self.compute_cycles_with_drain,
            last_cycle_index=self.last_cycle_index,
            macs=self.macs,
        )
        return out


def _positive(**values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DfxError(f"{name} must be an integer >= 1, got {value!r}")


def _touches(dims: str, sr: str, sc: str, row_folds: int, col_folds: int) -> int:
    """How often a matrix spanning ``dims`` is streamed: once, per column fold, or per row fold."""
    if sr in dims and sc in dims:
        return 1  # the stationary matrix: each word enters the array once
    return col_folds if sr in dims else row_folds  # spans (Sr, T): every column fold re-reads it


def _dram_words(unique: int, touched: int, capacity_kb: float | None, word_bytes: int) -> int:
    """Unique words if they fit the active half of the SRAM, else every touch goes to DRAM."""
    if capacity_kb is None or unique * word_bytes <= capacity_kb * _BYTES_PER_KB * _DOUBLE_BUFFER_FRACTION:
        return unique
    return touched


def gemm(
    m: int,
    k: int,
    n: int,
    *,
    rows: int,
    cols: int,
    dataflow: Dataflow | str = Dataflow.WS,
    sram_kb: SramKB | tuple[float, float, float] | None = None,
    bandwidth: float | None = None,
    word_bytes: int = _SCALESIM_WORD_BYTES,
    pipelined: bool = False,
) -> SystolicResult:
    """Cycles, folds, utilization and traffic of ``[m, k] @ [k, n]`` on a ``rows x cols`` array.

    Parameters
    ----------
    m, k, n : int
        GEMM sizes: ``X[m, k] @ W[k, n]`` (SCALE-Sim's GEMM topology row is ``name, M, N, K,``).
    rows, cols : int
        Array height R and width C in cells.
    dataflow : Dataflow or {"os", "ws", "is"}
    sram_kb : SramKB or (ifmap, filter, ofmap), optional
        SRAM sizes in KiB; ``None``: everything fits (each operand read from DRAM once).
    bandwidth : float, optional
        DRAM words per cycle; ``None``: unlimited, no stalls (SCALE-Sim's CALC mode).
    word_bytes : int
        Bytes per word for ``dram_bytes`` and the SRAM fit (SCALE-Sim: 1).
    pipelined : bool
        Overlap each fold's tile load with the previous fold's streaming (the TPU's double-buffered
        weights) instead of SCALE-Sim's back-to-back folds.

    Returns
    -------
    SystolicResult

    Examples
    --------
    >>> gemm(2, 2, 2, rows=2, cols=2, dataflow="os").compute_cycles  # PB-18: R + C + T - 2
    4
    >>> gemm(2, 2, 2, rows=2, cols=2, dataflow="os").compute_cycles_with_drain  # 2R + C + T - 2
    6
    >>> gemm(4, 3, 3, rows=4, cols=4, dataflow="ws").compute_cycles  # 2*4 + 4 + 4 - 2
    14
    """
    _positive(m=m, k=k, n=n, rows=rows, cols=cols, word_bytes=word_bytes)
    flow = parse_dataflow(dataflow)
    if bandwidth is not None and not (
        isinstance(bandwidth, (int, float)) and math.isfinite(bandwidth) and bandwidth > 0
    ):
        raise DfxError(f"bandwidth must be a positive number of words per cycle, got {bandwidth!r}")
    sram = SramKB(*sram_kb) if isinstance(sram_kb, tuple) else sram_kb
    if sram is not None and min(sram.ifmap, sram.filter, sram.ofmap) <= 0:
        raise DfxError(f"SRAM sizes must be positive KiB, got {sram}")
    size = {"m": m, "k": k, "n": n}
    mp = flow.mapping
    sr, sc, t = size[mp.rows], size[mp.cols], size[mp.time]
    row_folds, col_folds = math.ceil(sr / rows), math.ceil(sc / cols)
    folds = row_folds * col_folds
    per_fold = rows + cols + t - 2 + (rows if mp.preload else 0)  # fill + T + skew drain (+ tile load)
    compute = per_fold + (folds - 1) * max(t, rows) if pipelined else folds * per_fold
    drain = folds * rows if flow is Dataflow.OS else 0  # PB-18: results shift out R rows after the last MAC

    def touched(dims: str) -> int:
        return _touches(dims, mp.rows, mp.cols, row_folds, col_folds) * size[dims[0]] * size[dims[1]]

    ifmap_r, filter_r, ofmap_w = touched("mk"), touched("kn"), touched("mn")
    caps = (None, None, None) if sram is None else (sram.ifmap, sram.filter, sram.ofmap)
    out_dram = _dram_words(m * n, ofmap_w, caps[2], word_bytes)
    dram_words = (
        _dram_words(m * k, ifmap_r, caps[0], word_bytes)
        + _dram_words(k * n, filter_r, caps[1], word_bytes)
        + out_dram
        + (out_dram - m * n)  # spilled partial sums are read back
    )
    stall = 0 if bandwidth is None else max(0, math.ceil(dram_words / bandwidth) - compute)
    return SystolicResult(
        m=m,
        k=k,
        n=n,
        rows=rows,
        cols=cols,
        dataflow=flow,
        pipelined=pipelined,
        row_folds=row_folds,
        col_folds=col_folds,
        cycles_per_fold=per_fold,
        compute_cycles=compute,
        drain_cycles=drain,
        stall_cycles=stall,
        mapping_efficiency=(sr * sc) / (folds * rows * cols),
        sram_reads=ifmap_r + filter_r,
        sram_writes=ofmap_w,
        ifmap_sram_reads=ifmap_r,
        filter_sram_reads=filter_r,
        dram_bytes=dram_words * word_bytes,
        word_bytes=word_bytes,
    )
