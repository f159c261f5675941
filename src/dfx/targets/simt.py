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
from typing import Any

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

    def toolchain(self, profile: HardwareProfile) -> tuple[Any, ...]:
        """torch.compile's path to the GPU's machine code (Dynamo -> AOTAutograd -> Inductor -> Triton ->
        LLVM -> launch): to PTX and SASS on NVIDIA (:data:`dfx.compile.toolchain.TORCH_COMPILE_GPU`), to
        AMDGCN and an HSA code object on AMD (:data:`~dfx.compile.toolchain.TORCH_COMPILE_AMD_GPU`);
        ``()`` on a vendor whose Triton backend dfx does not list.

        >>> from dfx.hardware import load_profile
        >>> h100, mi300x = load_profile("h100"), load_profile("amd-mi300x")
        >>> [s.stage.split()[0] for s in SIMT.toolchain(h100)]  # doctest: +NORMALIZE_WHITESPACE
        ['TorchDynamo', 'AOTAutograd', 'TorchInductor', 'Triton', 'TritonGPU', 'LLVM', 'PTX', 'SASS', 'CUDA']
        >>> [s.stage.split()[0] for s in SIMT.toolchain(mi300x)]  # doctest: +NORMALIZE_WHITESPACE
        ['TorchDynamo', 'AOTAutograd', 'TorchInductor', 'Triton', 'TritonGPU', 'LLVM', 'AMDGCN', 'HSA', 'HIP']
        """
        from dfx.compile.toolchain import TORCH_COMPILE_AMD_GPU, TORCH_COMPILE_GPU

        return {"nvidia": TORCH_COMPILE_GPU, "amd": TORCH_COMPILE_AMD_GPU}.get(profile.vendor.lower(), ())


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
