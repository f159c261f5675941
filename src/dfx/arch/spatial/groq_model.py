"""The Groq TSP as dfx's architecture model: each node re-timed by the TSP cycle model and the compile-time
schedule over chips (:class:`GroqModel`, the TSP target's, :mod:`dfx.targets.tsp`).

Built on :mod:`dfx.arch.spatial.groq` (chips, crossings, a node's cycles) and
:mod:`dfx.arch.spatial.groq_schedule` (the schedule over chips), which import neither this module
nor each other in a circle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from dfx.arch.spatial.groq import _seconds, _timing, chips_needed
from dfx.arch.spatial.groq_schedule import compile_schedule, tsp_plan
from dfx.arch.spatial.tsp import TspOrganisation
from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile
from dfx.roofline.latency import NodeTiming

__all__ = ["GroqModel", "groq_node_timer"]


def groq_node_timer(costed: CostedGraph, profile: HardwareProfile) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
    """Re-time every node with work by the TSP cycle model, crossings between chips included.

    A node's time is its cycles, its split's gather, and the wait its inputs' chip-to-chip crossings
    add in the compile-time schedule (:func:`dfx.arch.spatial.groq_schedule.compile_schedule`: how
    much later than its last producer's end its inputs are all there), in whole cycles as the schedule
    counts them. So along any chain of nodes the times add up to no more than the schedule's span,
    and all of them together to no less than its makespan: the critical path <= makespan <= serial.
    """
    on = profile.on_chip_level().name

    plan = tsp_plan(costed, profile)
    org = plan.org
    end = {n.name: n.end_cycle for n in plan.schedule.nodes}

    def wait_cycles(cn: CostedNode) -> int:
        """Cycles the node's start waits for crossings beyond its last producer's end (0 on one chip)."""
        links = plan.links[cn.name]
        if not links:  # every input there when its producer ends: ready is the plain maximum
            return 0
        plain = max((end[e.src] for e in cn.node.inputs), default=0)
        ready = max((end[e.src] + math.ceil(links.get(e.src, 0.0) * org.clock_hz) for e in cn.node.inputs), default=0)
        return ready - plain

    def link_s(cn: CostedNode) -> float:
        """The split's gather and the crossings' wait, in whole cycles as scheduled."""
        return (math.ceil(plan.gather_s[cn.name] * org.clock_hz) + wait_cycles(cn)) / org.clock_hz

    def timer(cn: CostedNode, base: NodeTiming) -> NodeTiming:
        cycles = plan.cycles[cn.name]  # tsp_cycles, as the schedule used them
        if cycles.slice is None:  # no work: the roofline's timing stands (_timing)
            return base
        return _timing(cycles, link_s(cn), org, base, {on: cn.cost.bytes})  # all in SRAM

    def figures(cn: CostedNode) -> tuple[float, float, float, float]:
        """``timer``'s time, compute, memory and overhead seconds of a node with work (what a kernel's
        time reads of it: :func:`dfx.roofline.program.evaluate_program_from_figures`)."""
        return _seconds(plan.cycles[cn.name], link_s(cn), org)

    timer.figures = figures  # type: ignore[attr-defined]
    return timer


@dataclass(frozen=True)
class GroqModel:
    """The :class:`dfx.arch.ArchModel` for Groq TSP profiles (``kind: tsp``), with ``compute.vector_units``."""

    name: str = "groq-tsp"
    times_operators: bool = True  # cycles (regions) per operator, SRAM traffic included

    def applies_to(self, profile: HardwareProfile) -> bool:
        return profile.compute.vector_units is not None  # the TSP target (dfx.targets.tsp) asks

    def node_timer(
        self, costed: CostedGraph, profile: HardwareProfile
    ) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
        return groq_node_timer(costed, profile)

    def extras(self, costed: CostedGraph, profile: HardwareProfile) -> dict[str, Any]:
        """``chips_needed`` and the compile-time schedule (deterministic: no run-time variation)."""
        org = TspOrganisation.from_profile(profile)
        schedule = compile_schedule(costed, profile)
        return {
            "chips_needed": chips_needed(costed.unique_parameter_bytes(), org.sram_bytes),
            "weight_bytes": costed.unique_parameter_bytes(),
            "sram_bytes_per_chip": org.sram_bytes,
            "schedule": schedule.to_dict(),
        }
