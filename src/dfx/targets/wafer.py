"""The Cerebras wafer-scale engine: a model laid out over regions of the wafer's cores.

- **Compiler**: the dataflow rules (:mod:`dfx.targets.dataflow`), static shapes.
- **Machine model**: :class:`dfx.arch.spatial.wafer.WaferModel` maps the graph onto the wafer
  (:func:`dfx.arch.spatial.wafer.map_graph`): layer-pipelined where every layer's weights fit its
  region's SRAM, weight-streaming from MemoryX otherwise (Cerebras' weight-streaming white paper).
- **Residency**: in layer-pipelined mode only; in weight-streaming mode the weights are per-run
  off-chip traffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.dataflow import DataflowTarget

if TYPE_CHECKING:
    from dfx.arch import ArchModel

__all__ = ["WAFER"]


@dataclass(frozen=True)
class WaferTarget(DataflowTarget):
    """:class:`Target` for the Cerebras wafer (module docstring)."""

    def arch_model(self, profile: HardwareProfile) -> ArchModel | None:
        from dfx.arch.spatial.wafer import WaferModel

        model = WaferModel()
        return model if model.applies_to(profile) else None

    def keeps_weights_on_chip(self, profile: HardwareProfile) -> bool:
        return self.arch_model(profile) is not None

    def weights_resident(self, costed: CostedGraph, profile: HardwareProfile) -> bool:
        from dfx.arch.spatial.wafer import WaferMode, map_graph

        return self.keeps_weights_on_chip(profile) and map_graph(costed, profile).mode is WaferMode.LAYER_PIPELINED


WAFER = WaferTarget(kind=Kind.WAFER, compiler="dataflow", static_shapes=True)
