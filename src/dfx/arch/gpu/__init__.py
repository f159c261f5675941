"""The GPU's SIMT execution model and Triton-style tile programs (torch-free).

- :mod:`dfx.arch.gpu.simt`: warps of 32 lanes, occupancy per SM under the CUDA occupancy rules,
  waves and their tail, masked lanes, divergence.
- :mod:`dfx.arch.gpu.configs`: Inductor's and Triton's kernel configs (BLOCK sizes, warps, stages).
- :mod:`dfx.arch.gpu.kernel`: a GEMM, pointwise or reduction kernel's grid, waves and time.

See ``docs/gpu.md``.
"""

from dfx.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (dfx.lazy)
_EXPORTS = {
    "GemmConfig": "configs",
    "PointwiseConfig": "configs",
    "ReductionConfig": "configs",
    "gemm_candidates": "configs",
    "GemmKernel": "kernel",
    "SimtKernel": "kernel",
    "WaveTime": "kernel",
    "choose_gemm_config": "kernel",
    "gemm_kernel": "kernel",
    "gemm_kernel_time_s": "kernel",
    "pointwise_kernel": "kernel",
    "reduction_kernel": "kernel",
    "Limit": "simt",
    "Occupancy": "simt",
    "SimtSpec": "simt",
    "Waves": "simt",
    "divergent_warp_cost": "simt",
    "masked_fraction": "simt",
    "occupancy": "simt",
    "simt_spec": "simt",
    "waves": "simt",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


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
