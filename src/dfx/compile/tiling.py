"""The tiling pass: each kernel cut into the tiles its target's compiler would launch.

On a GPU (a profile with a ``simt`` section), every GEMM, pointwise and reduction kernel gets the
Triton program Inductor would choose (:func:`dfx.arch.gpu.plan.kernel_plan`, docs/gpu.md): ``tiles``
is the grid's program count, ``tile_shape`` its blocks (``(BLOCK_M, BLOCK_N, BLOCK_K)``,
``(XBLOCK,)`` or ``(XBLOCK, R0_BLOCK)``) and ``tile_time_s`` the kernel's time from its waves.
Attention, memory and collective kernels, and every other target, stay one tile (their tile
choosers have not landed).
"""

from __future__ import annotations

from dataclasses import replace

from dfx.compile.passes import PassResult
from dfx.compile.program import Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["tiling_pass"]


def _gpu_tiles(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
    from dfx.arch.gpu.plan import kernel_plan

    by_name = {n.name: n for n in costed.nodes}
    kernels, tiled = [], 0
    for k in program.kernels:
        plan = kernel_plan(k.kind.value, [by_name[n] for n in k.nodes], k.offchip_bytes, k.flops, k.dtype, profile)
        if plan is None:
            kernels.append(k)
            continue
        tiled += 1
        kernels.append(k.with_(tiles=plan.tiles, tile_shape=plan.tile_shape, tile_time_s=plan.time_s))
    notes = (f"{tiled} of {len(kernels)} kernels as Triton programs (Inductor's configs, docs/gpu.md)",)
    return PassResult(replace(program, kernels=tuple(kernels)), modified=tiled > 0, notes=notes)


def tiling_pass(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
    if profile.simt is not None:
        return _gpu_tiles(program, costed, profile)
    return PassResult(program, modified=False, notes=("tiling not modelled yet",))
