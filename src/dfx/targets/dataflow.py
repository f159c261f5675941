"""Scratchpad dataflow chips (a quick ``model=scratchpad`` profile; IBM Spyre builds on it): operators stream on chip.

- **Compiler**: the dataflow rules (:class:`dfx.compile.rules.DataflowRules`): producer and consumer
  stream on chip while a region's intermediates fit the on-chip memory (Spyre: torch-spyre's
  ``dataflow_architecture.md``), static shapes fixed at compile time.
- **Placement**: every kernel divided over all cores (Spyre's work-division planner over 32 cores),
  tiles cut to each core's scratchpad (2 MB LX on Spyre).
- Weights stay in off-chip memory (LPDDR5 on Spyre) and are read on every run.

Groq's TSP (:mod:`dfx.targets.tsp`), the Cerebras wafer (:mod:`dfx.targets.wafer`) and IBM Spyre
(:mod:`dfx.targets.spyre`) share this compiler and add their own machine models or passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.compile.fusion import FusionRules
from dfx.compile.rules import DataflowRules
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.base import Target

__all__ = ["DATAFLOW", "DataflowTarget"]


@dataclass(frozen=True)
class DataflowTarget(Target):
    """:class:`Target` for scratchpad dataflow chips (module docstring)."""

    def fusion_rules(self, profile: HardwareProfile) -> FusionRules:
        """:class:`DataflowRules` sized to the on-chip memory.

        Raises
        ------
        DfxError
            A profile without an on-chip level of known capacity (nothing to keep tensors in).
        """
        level = profile.on_chip_level()
        if level is None or level.capacity_bytes is None:
            raise DfxError(f"profile {profile.id!r}: a dataflow chip needs an on-chip memory level with capacity_bytes")
        return DataflowRules(capacity_bytes=level.capacity_bytes)


DATAFLOW = DataflowTarget(kind=Kind.DATAFLOW, compiler="dataflow", static_shapes=True)
