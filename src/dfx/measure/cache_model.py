"""A cache-aware re-timing of the roofline for a calibrated cache machine (CPU, GPU L2).

The eager roofline (``docs/hardware.md``) charges every byte to the off-chip level (DRAM, HBM).
On a machine whose caches hold a node's working set, as they do when the same small model runs
again and again, the bytes stream at the cache's bandwidth instead. This timer keeps the roofline
formula and changes only where the bytes go::

    working_set = distinct inputs + outputs + parameters read        (dfx.roofline.working_set_bytes)
    level       = the closest level, in profile order, with capacity_bytes >= working_set and a
                  bandwidth; else the off-chip level
    peak        = the GEMM peak; for elementwise and normalization nodes the measured vector FLOP
                  rate, and for matmul nodes the measured rate of a GEMM of their size, when given
    time        = max(flops / peak, bytes / level bandwidth) + op_overhead_s

It plugs into :func:`dfx.roofline.evaluate` as a ``node_timer``, the hook the architecture models
use. Approximations: the whole capacity of a shared or per-core cache is usable; each node is
judged alone (a tensor written by the previous node is assumed still in cache if the node's own
working set fits); the cold first run is not modelled.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType
from typing import Callable, Sequence

from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile, MemoryLevel
from dfx.roofline.bound import Bound
from dfx.roofline.execution import home_level, working_set_bytes
from dfx.roofline.latency import NodeTiming

__all__ = ["NAME", "cache_levels", "cache_timer", "gemm_rate"]

NAME = "cache-aware"
_VECTOR_CATEGORIES = ("elementwise", "normalization")  # run on vector units, not the GEMM kernels


def cache_levels(profile: HardwareProfile) -> tuple[MemoryLevel, ...]:
    """The levels a working set can sit in, closest first: known capacity and bandwidth, on chip."""
    return tuple(lv for lv in profile.memory if lv.on_chip and lv.capacity_bytes and lv.bandwidth_bytes_per_s)


def gemm_rate(curve: Sequence[tuple[float, float]], flops: float, peak: float) -> float:
    """FLOP/s of a GEMM doing ``flops``: log-log interpolation in a measured ``(flops, flop_per_s)`` curve,
    flat beyond its ends, and never above ``peak``.

    Examples
    --------
    >>> round(gemm_rate([(1e6, 1e9), (1e8, 1e10)], 1e7, 1e12) / 1e9, 3)  # halfway in log(flops): in log(rate)
    3.162
    """
    pts = sorted(curve)
    if not pts or flops <= 0:
        return peak
    if flops <= pts[0][0]:
        return min(pts[0][1], peak)
    for (f0, r0), (f1, r1) in zip(pts, pts[1:]):
        if flops <= f1:
            w = (math.log(flops) - math.log(f0)) / (math.log(f1) - math.log(f0))
            return min(math.exp(math.log(r0) + w * (math.log(r1) - math.log(r0))), peak)
    return min(pts[-1][1], peak)


def cache_timer(costed: CostedGraph, profile: HardwareProfile, vector_flop_per_s: float | None = None,
                gemm_curve: Sequence[tuple[float, float]] = ()) -> Callable[[CostedNode, NodeTiming], NodeTiming]:  # fmt: skip
    """A ``node_timer`` for :func:`dfx.roofline.evaluate` that charges bytes to the cache that holds them.

    With ``vector_flop_per_s`` (``dfx calibrate --json``), elementwise and normalization nodes run
    their FLOPs at that rate instead of the GEMM peak; with ``gemm_curve``, matmul nodes run at the
    rate :func:`gemm_rate` interpolates for their FLOPs.
    """
    levels = cache_levels(profile)
    fallback = home_level(profile)

    def timer(node: CostedNode, timing: NodeTiming) -> NodeTiming:
        if timing.bound is Bound.NONE or not levels:
            return timing
        activations, params = working_set_bytes(node, costed.graph)
        need = activations + params
        level = next((lv for lv in levels if lv.capacity_bytes >= need), fallback)
        memory_s = timing.bytes / level.bandwidth_bytes_per_s
        compute_s = timing.compute_time_s
        if vector_flop_per_s and node.category.value in _VECTOR_CATEGORIES:
            compute_s = timing.flops / vector_flop_per_s
        elif gemm_curve and node.category.value == "matmul" and timing.peak_flop_per_s:
            compute_s = timing.flops / gemm_rate(gemm_curve, timing.flops, timing.peak_flop_per_s)
        bound = Bound.COMPUTE if compute_s >= memory_s else Bound.MEMORY
        return replace(
            timing,
            time_s=max(compute_s, memory_s) + timing.overhead_s,
            compute_time_s=compute_s,
            memory_time_s=memory_s,
            bound=bound,
            bytes_by_level=MappingProxyType({level.name: timing.bytes}),
        )

    return timer
