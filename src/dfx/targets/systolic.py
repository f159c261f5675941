"""TPUs: XLA fusions on systolic matrix units (MXUs), one fusion at a time on the whole chip.

- **Compiler**: XLA (:class:`dfx.compile.rules.XlaRules`: loop, input, output and multi-output
  fusion), static shapes (an MoE layer gets a fixed capacity per expert).
- **Placement**: every kernel on every TensorCore (v4's megacore splits each op over both).
- **Machine model**: matmuls re-timed on the MXUs (:data:`dfx.arch.systolic.tpu.TPU_SYSTOLIC`,
  ``docs/systolic.md``) where the profile gives the array's side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfx.compile.fusion import FusionRules
from dfx.compile.rules import XlaRules
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.base import Target

if TYPE_CHECKING:
    from dfx.arch import ArchModel

__all__ = ["SYSTOLIC"]


@dataclass(frozen=True)
class SystolicTarget(Target):
    """:class:`Target` for TPUs (module docstring)."""

    def fusion_rules(self, profile: HardwareProfile) -> FusionRules:
        return XlaRules()

    def arch_model(self, profile: HardwareProfile) -> ArchModel | None:
        from dfx.arch.systolic.tpu import TPU_SYSTOLIC

        return TPU_SYSTOLIC if TPU_SYSTOLIC.applies_to(profile) else None


SYSTOLIC = SystolicTarget(kind=Kind.TPU, compiler="xla", static_shapes=True)
