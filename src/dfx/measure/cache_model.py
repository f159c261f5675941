"""A cache-aware re-timing of the roofline for a calibrated cache machine (CPU, GPU L2).

The eager roofline (``docs/hardware.md``) charges every byte to the off-chip level (DRAM, HBM).
On a machine whose caches hold a node's working set, as they do when the same small model runs
again and again, the bytes stream at the cache's bandwidth instead. This timer keeps the roofline
formula and changes only where the bytes go::

    working_set = distinct inputs + outputs + parameters read        (dfx.roofline.working_set_bytes)
    level       = the closest level, in profile order, with capacity_bytes >= working_set and a
                  bandwidth; else the off-chip level
    peak        = the GEMM peak, or for elementwise and normalization nodes the measured vector
                  FLOP rate when one is given
    time        = max(flops / peak, bytes / level bandwidth) + op_overhead_s

It plugs into :func:`dfx.roofline.evaluate` as a ``node_timer``, the hook the architecture models
use. Approximations: the whole capacity of a shared or per-core cache is usable; each node is
judged alone (a tensor written by the previous node is assumed still in cache if the node's own
working set fits); the cold first run is not modelled.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Callable

from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile, MemoryLevel
from dfx.roofline.bound import Bound
from dfx.roofline.execution import home_level, working_set_bytes
from dfx.roofline.latency import NodeTiming

__all__ = ["NAME", "cache_levels", "cache_timer"]

NAME = "cache-aware"
_VECTOR_CATEGORIES = ("elementwise", "normalization")  # run on vector units, not the GEMM kernels


def cache_levels(profile: HardwareProfile) -> tuple[MemoryLevel, ...]:
    """The levels a working set can sit in, closest first: known capacity and bandwidth, on chip."""
    return tuple(lv for lv in profile.memory if lv.on_chip and lv.capacity_bytes and lv.bandwidth_bytes_per_s)


def cache_timer(costed: CostedGraph, profile: HardwareProfile, vector_flop_per_s: float | None = None,
                ) -> Callable[[CostedNode, NodeTiming], NodeTiming]:  # fmt: skip
    """A ``node_timer`` for :func:`dfx.roofline.evaluate` that charges bytes to the cache that holds them.

    With ``vector_flop_per_s`` (``dfx calibrate --json``), elementwise and normalization nodes run
    their FLOPs at that rate instead of the GEMM peak.
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
