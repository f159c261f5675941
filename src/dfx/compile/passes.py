"""The pass pipeline: each pass a pure function from one program to the next, recording what it changed.

Modelled on torch.fx's ``PassManager`` and ``PassResult(graph_module, modified)`` and on MLIR's pass
pipelines with per-pass statistics: a pass takes the program, the costed graph it came from and the
profile, and returns a :class:`PassResult`; :func:`run_passes` appends each pass's
:class:`~dfx.compile.program.PassRecord` to the program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from dfx.compile.program import Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["Pass", "PassResult", "run_passes"]


@dataclass(frozen=True)
class PassResult:
    """A pass's output: the new program, whether it changed anything, and notes for the user."""

    program: Program
    modified: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pass:
    """A named compiler pass: ``run(program, costed, profile) -> PassResult``."""

    name: str
    run: Callable[[Program, CostedGraph, HardwareProfile], PassResult]


def run_passes(program: Program, costed: CostedGraph, profile: HardwareProfile, passes: Sequence[Pass]) -> Program:
    """Run ``passes`` in order; the result carries one stage record per pass after the input's own."""
    for p in passes:
        result = p.run(program, costed, profile)
        new = result.program
        record = new.record(p.name, result.modified, result.notes)
        program = new.with_(stages=program.stages + (record,))
    return program
