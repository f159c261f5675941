"""The tiling pass (placeholder until the tile choosers land): every kernel stays one tile."""

from __future__ import annotations

from dfx.compile.passes import PassResult
from dfx.compile.program import Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["tiling_pass"]


def tiling_pass(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
    return PassResult(program, modified=False, notes=("tiling not modelled yet",))
