"""GPUs (NVIDIA, AMD): SIMT cores fed by Inductor's Triton kernels, launched at run time.

- **Compiler**: Inductor (``torch.compile``'s default backend): its fusion rules
  (:class:`dfx.compile.rules.InductorRules`), GEMMs and attention as library calls, everything else
  as Triton programs (:mod:`dfx.arch.gpu.plan`, ``docs/gpu.md``); warps or wavefronts as wide as the
  profile's ``simt.warp_size_threads`` (32 on NVIDIA, 64 on AMD CDNA).
- **Placement**: a kernel takes ``min(tiles, SMs)``: the block scheduler runs one thread block per SM
  at a time (:data:`dfx.compile.placement.GPU_GRAIN` estimates an untiled kernel's blocks).
- **Run time**: shapes are dynamic (an MoE layer's grouped GEMM sizes itself on the device), and the
  same machine also runs eagerly, so ``dfx analyze`` shows the eager program beside the compiled one.
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.compile.fusion import FusionRules
from dfx.compile.placement import GPU_GRAIN
from dfx.compile.rules import InductorRules
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.base import Target

__all__ = ["SIMT"]


@dataclass(frozen=True)
class SimtTarget(Target):
    """:class:`Target` for SIMT GPUs (module docstring)."""

    def fusion_rules(self, profile: HardwareProfile) -> FusionRules:
        return InductorRules()


SIMT = SimtTarget(
    kind=Kind.GPU,
    compiler="inductor",
    static_shapes=False,
    grain=GPU_GRAIN,
    simt=True,
    eager_contrast=True,
    runs_inductor=True,
    measured_on="cuda",
)
