"""The GPU's SIMT execution model and Triton-style tile programs (torch-free).

- :mod:`dfx.arch.gpu.simt`: warps of 32 lanes, occupancy per SM under the CUDA occupancy rules,
  waves and their tail, masked lanes, divergence.
- :mod:`dfx.arch.gpu.configs`: Inductor's and Triton's kernel configs (BLOCK sizes, warps, stages).
- :mod:`dfx.arch.gpu.kernel`: a GEMM, pointwise or reduction kernel's grid, waves and time.

See ``docs/gpu.md``.
"""

from dfx.arch.gpu.configs import GemmConfig, PointwiseConfig, ReductionConfig, gemm_candidates
from dfx.arch.gpu.kernel import (
    GemmKernel,
    SimtKernel,
    WaveTime,
    choose_gemm_config,
    gemm_kernel,
    gemm_kernel_time_s,
    pointwise_kernel,
    reduction_kernel,
)
from dfx.arch.gpu.simt import (
    Limit,
    Occupancy,
    SimtSpec,
    Waves,
    divergent_warp_cost,
    masked_fraction,
    occupancy,
    simt_spec,
    waves,
)

__all__ = [
    "GemmConfig",
    "GemmKernel",
    "Limit",
    "Occupancy",
    "PointwiseConfig",
    "ReductionConfig",
    "SimtKernel",
    "SimtSpec",
    "WaveTime",
    "Waves",
    "choose_gemm_config",
    "divergent_warp_cost",
    "gemm_candidates",
    "gemm_kernel",
    "gemm_kernel_time_s",
    "masked_fraction",
    "occupancy",
    "pointwise_kernel",
    "reduction_kernel",
    "simt_spec",
    "waves",
]
