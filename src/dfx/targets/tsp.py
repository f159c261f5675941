"""The Groq Tensor Streaming Processor: a statically scheduled chip with SRAM as its only memory.

- **Compiler**: the dataflow rules (:mod:`dfx.targets.dataflow`), every instruction's cycle fixed at
  compile time; static shapes.
- **Machine model**: :class:`dfx.arch.spatial.groq_model.GroqModel` times every operator whole on the
  superlanes (ISCA 2020 "Think Fast"; ISCA 2022), placed over as many chips as the weights need.
- **Residency**: always. There is no DRAM (ISCA 2022), so every weight lives in the SRAM of the chip
  that uses it; an inference reads its weights on chip, and loading them once is reported apart
  (``weight_load_s``, ``docs/compile.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.dataflow import DataflowTarget

if TYPE_CHECKING:
    from dfx.arch import ArchModel

__all__ = ["TSP"]


@dataclass(frozen=True)
class TspTarget(DataflowTarget):
    """:class:`Target` for the Groq TSP (module docstring)."""

    def arch_model(self, profile: HardwareProfile) -> ArchModel | None:
        from dfx.arch.spatial.groq_model import GroqModel

        model = GroqModel()
        return model if model.applies_to(profile) else None

    def keeps_weights_on_chip(self, profile: HardwareProfile) -> bool:
        return self.arch_model(profile) is not None

    def weights_resident(self, costed: CostedGraph, profile: HardwareProfile) -> bool:
        return self.keeps_weights_on_chip(profile)


TSP = TspTarget(kind=Kind.TSP, compiler="dataflow", static_shapes=True)
