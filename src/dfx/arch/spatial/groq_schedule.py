"""The Groq compiler's schedule: every node's start and end cycle, fixed before the program runs.

The TSP has no caches, arbiters or reactive flow control; the compiler knows every instruction's
latency and schedules each consumer for the cycle its operands arrive (``reference/concepts.md``
section e). dfx's version, a list schedule over the graph in its topological order::

    ready(n) = max over producers p of  end(p) + link_cycles(p -> n)    # 0 links on the same chip
    start(n) = max(ready(n), free(chip(n), slice(n)))                   # one node per slice at a time
    end(n)   = start(n) + cycles(n) + gather_cycles(n)                  # groq.tsp_cycles

Every quantity is a whole number of cycles computed from the graph and the profile, so the same
input gives the same schedule, and a run takes exactly the scheduled time: the run-time variation
is 0 (``run_time_variation_cv``), whatever jitter a simulator applies to dynamically scheduled
devices. NB: a node split over several chips (``groq.split_ways``) is placed on the last of them
only; independent nodes on different slices (a matmul on the MXM, a softmax on the VXM) may
overlap; two nodes on one slice of one chip never do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.arch.spatial.groq import chip_assignment, input_crossings, tsp_cycles
from dfx.arch.spatial.tsp import Slice, TspOrganisation
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["ScheduledNode", "TspSchedule", "compile_schedule"]

RUN_TIME_VARIATION_CV = 0.0  # a statically scheduled TSP runs in exactly its scheduled cycles


@dataclass(frozen=True)
class ScheduledNode:
    """Where and when one node runs."""

    name: str
    chip: int
    slice: Slice | None  # None: no work, takes no slice
    start_cycle: int
    end_cycle: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "chip": self.chip,
            "slice": self.slice.value if self.slice else None,
            "start_cycle": self.start_cycle,
            "end_cycle": self.end_cycle,
        }


@dataclass(frozen=True)
class TspSchedule:
    """A compile-time schedule; ``makespan_cycles`` is the program's exact run time."""

    nodes: tuple[ScheduledNode, ...]
    clock_hz: float
    chips: int

    @property
    def makespan_cycles(self) -> int:
        return max((n.end_cycle for n in self.nodes), default=0)

    @property
    def makespan_s(self) -> float:
        return self.makespan_cycles / self.clock_hz

    def to_dict(self) -> dict[str, Any]:
        return {
            "deterministic": True,
            "run_time_variation_cv": RUN_TIME_VARIATION_CV,
            "clock_hz": self.clock_hz,
            "chips": self.chips,
            "makespan_cycles": self.makespan_cycles,
            "makespan_s": self.makespan_s,
            "nodes": {n.name: n.to_dict() for n in self.nodes},
        }


def compile_schedule(costed: CostedGraph, profile: HardwareProfile) -> TspSchedule:
    """Schedule ``costed`` on Groq TSPs as the compiler would: every cycle fixed ahead of time.

    Raises
    ------
    DfxError
        If the profile lacks the TSP figures (:meth:`TspOrganisation.from_profile`).
    """
    org = TspOrganisation.from_profile(profile)
    chips = chip_assignment(costed, org.sram_bytes)
    end: dict[str, int] = {}
    free: dict[tuple[int, Slice], int] = {}
    out = []
    for cn in costed.nodes:
        links = input_crossings(cn, chips, costed, org)
        ready = max(
            (end[e.src] + math.ceil(links.get(e.src, 0.0) * org.clock_hz) for e in cn.node.inputs),
            default=0,
        )
        cycles, gather = tsp_cycles(cn, costed, org)
        chip, unit = chips[cn.name], cycles.slice
        start = ready if unit is None else max(ready, free.get((chip, unit), 0))
        end[cn.name] = start + cycles.total + math.ceil(gather * org.clock_hz)
        if unit is not None:
            free[(chip, unit)] = end[cn.name]
        out.append(ScheduledNode(cn.name, chip, unit, start, end[cn.name]))
    return TspSchedule(tuple(out), org.clock_hz, max(chips.values(), default=0) + 1)
