"""IBM Spyre: 32 scratchpad cores compiled by torch-spyre, operators split into kernels.

- **Compiler**: the dataflow rules (:mod:`dfx.targets.dataflow`), static shapes, and after fusion a
  ``decompose`` pass (:mod:`dfx.compile.decompose`): torch-spyre's Inductor back end realizes each
  step of a softmax, layer or RMS norm and SiLU as its own kernel (``docs/compile.md``,
  "Decompositions per target"), keeping intermediates in the LX scratchpad while they fit the share
  its planner may use (:data:`dfx.compile.decompose.SPYRE_LX_USABLE_FRACTION`).
- **Placement**: every kernel divided over all cores (the work-division planner), tiles cut to each
  core's 2 MB LX.
- Weights stay in LPDDR5 and are read on every run.
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.compile.decompose import DECOMPOSITIONS_SPYRE, SPYRE_LX_USABLE_FRACTION, decompose_pass_for
from dfx.compile.passes import Pass
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.dataflow import DataflowTarget

__all__ = ["SPYRE"]

_DECOMPOSE = decompose_pass_for(DECOMPOSITIONS_SPYRE, SPYRE_LX_USABLE_FRACTION)


@dataclass(frozen=True)
class SpyreTarget(DataflowTarget):
    """:class:`Target` for IBM Spyre (module docstring)."""

    def late_fusion_passes(self, profile: HardwareProfile) -> tuple[Pass, ...]:
        return (_DECOMPOSE,)


SPYRE = SpyreTarget(kind=Kind.SPYRE, compiler="dataflow", static_shapes=True)
