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

from dfx.arch.spatial.groq import _is_state, chip_assignment, gather_s, input_crossings
from dfx.arch.spatial.tsp import NodeCycles, Slice, TspOrganisation, node_cycles
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["ScheduledNode", "TspPlan", "TspSchedule", "compile_schedule", "tsp_plan"]

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
    return tsp_plan(costed, profile).schedule


@dataclass(frozen=True)
class TspPlan:
    """The schedule and what it was built from, per node: what :func:`dfx.arch.spatial.groq_model.groq_node_timer`
    reads again (a node's cycles, its split's gather seconds, its input crossings, its chip)."""

    schedule: TspSchedule
    org: TspOrganisation
    chips: dict[str, int]
    cycles: dict[str, NodeCycles]
    gather_s: dict[str, float]
    links: dict[str, dict[str, float]]


# The node timer and the export fields of one evaluation both need the plan of the same graph on
# the same profile: it is made once. Kept per graph while the graph lives (dfx.compile.dataflow's
# weak_memo: the entry goes with the graph, so a long generation's decode steps are freed as they
# are evaluated), then per profile by identity, and used only while the profile still reads the same
# (its TSP figures and its peak FLOP/s, which set the MXM's passes per dtype).
_PLANS: dict[int, tuple[Any, dict[int, tuple[Any, ...]]]] = {}


def tsp_plan(costed: CostedGraph, profile: HardwareProfile) -> TspPlan:
    """:func:`compile_schedule`'s schedule with its per-node figures (made once per graph and profile)."""
    from dfx.memo import weak_memo

    org = TspOrganisation.from_profile(profile)
    per_profile = weak_memo(_PLANS, costed, lambda _: {})
    hit = per_profile.get(id(profile))
    if hit is not None and hit[0] is profile and hit[1] == org and hit[2] == profile.peak_flop_per_s:
        return hit[3]
    plan = _make_plan(costed, org)
    per_profile[id(profile)] = (profile, org, dict(profile.peak_flop_per_s), plan)
    return plan


def _make_plan(costed: CostedGraph, org: TspOrganisation) -> TspPlan:
    chips = chip_assignment(costed, org.sram_bytes)
    one_chip = max(chips.values(), default=0) == 0  # nothing crosses between chips
    clock = org.clock_hz
    end: dict[str, int] = {}
    free: dict[tuple[int, Slice], int] = {}
    out = []
    cycles_by, gather_by, links_by = {}, {}, {}
    graph = costed.graph
    node_of = graph.node
    params = graph.parameter_index if graph.parameters else {}
    sram = org.sram_bytes
    new = object.__new__
    # node_cycles is a pure function of these (and the org): the repeated layers of a decoder price
    # each distinct node once, not once per layer
    shared: dict[tuple, NodeCycles] = {}
    for cn in costed.nodes:
        node = cn.node
        name, inputs = node.name, node.inputs
        links = links_by[name] = {} if one_chip else input_crossings(cn, chips, costed, org)
        if links:
            ready = max(end[e.src] + math.ceil(links.get(e.src, 0.0) * clock) for e in inputs)
        elif inputs:  # no crossing: each input is there when its producer ends
            ready = max([end[e.src] for e in inputs])
        else:
            ready = 0
        # tsp_cycles(cn, costed, org), with groq.working_set's bytes summed in place (the same sums)
        working = 0
        for src, index in {(e.src, e.index): None for e in inputs}:  # each tensor once, in order
            producer = node_of(src)
            if not _is_state(producer) and index < len(producer.outputs):
                working += producer.outputs[index].nbytes
        for spec in node.outputs:
            working += spec.nbytes
        if node.params:
            working += sum(params[p].spec.nbytes for p in dict.fromkeys(node.params))
        ways = max(1, math.ceil(working / sram))  # groq.split_ways
        cost = cn.cost
        if _is_state(node):  # groq.split_ways: a weight stays in the SRAM of the chips holding it
            ways = 1
        if cost.flops == 0 and cost.bytes_read + cost.bytes_written == 0:  # no work: node_cycles' zeros
            cycles = new(NodeCycles)
            cycles.__dict__.update(name=name, slice=None, mxm=0, vxm=0, mem=0, c2c=0, fill=0)
            busy, unit = 0, None
        else:
            key = (cn.category, cost, cn.flops_by_category, cn.dtype, node.aten_calls, ways)
            same = shared.get(key)
            if same is None:
                same = shared[key] = node_cycles(cn, org, cost.bytes, ways=ways)
            cycles = new(NodeCycles)
            cycles.__dict__.update(same.__dict__, name=name)
            busy, unit = cycles.total, cycles.slice
        gather = gather_s(cn, ways, org) if ways != 1 else 0.0
        cycles_by[name], gather_by[name] = cycles, gather
        chip = chips[name]
        start = ready if unit is None else max(ready, free.get((chip, unit), 0))
        finish = end[name] = start + busy + math.ceil(gather * clock)
        if unit is not None:
            free[(chip, unit)] = finish
        scheduled = new(ScheduledNode)  # the frozen __init__ would only set the fields
        scheduled.__dict__.update(name=name, chip=chip, slice=unit, start_cycle=start, end_cycle=finish)
        out.append(scheduled)
    schedule = TspSchedule(tuple(out), org.clock_hz, max(chips.values(), default=0) + 1)
    return TspPlan(schedule, org, chips, cycles_by, gather_by, links_by)
