"""Placement: each kernel's tiles onto the machine's finite cores (``Kernel.cores``).

How many of a machine's ``C`` cores one kernel occupies depends on how its compiler and hardware
spread work (``C`` is the profile's ``compute.cores``, or ``compute.usable_cores`` where spares are
held back; every profile cites it under ``sources``):

- **GPU**: ``min(tiles, C)``. The block scheduler runs one thread block (tile) per SM at a time; a
  kernel with fewer tiles than SMs leaves the rest idle, free for a concurrent kernel. ``C``: A100 108,
  H100 and H200 132 SMs.
- **CPU**: ``min(tiles, C)``: ``at::parallel_for`` hands each thread a grain of work. ``C``: 56 cores.
- **TPU**: ``C``. XLA runs one fusion at a time on the whole chip (v4's megacore splits each op over
  both TensorCores). ``C``: v4 2, v5e and v6e 1 TensorCore.
- **dataflow**: ``C``, whatever the tiles. Spyre's work-division planner divides each kernel over its
  32 cores (a 12-head attention is split along the sequence too); the Groq TSP issues every
  instruction across all 20 superlanes; the Cerebras wafer in weight-streaming mode runs one layer at
  a time on all usable cores. The tiles say how each core's share is cut to fit its memory.

Before a tiling pass has run (``Kernel.tile_shape == ()``), a GPU or CPU kernel's tile count is
estimated from its output elements: a GEMM or attention kernel in 128 x 128 output tiles (CUTLASS's
default tensor-core threadblock tile, ``GemmShape<128, 128, 32>`` in
``cutlass/gemm/device/default_gemm_configuration.h``), any other GPU kernel in blocks of 1,024
elements (Inductor's largest pointwise ``XBLOCK``, ``torch/_inductor/runtime/triton_heuristics.py``),
and any CPU kernel in grains of 32,768 elements (``at::internal::GRAIN_SIZE``, ATen's
``Parallel.h``). A ``COLLECTIVE`` kernel occupies no compute cores (it runs on the links).
"""

from __future__ import annotations

import math

from dfx.compile.passes import Pass, PassResult
from dfx.compile.program import Kernel, KernelKind, Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile, Kind

__all__ = [
    "GEMM_TILE_ELEMS",
    "GPU_BLOCK_ELEMS",
    "CPU_GRAIN_ELEMS",
    "core_count",
    "estimate_tiles",
    "kernel_cores",
    "placement_pass",
]

GEMM_TILE_ELEMS = 128 * 128  # CUTLASS's default tensor-core threadblock tile (M x N outputs)
GPU_BLOCK_ELEMS = 1024  # Inductor's largest pointwise XBLOCK
CPU_GRAIN_ELEMS = 32768  # at::internal::GRAIN_SIZE: elements per thread below which ATen stays serial
_TILED_BY_BLOCKS = (Kind.GPU, Kind.CPU)  # machines whose kernels occupy as many cores as they have tiles


def core_count(profile: HardwareProfile) -> int:
    """The cores a compiler may place work on: ``compute.usable_cores``, else ``compute.cores``, else 1.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> [core_count(load_profile(p)) for p in ("h100", "a100", "spyre", "google-tpu-v4", "groq-lpu")]
    [132, 108, 32, 2, 20]
    """
    return profile.compute.usable_cores or profile.compute.cores or 1


def _output_elems(kernel: Kernel, costed: CostedGraph) -> int:
    """Elements of the kernel's outputs: its last node's (a fused kernel writes what its last node writes)."""
    node = costed.graph.node(kernel.nodes[-1])
    return sum(spec.numel for spec in node.outputs) or 1


def estimate_tiles(kernel: Kernel, costed: CostedGraph, profile: HardwareProfile) -> int:
    """Tiles of an untiled kernel on a GPU or CPU, from its output elements (see the module docstring).

    Returns ``kernel.tiles`` once a tiling pass has set ``tile_shape``.
    """
    if kernel.tile_shape or not kernel.nodes:
        return kernel.tiles
    elems = _output_elems(kernel, costed)
    if profile.kind is Kind.CPU:
        unit = CPU_GRAIN_ELEMS
    elif kernel.kind in (KernelKind.GEMM, KernelKind.ATTENTION):
        unit = GEMM_TILE_ELEMS
    else:
        unit = GPU_BLOCK_ELEMS
    return max(1, math.ceil(elems / unit))


def kernel_cores(kernel: Kernel, costed: CostedGraph, profile: HardwareProfile) -> int:
    """How many of ``profile``'s cores ``kernel`` occupies (the table in the module docstring).

    Raises
    ------
    KeyError
        If a kernel names a node that is not in ``costed`` (a program compiled from another graph).
    """
    if kernel.kind is KernelKind.COLLECTIVE:
        return 0
    total = core_count(profile)
    if profile.kind in _TILED_BY_BLOCKS:
        return min(estimate_tiles(kernel, costed, profile), total)
    return total  # TPU and dataflow: every core


def _place(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
    total = core_count(profile)
    by_blocks = profile.kind in _TILED_BY_BLOCKS
    placed, modified = [], False
    for k in program.kernels:  # kernel_cores, the profile read once; a kernel already on its cores kept
        if k.kind is KernelKind.COLLECTIVE:
            cores = 0
        elif by_blocks:
            cores = min(estimate_tiles(k, costed, profile), total)
        else:
            cores = total
        if cores != k.cores:
            k = k.with_(cores=cores)
            modified = True
        placed.append(k)
    kernels = tuple(placed)
    full = sum(1 for k in kernels if k.cores == total)
    notes = (f"{full} of {len(kernels)} kernels on all {total} cores",) if kernels else ()
    partial = [k.cores for k in kernels if 0 < k.cores < total]
    if partial:
        notes += (f"{len(partial)} on fewer (median {sorted(partial)[len(partial) // 2]} cores)",)
    return PassResult(program.with_(kernels=kernels), modified, notes)


placement_pass = Pass("placement", _place)
