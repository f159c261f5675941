"""Host CPUs: Inductor's C++ kernels, one ``at::parallel_for`` grain per thread.

- **Compiler**: Inductor (:class:`dfx.compile.rules.InductorRules`), C++/OpenMP kernels.
- **Placement**: a kernel takes ``min(grains, cores)`` (:data:`dfx.compile.placement.CPU_GRAIN`,
  ATen's ``GRAIN_SIZE``); the on-chip level for tiling is the profile's (the largest cache).
- **Run time**: dynamic shapes; ``dfx validate`` measures this family on the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.compile.fusion import FusionRules
from dfx.compile.placement import CPU_GRAIN
from dfx.compile.rules import InductorRules
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.base import Target

__all__ = ["CPU"]


@dataclass(frozen=True)
class CpuTarget(Target):
    """:class:`Target` for host CPUs (module docstring)."""

    def fusion_rules(self, profile: HardwareProfile) -> FusionRules:
        return InductorRules()


CPU = CpuTarget(kind=Kind.CPU, compiler="inductor", static_shapes=False, grain=CPU_GRAIN, measured_on="cpu")
