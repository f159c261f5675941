"""A functional, cycle-by-cycle simulation of a small GEMM on the array: it really computes ``X @ W``.

Two machines cover the three dataflows (no per-dataflow copy):

* **stationary operand** (ws, is): a tile ``S[Sr x Sc]`` is shifted in from the top, one row per
  cycle (R cycles, bottom row first); then row ``r`` receives the streamed operand ``E[t, r]`` at
  cycle ``t + r`` (the skew), values move right one cell per cycle and partial sums move down:
  ``psum(r, c) = psum(r - 1, c) + e * S[r, c]``. Output ``(t, c)`` leaves the bottom of column
  ``c`` at stream cycle ``t + (R - 1) + c``. ws: ``S = W``, ``E = X``; is: ``S = X^T``, ``E = W^T``.
* **stationary output** (os): cell ``(i, j)`` accumulates ``Y[i, j]``; ``X[i, t]`` enters row ``i``
  at cycle ``t + i`` moving right, ``W[t, j]`` enters column ``j`` at cycle ``t + j`` moving down,
  so the last MAC is at cycle ``(R-1) + (C-1) + (T-1)``. The R-cycle drain that follows (results
  shifted out of the bottom) is simulated and recorded but, as in SCALE-Sim, not counted in
  ``cycles`` (``cycles_with_drain`` counts it; PB-18).

Every fold runs the full R x C array, padded cells holding nothing, so the cycle count equals
:func:`dfx.arch.systolic.gemm`'s ``compute_cycles`` (folds run back to back, no stalls).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dfx.arch.systolic.dataflow import Dataflow, parse_dataflow
from dfx.errors import DfxError

__all__ = ["Frame", "StepTrace", "step"]

MAX_CELLS = 256  # step mode is for pictures: up to a 16 x 16 array
MAX_DIM = 64  # and small matrices
Grid = tuple[tuple[Any, ...], ...]  # R x C, None where a cell holds nothing


@dataclass(frozen=True)
class Frame:
    """The array at the end of one cycle."""

    cycle: int  # global cycle index, 0-based
    fold: int
    phase: str  # "load" (stationary tile shifting in), "stream", "drain" (os only, uncounted)
    stationary: Grid  # the loaded tile (ws: weights, is: inputs, os: the accumulators)
    moving: Grid  # the value passing right through each cell this cycle
    psums: Grid  # ws/is: the partial sum leaving each cell downwards; os: the value moving down
    emitted: tuple[tuple[int, int, float], ...] = ()  # outputs completed this cycle: (row, col, value) of Y


@dataclass(frozen=True)
class StepTrace:
    """The whole run: frames, the product, and the cycle counts."""

    m: int
    k: int
    n: int
    rows: int
    cols: int
    dataflow: Dataflow
    result: np.ndarray = field(repr=False)
    frames: tuple[Frame, ...] = field(repr=False)
    cycles: int  # SCALE-Sim's count (os without its drain)
    cycles_with_drain: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "m": self.m,
            "k": self.k,
            "n": self.n,
            "rows": self.rows,
            "cols": self.cols,
            "dataflow": self.dataflow.value,
            "cycles": self.cycles,
            "cycles_with_drain": self.cycles_with_drain,
            "result": self.result.tolist(),
            "frames": len(self.frames),
        }


def _grid(a: np.ndarray, mask: np.ndarray) -> Grid:
    return tuple(tuple(float(a[r, c]) if mask[r, c] else None for c in range(a.shape[1])) for r in range(a.shape[0]))


class _Run:
    """Mutable state of one simulation (private; the result is the frozen :class:`StepTrace`)."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols, self.cycle, self.frames = rows, cols, 0, []

    def record(self, fold: int, phase: str, stat, stat_ok, mov, mov_ok, ps, ps_ok, emitted=()) -> None:
        self.frames.append(
            Frame(self.cycle, fold, phase, _grid(stat, stat_ok), _grid(mov, mov_ok), _grid(ps, ps_ok), tuple(emitted))
        )
        self.cycle += 1


def _stationary_fold(run: _Run, fold: int, S: np.ndarray, S_ok: np.ndarray, E: np.ndarray, emit) -> None:
    """One ws/is fold: S is the padded R x C tile (``S_ok`` marks real values), E the T x R streamed operand."""
    R, C = run.rows, run.cols
    T = E.shape[0]
    stat, stat_ok = np.zeros((R, C)), np.zeros((R, C), bool)
    zeros, none = np.zeros((R, C)), np.zeros((R, C), bool)
    for step_ in range(R):  # shift the tile in from the top, bottom row first
        stat, stat_ok = np.roll(stat, 1, axis=0), np.roll(stat_ok, 1, axis=0)
        stat[0], stat_ok[0] = S[R - 1 - step_], S_ok[R - 1 - step_]
        run.record(fold, "load", stat, stat_ok, zeros, none, zeros, none)
    live = S_ok.any(axis=1)
    mov, mov_ok = np.zeros((R, C)), np.zeros((R, C), bool)
    ps, ps_ok = np.zeros((R, C)), np.zeros((R, C), bool)
    for s in range(T + R + C - 2):
        mov, mov_ok = np.roll(mov, 1, axis=1), np.roll(mov_ok, 1, axis=1)  # values move right
        for r in range(R):  # the skewed edge: row r gets E[t, r] at cycle t + r
            t = s - r
            mov[r, 0], mov_ok[r, 0] = (E[t, r], True) if 0 <= t < T else (0.0, False)
        above = np.vstack([np.zeros((1, C)), ps[:-1]])  # partial sums move down
        ps = above + np.where(mov_ok, mov * stat, 0.0)
        ps_ok = mov_ok.copy()  # the wavefront: cell (r, c) works on t = s - r - c
        emitted = [emit(s - (R - 1) - c, c, ps[R - 1, c]) for c in range(C) if ps_ok[R - 1, c]]
        shown = mov_ok & live[:, None]  # padded rows carry zeros; draw them empty
        run.record(fold, "stream", stat, stat_ok, mov, shown, ps, ps_ok, [e for e in emitted if e])


def _output_fold(run: _Run, fold: int, L: np.ndarray, U: np.ndarray, emit) -> None:
    """One os fold: L is R x T (rows of X), U is T x C (columns of W), both zero-padded."""
    R, C = run.rows, run.cols
    T = L.shape[1]
    acc, acc_ok = np.zeros((R, C)), np.zeros((R, C), bool)
    h, h_ok = np.zeros((R, C)), np.zeros((R, C), bool)
    v, v_ok = np.zeros((R, C)), np.zeros((R, C), bool)
    for s in range(R + C + T - 2):
        h, h_ok = np.roll(h, 1, axis=1), np.roll(h_ok, 1, axis=1)
        v, v_ok = np.roll(v, 1, axis=0), np.roll(v_ok, 1, axis=0)
        for i in range(R):
            t = s - i
            h[i, 0], h_ok[i, 0] = (L[i, t], True) if 0 <= t < T else (0.0, False)
        for j in range(C):
            t = s - j
            v[0, j], v_ok[0, j] = (U[t, j], True) if 0 <= t < T else (0.0, False)
        both = h_ok & v_ok
        acc += np.where(both, h * v, 0.0)
        acc_ok |= both
        run.record(fold, "stream", acc, acc_ok, h, h_ok, v, v_ok)
    none = np.zeros((R, C), bool)
    for d in range(R):  # drain: the bottom row leaves, the rest shift down (PB-18; SCALE-Sim omits it)
        row = R - 1 - d
        emitted = [emit(row, c, acc[R - 1, c]) for c in range(C) if acc_ok[R - 1, c]]
        acc, acc_ok = np.roll(acc, 1, axis=0), np.roll(acc_ok, 1, axis=0)
        acc[0], acc_ok[0] = 0.0, False
        run.record(fold, "drain", acc, acc_ok, acc, none, acc, none, [e for e in emitted if e])


def _pad(a: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    out = np.zeros(shape)
    out[: a.shape[0], : a.shape[1]] = a
    return out


def check_step_sizes(m: int, k: int, n: int, rows: int, cols: int) -> None:
    """Refuse a step simulation beyond :data:`MAX_CELLS` cells or dims above :data:`MAX_DIM`.

    Call it before making the matrices: a 100,000 x 100,000 X alone would be 80 GB.

    Raises
    ------
    DfxError
        Naming the array and the GEMM.
    """
    if rows < 1 or cols < 1 or rows * cols > MAX_CELLS or max(m, k, n) > MAX_DIM:
        raise DfxError(
            f"step mode is for small cases: at most {MAX_CELLS} cells and dims <= {MAX_DIM}, "
            f"got a {rows}x{cols} array and {m}x{k}x{n}"
        )


def step(x: np.ndarray, w: np.ndarray, *, rows: int, cols: int, dataflow: Dataflow | str = Dataflow.WS) -> StepTrace:
    """Simulate ``x @ w`` cycle by cycle on a ``rows x cols`` array.

    Parameters
    ----------
    x : array [M, K]
    w : array [K, N]
    rows, cols : int
        The array (at most 256 cells).
    dataflow : Dataflow or {"os", "ws", "is"}

    Returns
    -------
    StepTrace
        ``result`` equals ``x @ w``; ``cycles`` equals ``gemm(M, K, N, ...).compute_cycles``.

    Examples
    --------
    >>> x, w = np.arange(12.0).reshape(4, 3), np.ones((3, 3))
    >>> tr = step(x, w, rows=4, cols=4, dataflow="ws")
    >>> bool(np.allclose(tr.result, x @ w)), tr.cycles  # 2*4 + 4 + 4 - 2
    (True, 14)
    """
    flow = parse_dataflow(dataflow)
    x, w = np.asarray(x, dtype=float), np.asarray(w, dtype=float)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[0]:
        raise DfxError(f"step mode needs x [M, K] and w [K, N], got {x.shape} and {w.shape}")
    (m, k), n = x.shape, w.shape[1]
    check_step_sizes(m, k, n, rows, cols)
    run, y = _Run(rows, cols), np.zeros((m, n))
    mp = flow.mapping
    size = {"m": m, "k": k, "n": n}
    row_folds, col_folds = -(-size[mp.rows] // rows), -(-size[mp.cols] // cols)
    fold = 0
    for fc in range(col_folds):  # SCALE-Sim's fold order: column folds outer, row folds inner
        for fr in range(row_folds):
            r0, c0 = fr * rows, fc * cols
            if flow is Dataflow.OS:
                L, U = _pad(x[r0 : r0 + rows, :], (rows, k)), _pad(w[:, c0 : c0 + cols], (k, cols))

                def emit(i, j, val, r0=r0, c0=c0):
                    if r0 + i < m and c0 + j < n:
                        y[r0 + i, c0 + j] = val
                        return (r0 + i, c0 + j, float(val))

                _output_fold(run, fold, L, U, emit)
            else:
                if flow is Dataflow.WS:
                    S, E = w[r0 : r0 + rows, c0 : c0 + cols], x[:, r0 : r0 + rows]  # W tile; X streams (t = m)
                else:
                    S, E = x.T[r0 : r0 + rows, c0 : c0 + cols], w.T[:, r0 : r0 + rows]  # X^T tile; W^T streams (t = n)

                def emit(t, c, val, c0=c0):
                    col = c0 + c
                    if col >= size[mp.cols]:
                        return None
                    i, j = (t, col) if flow is Dataflow.WS else (col, t)
                    y[i, j] += val  # accumulate over K folds
                    return (i, j, float(y[i, j]))

                tile = _pad(S, (rows, cols))
                _stationary_fold(
                    run, fold, tile, _pad(np.ones_like(S), (rows, cols)) > 0, _pad(E, (E.shape[0], rows)), emit
                )
            fold += 1
    drain = fold * rows if flow is Dataflow.OS else 0
    total = run.cycle
    return StepTrace(m, k, n, rows, cols, flow, y, tuple(run.frames), total - drain, total)
