"""The toolchain below a target's compiler: for a GPU, torch.compile's full path to machine code.

``dfx compile`` models the compiler's decisions (fusion, tiling, placement, schedule) on the aten
graph; a GPU's real program goes further, through Triton's own compiler and NVIDIA's assembler.
This module names each stage of that path, what it takes in and what it gives out, and the dfx
stage that models it (or that none does), with the documentation it follows:

    Python bytecode --Dynamo--> FX graph (torch ops) + guards
      --AOTAutograd--> ATen FX graph(s): functional, decomposed; forward (+ backward)
      --Inductor--> loop-level IR, fused by the scheduler --> Triton kernels (Python source) + wrapper
      --Triton frontend--> TTIR --TritonGPU passes--> TTGIR --> LLVM IR (NVVM)
      --LLVM NVPTX--> PTX --ptxas--> SASS in a cubin --CUDA driver--> launched grid of CTAs
      (AMD: TTGIR --> LLVM IR (AMDGPU) --LLVM AMDGPU--> AMDGCN --assembled, ld.lld--> HSA code object
       --HIP runtime--> launched grid of workgroups; :data:`TORCH_COMPILE_AMD_GPU`)

Sources: the PyTorch 2 paper (Ansel et al., ASPLOS 2024, https://doi.org/10.1145/3620665.3640366);
the torch.compiler docs (https://docs.pytorch.org/docs/stable/torch.compiler.html,
https://docs.pytorch.org/docs/stable/torch.compiler_dynamo_overview.html); the PyTorch blog "Triton
Kernel Compilation Stages" (2024, https://pytorch.org/blog/triton-kernel-compilation-stages/);
Triton's NVIDIA backend (triton-lang/triton ``third_party/nvidia/backend/compiler.py``:
``make_ttir``, ``make_ttgir``, ``make_llir``, ``make_ptx``, ``make_cubin``); NVIDIA's PTX ISA and
CUDA binary utilities docs (https://docs.nvidia.com/cuda/parallel-thread-execution/,
https://docs.nvidia.com/cuda/cuda-binary-utilities/); for AMD, Triton's AMD backend
(``third_party/amd/backend/compiler.py``: ``make_ttir``, ``make_ttgir``, ``make_llir``,
``make_amdgcn``, ``make_hsaco``), LLVM's AMDGPU backend guide (https://llvm.org/docs/AMDGPUUsage.html)
and the HIP documentation (https://rocm.docs.amd.com/projects/HIP/).
"""

from __future__ import annotations

from dataclasses import dataclass


__all__ = ["TORCH_COMPILE_AMD_GPU", "TORCH_COMPILE_GPU", "ToolchainStage"]

_PT2_PAPER = "https://doi.org/10.1145/3620665.3640366"
_TRITON_STAGES = "https://pytorch.org/blog/triton-kernel-compilation-stages/"
_TRITON_BACKEND = "triton-lang/triton third_party/nvidia/backend/compiler.py"
_TRITON_AMD_BACKEND = "triton-lang/triton third_party/amd/backend/compiler.py"
_AMDGPU_USAGE = "https://llvm.org/docs/AMDGPUUsage.html"


@dataclass(frozen=True)
class ToolchainStage:
    """One stage of the path: its name, its input and output, the dfx stage modelling it, its source."""

    stage: str
    takes: str
    gives: str
    dfx: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"stage": self.stage, "takes": self.takes, "gives": self.gives, "dfx": self.dfx, "source": self.source}


TORCH_COMPILE_GPU: tuple[ToolchainStage, ...] = (
    ToolchainStage(
        "TorchDynamo",
        "the model's Python bytecode, frame by frame (a PEP 523 frame-evaluation hook), and the example inputs",
        "an FX graph of torch-level ops per captured region, with guards (shapes, dtypes, Python values) "
        "that decide reuse; a graph break runs the rest in Python",
        "capture (--method dynamo; torch.export by default); `dfx guards` lists the guards",
        "https://docs.pytorch.org/docs/stable/torch.compiler_dynamo_overview.html; " + _PT2_PAPER,
    ),
    ToolchainStage(
        "AOTAutograd",
        "Dynamo's FX graph and fake tensors",
        "ATen FX graphs, functionalized (no mutation or aliasing) and decomposed to Core ATen / prims; "
        "in training the joint forward + backward, split by the min-cut partitioner into a forward "
        "graph and a backward graph (what to save vs recompute)",
        "the aten calls each dfx node records; dfx.capture.joint (--train); the cost rules read these ops",
        "https://docs.pytorch.org/docs/stable/torch.compiler_ir.html; " + _PT2_PAPER,
    ),
    ToolchainStage(
        "TorchInductor",
        "the ATen FX graph(s)",
        "a define-by-run loop-level IR (Pointwise, Reduction; GEMMs and convs as extern kernels to "
        "cuBLAS/cuDNN or Triton templates under max-autotune), fused by its scheduler (can_fuse, "
        "score_fusion), then Triton kernels as Python source (@triton.jit) with launch configs "
        "(XBLOCK, RBLOCK, num_warps; autotuned) and a Python (or AOTInductor C++) wrapper that "
        "allocates buffers and launches them",
        "dfx.compile fusion with InductorRules; `dfx compile --inductor` runs the real Inductor (CPU "
        "backend) beside it",
        "torch/_inductor/scheduler.py, torch/_inductor/codegen/triton.py; " + _PT2_PAPER,
    ),
    ToolchainStage(
        "Triton frontend (make_ttir)",
        "a @triton.jit function's Python AST and its specialization: argument dtypes, constexprs "
        "(block sizes), which pointers and sizes are divisible by 16",
        "Triton IR (TTIR, the MLIR `tt` dialect): one program's block-level operations on tensors of "
        "BLOCK elements (tt.load, tt.dot, tt.reduce), after inlining, canonicalization, CSE",
        "`dfx triton`: the grid of programs and one program's loop over blocks",
        f"{_TRITON_STAGES}; {_TRITON_BACKEND} (make_ttir)",
    ),
    ToolchainStage(
        "TritonGPU (make_ttgir)",
        "TTIR, num_warps, num_stages and the GPU's compute capability",
        "TritonGPU IR (TTGIR): every tensor given a layout over threads and warps (blocked, MMA for "
        "tensor cores, shared-memory encodings), loads coalesced, loops software-pipelined over "
        "num_stages shared-memory buffers, dots lowered to the tensor-core MMA of the capability",
        "`dfx triton`: warps, shared memory per program, occupancy (dfx.arch.gpu)",
        f"{_TRITON_STAGES}; {_TRITON_BACKEND} (make_ttgir)",
    ),
    ToolchainStage(
        "LLVM IR (make_llir)",
        "TTGIR",
        "LLVM IR with NVVM intrinsics (thread and block ids, barriers, mma, ldmatrix), one function "
        "per kernel, plus linked libdevice math",
        "not modelled: dfx times a kernel from its tiles on the roofline",
        f"{_TRITON_STAGES}; {_TRITON_BACKEND} (make_llir)",
    ),
    ToolchainStage(
        "PTX (make_ptx)",
        "LLVM IR",
        "PTX, NVIDIA's virtual ISA as text (`.target sm_90a`, `.reg`, `ld.global`, `mma.sync`/`wgmma`), "
        "from LLVM's NVPTX backend",
        "not modelled",
        f"https://docs.nvidia.com/cuda/parallel-thread-execution/; {_TRITON_BACKEND} (make_ptx)",
    ),
    ToolchainStage(
        "SASS in a cubin (make_cubin)",
        "PTX and the target architecture (sm_80, sm_90a)",
        "SASS, the GPU's machine code, in a cubin (an ELF object) assembled by ptxas, with its register "
        "count and shared memory per CTA (what caps occupancy)",
        "not modelled: `dfx triton` estimates registers per thread where ptxas would report them",
        f"https://docs.nvidia.com/cuda/cuda-binary-utilities/; {_TRITON_BACKEND} (make_cubin)",
    ),
    ToolchainStage(
        "CUDA driver launch",
        "the cubin, the grid (programs), num_warps x 32 threads per CTA, dynamic shared memory",
        "CTAs scheduled onto SMs in waves; each kernel launch pays the runtime's fixed cost",
        "the roofline per kernel, waves of tiles over the SMs, the runtime's per-kernel overhead",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/; " + _PT2_PAPER,
    ),
)


# torch.compile's path to an AMD GPU: the same front stages (Dynamo to Triton's frontend), then
# Triton's AMD backend and the HIP runtime.
TORCH_COMPILE_AMD_GPU: tuple[ToolchainStage, ...] = (
    *TORCH_COMPILE_GPU[:4],
    ToolchainStage(
        "TritonGPU (make_ttgir)",
        "TTIR, num_warps, num_stages and the GPU's architecture (gfx942 for the MI300X)",
        "TritonGPU IR (TTGIR): every tensor given a layout over the lanes of 64-wide wavefronts and "
        "over wavefronts (blocked, MFMA for the matrix cores, LDS shared-memory encodings), loads "
        "coalesced, loops pipelined over num_stages LDS buffers, dots lowered to the architecture's MFMA",
        "`dfx triton --hw amd-mi300x`: wavefronts, shared memory per program, occupancy (dfx.arch.gpu)",
        f"{_TRITON_STAGES}; {_TRITON_AMD_BACKEND} (make_ttgir)",
    ),
    ToolchainStage(
        "LLVM IR (make_llir)",
        "TTGIR",
        "LLVM IR for the AMDGPU target (workitem and workgroup ids, barriers, MFMA intrinsics), one "
        "amdgpu_kernel function per kernel, with attributes such as waves-per-EU",
        "not modelled: dfx times a kernel from its tiles on the roofline",
        f"{_TRITON_AMD_BACKEND} (make_llir); {_AMDGPU_USAGE}",
    ),
    ToolchainStage(
        "AMDGCN (make_amdgcn)",
        "LLVM IR",
        "AMDGCN assembly, the GPU's machine instructions as text (`s_` scalar and `v_` vector "
        "instructions, `v_mfma_*`), from LLVM's AMDGPU backend for the gfx architecture",
        "not modelled",
        f"{_TRITON_AMD_BACKEND} (make_amdgcn); {_AMDGPU_USAGE}",
    ),
    ToolchainStage(
        "HSA code object (make_hsaco)",
        "AMDGCN and the target architecture",
        "an HSA code object (HSACO, an ELF object): the assembled AMDGCN linked by ld.lld, with its "
        "kernel descriptor (VGPRs and SGPRs per lane, LDS per workgroup: what caps occupancy)",
        "not modelled: `dfx triton` estimates registers per lane where the code object would state them",
        f"{_TRITON_AMD_BACKEND} (make_hsaco); {_AMDGPU_USAGE}",
    ),
    ToolchainStage(
        "HIP runtime launch",
        "the HSA code object, the grid (programs), num_warps x 64 lanes per workgroup, LDS",
        "workgroups scheduled onto compute units in waves; each kernel launch pays the runtime's fixed cost",
        "the roofline per kernel, waves of tiles over the CUs, the runtime's per-kernel overhead",
        "https://rocm.docs.amd.com/projects/HIP/; " + _PT2_PAPER,
    ),
)
