"""The predicted time of one node on one profile.

::

    compute_time = flops / peak(dtype)
    memory_time  = max over levels L of  bytes_at(L) / bandwidth(L)    # levels overlap
    time         = max(compute_time, memory_time) + op_overhead        # if the node does any work

Under a runtime (``efficiency``, a profile's ``runtimes.<name>``: how that runtime runs the
machine) the peak and each bandwidth are scaled by the fractions it achieves for the node's
category, and its ``kernel_fixed_s`` replaces ``op_overhead``::

    compute_time = flops / (peak(dtype) * flop_fraction[category])
    memory_time  = max over L of  bytes_at(L) / (bandwidth(L) * bandwidth_fraction[category])

A node with no work (0 FLOPs and 0 bytes: placeholders, outputs, views) takes 0 s and pays no
overhead: nothing is launched for it. Its bound is ``none``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from dfx.costs.record import CostedGraph, CostedNode
from dfx.frozen import copy_with
from dfx.hardware import HardwareProfile, MemoryLevel
from dfx.hardware.schema import Efficiency
from dfx.ir import Graph
from dfx.roofline.bound import Bound, classify
from dfx.roofline.execution import ExecutionModel, _level_traffic, node_model, working_set_bytes
from dfx.roofline.per_graph import per_graph

if TYPE_CHECKING:  # export records, imported where a record is built: a sweep never builds one
    from dfx.schema.analysis import HwNodeRecord

__all__ = ["NodeTiming", "node_timing", "node_timings"]

_FALLBACK_DTYPE = "float32"  # peak used for a node with work but no tensor output to take a dtype from


@dataclass(frozen=True)
class NodeTiming:
    """One node's predicted time on one profile, and why.

    ``bound`` is under the execution model; ``bound_off_chip`` / ``bound_on_chip`` classify the same
    node with all of its bytes against the off-chip / on-chip level (``None`` when the profile has
    no such level), which is what :func:`dfx.roofline.partition_shift` compares.
    """

    name: str
    bound: Bound
    time_s: float
    compute_time_s: float = 0.0
    memory_time_s: float = 0.0
    overhead_s: float = 0.0
    flops: int = 0
    bytes: int = 0
    dtype: str | None = None  # the dtype the node runs in (or the evaluation's override)
    peak_dtype: str | None = None  # the dtype whose peak was used: ``dtype`` unless the profile lacks it
    peak_flop_per_s: float | None = None
    bytes_by_level: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    bound_off_chip: Bound | None = None
    bound_on_chip: Bound | None = None
    unknown_ops: tuple[str, ...] = ()

    def with_(self, **changes: Any) -> NodeTiming:
        """A copy with ``changes`` applied (timings are frozen).

        ``dataclasses.replace`` without its per-field walk (as :meth:`dfx.compile.Kernel.with_`): every
        evaluation copies every node's timing, and a NodeTiming has no ``__post_init__``; an unknown
        field still raises replace's ``TypeError``.
        """
        return copy_with(self, changes)

    @property
    def intensity(self) -> float:
        """FLOP/byte; ``0.0`` when no bytes move."""
        return self.flops / self.bytes if self.bytes else 0.0

    def to_record(self) -> HwNodeRecord:
        """This timing as the document's ``hardware.<id>.nodes.<name>`` record (:mod:`dfx.schema.analysis`)."""
        from dfx.schema.analysis import HwNodeRecord

        return HwNodeRecord(
            name=self.name,
            bound=self.bound,
            time_s=self.time_s,
            compute_time_s=self.compute_time_s,
            memory_time_s=self.memory_time_s,
            overhead_s=self.overhead_s,
            flops=self.flops,
            bytes=self.bytes,
            intensity_flop_per_byte=self.intensity,
            dtype=self.dtype,
            peak_dtype=self.peak_dtype,
            bytes_by_level=MappingProxyType(dict(self.bytes_by_level)),
            bound_off_chip=self.bound_off_chip,
            bound_on_chip=self.bound_on_chip,
            unknown_ops=self.unknown_ops,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


def _against(level: MemoryLevel | None, flops: int, nbytes: int, peak: float) -> Bound | None:
    return None if level is None else classify(flops, nbytes, peak, level.bandwidth_bytes_per_s)


def node_timing(
    costed: CostedNode,
    graph: Graph,
    profile: HardwareProfile,
    model: ExecutionModel,
    dtype: str | None = None,
    *,
    efficiency: Efficiency | None = None,
) -> NodeTiming:
    """Predict one node's time on ``profile`` under ``model``.

    Parameters
    ----------
    costed : CostedNode
        The node and its cost.
    graph : Graph
        The graph it belongs to (for its tensors' sizes, which the scratchpad model needs).
    profile : HardwareProfile
    model : ExecutionModel
    dtype : str, optional
        Run at this dtype's peak instead of the node's own dtype.
    efficiency : Efficiency, optional
        A runtime's achieved fractions of peak and fixed cost per kernel (``profile.runtime(name)``);
        ``None``: the ideal roofline (fractions 1, ``profile.op_overhead_s``).

    See also
    --------
    node_timings : every node of a costed graph, the profile's figures looked up once.
    """
    if costed.cost.flops == 0 and costed.cost.bytes == 0:
        return _idle(costed)
    return _Roofline(profile, model, dtype, efficiency).time(costed, graph)


def node_timings(
    costed: CostedGraph,
    profile: HardwareProfile,
    model: ExecutionModel,
    dtype: str | None = None,
    *,
    efficiency: Efficiency | None = None,
) -> tuple[NodeTiming, ...]:
    """:func:`node_timing` of every node of ``costed``, in its order: the same records, made cheaper.

    The profile's levels, bandwidths and peaks are looked up once for the graph, not per node, and
    what does not depend on the profile is made once per graph (:func:`dfx.roofline.per_graph.per_graph`)
    and shared by every profile: the timing of each node that does no work (a placeholder, a view,
    the output: most of a captured graph's nodes), and each node's working set.
    """
    idle = per_graph(costed, _idle_timings)
    roofline = _Roofline(profile, model, dtype, efficiency)
    graph = costed.graph
    if not roofline.spills:
        return tuple(t if t is not None else roofline.time(n, graph) for n, t in zip(costed.nodes, idle))
    sets = per_graph(costed, _working_sets)
    return tuple(t if t is not None else roofline.time(n, graph, sets[n.name]) for n, t in zip(costed.nodes, idle))


def _idle(costed: CostedNode) -> NodeTiming:
    """The timing of a node with no work (0 FLOPs, 0 bytes): 0 s, bound ``none``, on every profile."""
    return NodeTiming(costed.name, Bound.NONE, 0.0, unknown_ops=tuple(costed.unknown_ops))


def _idle_timings(costed: CostedGraph) -> tuple[NodeTiming | None, ...]:
    """Per node of ``costed``: its :func:`_idle` timing if it does no work, else ``None`` (a per-graph fact)."""
    return tuple(_idle(n) if n.cost.flops == 0 and n.cost.bytes == 0 else None for n in costed.nodes)


def _working_sets(costed: CostedGraph) -> Mapping[str, tuple[int, int]]:
    """Node name -> :func:`dfx.roofline.execution.working_set_bytes`, for each node that does some work
    (a per-graph fact)."""
    graph = costed.graph
    return MappingProxyType(
        {n.name: working_set_bytes(n, graph) for n in costed.nodes if n.cost.flops != 0 or n.cost.bytes != 0}
    )


class _Roofline:
    """One profile's figures for timing nodes under one execution model, dtype and runtime, looked up once."""

    def __init__(
        self, profile: HardwareProfile, model: ExecutionModel, dtype: str | None, efficiency: Efficiency | None
    ) -> None:
        self.profile, self.model, self.dtype, self.efficiency = profile, model, dtype, efficiency
        self.off, self.on = profile.off_chip_level(), profile.on_chip_level()
        self.levels = profile.levels_by_name()
        self.overhead = efficiency.kernel_fixed_s if efficiency else profile.op_overhead_s
        # the node model spills to the off-chip level: a node's traffic then depends on its working set
        self.spills = node_model(profile, model) is not ExecutionModel.EAGER and None not in (self.on, self.off)
        self.peaks: dict[str, Any] = {}  # dtype -> profile.peak(dtype)

    def time(self, costed: CostedNode, graph: Graph, working_set: tuple[int, int] | None = None) -> NodeTiming:
        """:func:`node_timing` of a node that does some work (its working set, if known)."""
        flops, nbytes = costed.cost.flops, costed.cost.bytes
        want = self.dtype or costed.dtype or _FALLBACK_DTYPE
        peak = self.peaks.get(want)
        if peak is None:
            peak = self.peaks[want] = self.profile.peak(want)
        off, on, levels, efficiency = self.off, self.on, self.levels, self.efficiency
        traffic = _level_traffic(costed, graph, self.profile, self.model, on, off, working_set)
        if efficiency:
            category = costed.category.value
            bw_share = efficiency.bandwidth_share(category)
            flop_share = efficiency.flop_share(category)
        else:
            bw_share = flop_share = 1.0
        overhead = self.overhead
        peak_flop_per_s = peak.flop_per_s
        # memory time: the slowest level (max(), as a loop over the one or two levels); memory-bound if
        # classify() says so against any level (work at a level: flops * bandwidth < bytes * peak)
        memory_time, memory_bound = None, False
        for n, b in traffic.items():
            bandwidth = levels[n].bandwidth_bytes_per_s
            level_time = b / (bandwidth * bw_share)
            if memory_time is None or level_time > memory_time:
                memory_time = level_time
            if (flops or b) and not flops * bandwidth >= b * peak_flop_per_s:
                memory_bound = True
        if memory_time is None:
            memory_time = 0.0
        compute_time = flops / (peak_flop_per_s * flop_share)
        # NodeTiming(...) by keyword, without a frozen dataclass's per-field object.__setattr__ (one per
        # node and profile); every field is given here, and the class has no __post_init__
        timing = object.__new__(NodeTiming)
        timing.__dict__.update(
            name=costed.name,
            bound=Bound.MEMORY if memory_bound else Bound.COMPUTE,
            time_s=max(compute_time, memory_time) + overhead,
            compute_time_s=compute_time,
            memory_time_s=memory_time,
            overhead_s=overhead,
            flops=flops,
            bytes=nbytes,
            dtype=peak.requested,
            peak_dtype=peak.used,
            peak_flop_per_s=peak_flop_per_s,
            bytes_by_level=MappingProxyType(traffic),
            bound_off_chip=_against(off, flops, nbytes, peak_flop_per_s),
            bound_on_chip=_against(on, flops, nbytes, peak_flop_per_s),
            unknown_ops=tuple(costed.unknown_ops),
        )
        return timing
