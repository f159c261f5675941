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

Which of the two rules a machine follows is its target's (:mod:`dfx.targets`): a :class:`TileGrain`
(GPU, CPU: ``min(tiles, C)``, with the grain that estimates the tiles) or ``None`` (TPU and dataflow:
every core). This module knows no machine family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from dfx.compile.passes import Pass, PassResult
from dfx.compile.program import Kernel, KernelKind, Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = [
    "CPU_GRAIN",
    "GEMM_TILE_ELEMS",
    "GPU_BLOCK_ELEMS",
    "GPU_GRAIN",
    "CPU_GRAIN_ELEMS",
    "TileGrain",
    "core_count",
    "estimate_tiles",
    "kernel_cores",
    "placement_pass_for",
]

GEMM_TILE_ELEMS = 128 * 128  # CUTLASS's default tensor-core threadblock tile (M x N outputs)
GPU_BLOCK_ELEMS = 1024  # Inductor's largest pointwise XBLOCK
CPU_GRAIN_ELEMS = 32768  # at::internal::GRAIN_SIZE: elements per thread below which ATen stays serial


@dataclass(frozen=True)
class TileGrain:
    """Output elements per tile of an untiled kernel, on a machine whose kernels occupy as many cores as
    they have tiles (GPU thread blocks, CPU threads): ``matmul_elems`` for a GEMM or attention kernel,
    ``other_elems`` for any other."""

    matmul_elems: int
    other_elems: int


GPU_GRAIN = TileGrain(GEMM_TILE_ELEMS, GPU_BLOCK_ELEMS)
CPU_GRAIN = TileGrain(CPU_GRAIN_ELEMS, CPU_GRAIN_ELEMS)


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


def estimate_tiles(kernel: Kernel, costed: CostedGraph, grain: TileGrain) -> int:
    """Tiles of an untiled kernel on a GPU or CPU, from its output elements over ``grain`` (module docstring).

    Returns ``kernel.tiles`` once a tiling pass has set ``tile_shape``.
    """
    if kernel.tile_shape or not kernel.nodes:
        return kernel.tiles
    elems = _output_elems(kernel, costed)
    matmul = kernel.kind in (KernelKind.GEMM, KernelKind.ATTENTION)
    return max(1, math.ceil(elems / (grain.matmul_elems if matmul else grain.other_elems)))


def kernel_cores(kernel: Kernel, costed: CostedGraph, profile: HardwareProfile, grain: TileGrain | None) -> int:
    """How many of ``profile``'s cores ``kernel`` occupies (the table in the module docstring).

    ``grain``: the target's (:attr:`dfx.targets.Target.grain`); ``None``, every kernel on every core.

    Raises
    ------
    KeyError
        If a kernel names a node that is not in ``costed`` (a program compiled from another graph).
    """
    if kernel.kind is KernelKind.COLLECTIVE:
        return 0
    total = core_count(profile)
    if grain is not None:
        return min(estimate_tiles(kernel, costed, grain), total)
    return total  # TPU and dataflow: every core


def _place(program: Program, costed: CostedGraph, profile: HardwareProfile, grain: TileGrain | None) -> PassResult:
    total = core_count(profile)
    placed, modified = [], False
    for k in program.kernels:  # kernel_cores, the profile read once; a kernel already on its cores kept
        if k.kind is KernelKind.COLLECTIVE:
            cores = 0
        elif grain is not None:
            cores = min(estimate_tiles(k, costed, grain), total)
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


def placement_pass_for(grain: TileGrain | None) -> Pass:
    """The placement pass of a target whose kernels take ``min(tiles, cores)`` cores, their tiles estimated
    by ``grain`` before tiling (GPU, CPU), or, with ``grain=None``, every core (TPU and dataflow)."""
    return Pass("placement", partial(_place, grain=grain))
