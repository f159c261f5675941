"""Dataflows of a systolic array and which GEMM dimension each maps to rows, columns and time.

A GEMM ``Y[M, N] = X[M, K] @ W[K, N]`` on an R x C array is cut into *folds*. Each dataflow keeps one
of the three matrices in the cells (stationary) and maps two GEMM dimensions onto the array's rows
(``Sr``) and columns (``Sc``); the third, ``T``, is streamed in time. SCALE-Sim's conventions
(``scalesim/compute/systolic_compute_{os,ws,is}.py``, v3.0.0, ``set_params``):

=========  ==========  ====  ====  ====  =====================================
dataflow   stationary  Sr    Sc    T     cycles per fold (SCALE-Sim)
=========  ==========  ====  ====  ====  =====================================
``os``     output Y    M     N     K     ``R + C + T - 2`` (no output drain)
``ws``     weight W    K     N     M     ``2R + C + T - 2`` (R cycles weight load)
``is``     input X     K     M     N     ``2R + C + T - 2`` (R cycles input load)
=========  ==========  ====  ====  ====  =====================================

``M`` is the conv layer's output pixel count, ``K`` its window (filter H x W x channels) and ``N``
its filter count (SCALE-Sim's ifmap / filter / ofmap operand matrices).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from dfx.errors import DfxError

__all__ = ["Dataflow", "Mapping", "parse_dataflow"]


@dataclass(frozen=True)
class Mapping:
    """Which GEMM dimension (``"m"``, ``"k"``, ``"n"``) goes to array rows, array columns and time."""

    rows: str  # Sr
    cols: str  # Sc
    time: str  # T
    preload: bool  # the stationary tile is shifted in first (R cycles) before anything streams


class Dataflow(Enum):
    """Output-, weight- or input-stationary; ``value`` is SCALE-Sim's config spelling."""

    OS = "os"
    WS = "ws"
    IS = "is"

    @property
    def mapping(self) -> Mapping:
        return _MAPPINGS[self]

    def __str__(self) -> str:
        return self.value


_MAPPINGS = {
    Dataflow.OS: Mapping(rows="m", cols="n", time="k", preload=False),  # outputs accumulate in place
    Dataflow.WS: Mapping(rows="k", cols="n", time="m", preload=True),  # weights shifted in from the top
    Dataflow.IS: Mapping(rows="k", cols="m", time="n", preload=True),  # inputs (X^T) shifted in from the top
}


def parse_dataflow(value: Dataflow | str) -> Dataflow:
    """``Dataflow`` from itself or its spelling (``"ws"``, ``"WS"``); one-line :class:`DfxError` otherwise."""
    if isinstance(value, Dataflow):
        return value
    try:
        return Dataflow(str(value).strip().lower())
    except ValueError:
        raise DfxError(f"unknown dataflow {value!r}: use os, ws or is") from None
