"""A chip of several identical systolic arrays (a TPU's MXUs) running a batch of equal GEMMs.

Stated model: the ``batch * folds`` fold-tiles are dealt round-robin to the ``units`` arrays, which
run in parallel; each array runs its share back to back, pipelined (the next tile shifted in while
the current one streams, as the TPU's double-buffered weights allow; Jouppi et al. 2017). When
there are fewer tiles than arrays, each tile's streamed dimension T is split over
``s = min(T, units // tiles)`` arrays holding the same stationary tile (ws: rows of X)::

    tiles    = batch * folds * s           T' = ceil(T / s)          per_unit = ceil(tiles / units)
    cycles   = cycles_per_fold(T') + (per_unit - 1) * max(T', R)     (pipelined)
             = per_unit * cycles_per_fold(T')                        (SCALE-Sim's back-to-back folds)
    utilization = batch * M * K * N / (units * R * C * cycles)

K folds dealt to different arrays are summed in the accumulators at no cost; fusing neighbouring
ops and XLA's layout padding are not modelled. The units, array size and clock come from the hardware profile's ``compute`` section; a
profile without ``clock_hz`` gets ``peak_bf16 / (2 * units * R * C)`` and says so in ``clock_source``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.arch.systolic.dataflow import Dataflow
from dfx.arch.systolic.model import gemm
from dfx.costs.terms import FMA_FLOPS
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile

__all__ = ["ChipGemm", "MxuSpec", "chip_gemm", "mxu_spec"]

_CLOCK_DTYPE = "bfloat16"  # the MXU's native input dtype, whose peak the clock is derived from


@dataclass(frozen=True)
class MxuSpec:
    """The matrix units of one chip."""

    units: int
    rows: int
    cols: int
    clock_hz: float
    clock_source: str  # "profile" or how it was derived

    def to_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "array": [self.rows, self.cols],
            "clock_hz": self.clock_hz,
            "clock_source": self.clock_source,
        }


def mxu_spec(profile: HardwareProfile) -> MxuSpec | None:
    """The profile's matrix units, or ``None`` if its ``compute`` section lacks units or array size."""
    c = profile.compute
    if c is None or not (c.units and c.array_rows and c.array_cols):
        return None
    if c.clock_hz:
        return MxuSpec(c.units, c.array_rows, c.array_cols, float(c.clock_hz), "profile")
    peak = profile.peak(_CLOCK_DTYPE).flop_per_s
    clock = peak / (FMA_FLOPS * c.units * c.array_rows * c.array_cols)
    return MxuSpec(
        c.units, c.array_rows, c.array_cols, clock, f"derived: {_CLOCK_DTYPE} peak / (2 * units * rows * cols)"
    )


@dataclass(frozen=True)
class ChipGemm:
    """``batch`` GEMMs of ``[m, k] @ [k, n]`` on one chip."""

    m: int
    k: int
    n: int
    batch: int
    folds: int  # per GEMM
    t_split: int  # arrays sharing one fold tile, each streaming ceil(T / t_split)
    folds_per_unit: int
    cycles: int
    time_s: float
    utilization: float
    mapping_efficiency: float

    @property
    def macs(self) -> int:
        return self.batch * self.m * self.k * self.n

    def to_dict(self) -> dict[str, Any]:
        return {
            "m": self.m,
            "k": self.k,
            "n": self.n,
            "batch": self.batch,
            "folds": self.folds,
            "t_split": self.t_split,
            "folds_per_unit": self.folds_per_unit,
            "cycles": self.cycles,
            "time_s": self.time_s,
            "utilization": self.utilization,
            "mapping_efficiency": self.mapping_efficiency,
        }


def chip_gemm(
    m: int,
    k: int,
    n: int,
    spec: MxuSpec,
    *,
    batch: int = 1,
    dataflow: Dataflow | str = Dataflow.WS,
    pipelined: bool = True,
) -> ChipGemm:
    """Cycles and time of ``batch`` GEMMs on the chip described by ``spec``.

    Examples
    --------
    >>> spec = MxuSpec(units=4, rows=128, cols=128, clock_hz=1.5e9, clock_source="profile")
    >>> g = chip_gemm(512, 256, 256, spec)  # 2 x 2 folds, one per MXU: one fold's 2*128+128+512-2
    >>> g.folds, g.folds_per_unit, g.cycles
    (4, 1, 894)
    >>> chip_gemm(512, 128, 128, spec).cycles  # 1 fold, M split over 4 MXUs: 2*128+128+128-2
    510
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise DfxError(f"batch must be an integer >= 1, got {batch!r}")
    one = gemm(m, k, n, rows=spec.rows, cols=spec.cols, dataflow=dataflow)
    t = {"m": m, "k": k, "n": n}[one.dataflow.mapping.time]
    tiles = batch * one.folds
    split = min(t, spec.units // tiles) if tiles < spec.units else 1
    t_part = math.ceil(t / split)
    per_fold = one.cycles_per_fold - t + t_part
    per_unit = math.ceil(tiles * split / spec.units)
    if pipelined:
        cycles = per_fold + (per_unit - 1) * max(t_part, spec.rows)
    else:
        cycles = per_unit * per_fold
    macs = batch * one.macs
    return ChipGemm(
        m,
        k,
        n,
        batch,
        one.folds,
        split,
        per_unit,
        cycles,
        cycles / spec.clock_hz,
        macs / (spec.units * spec.rows * spec.cols * cycles),
        one.mapping_efficiency,
    )
