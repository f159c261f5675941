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

from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Mapping

from dfx.costs.record import CostedNode
from dfx.hardware import HardwareProfile, MemoryLevel
from dfx.hardware.schema import Efficiency
from dfx.ir import Graph
from dfx.roofline.bound import Bound, classify
from dfx.roofline.execution import ExecutionModel, _level_traffic
from dfx.schema.analysis import HwNodeRecord

__all__ = ["NodeTiming", "node_timing"]

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
        if not changes.keys() <= _NODE_TIMING_FIELDS:
            return replace(self, **changes)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, **changes)
        return new

    @property
    def intensity(self) -> float:
        """FLOP/byte; ``0.0`` when no bytes move."""
        return self.flops / self.bytes if self.bytes else 0.0

    def to_record(self) -> HwNodeRecord:
        """This timing as the document's ``hardware.<id>.nodes.<name>`` record (:mod:`dfx.schema.analysis`)."""
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


_NODE_TIMING_FIELDS = frozenset(f.name for f in fields(NodeTiming))


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
    """
    flops, nbytes = costed.cost.flops, costed.cost.bytes
    name, unknown = costed.name, tuple(costed.unknown_ops)
    if flops == 0 and nbytes == 0:
        return NodeTiming(name, Bound.NONE, 0.0, unknown_ops=unknown)
    peak = profile.peak(dtype or costed.dtype or _FALLBACK_DTYPE)
    off, on = profile.off_chip_level(), profile.on_chip_level()
    traffic = _level_traffic(costed, graph, profile, model, on, off)
    levels = profile.levels_by_name()
    if efficiency:
        category = costed.category.value
        bw_share = efficiency.bandwidth_share(category)
        flop_share = efficiency.flop_share(category)
        overhead = efficiency.kernel_fixed_s
    else:
        bw_share = flop_share = 1.0
        overhead = profile.op_overhead_s
    peak_flop_per_s = peak.flop_per_s
    memory_time = max((b / (levels[n].bandwidth_bytes_per_s * bw_share) for n, b in traffic.items()), default=0.0)
    compute_time = flops / (peak_flop_per_s * flop_share)
    memory_bound = any(
        classify(flops, b, peak_flop_per_s, levels[n].bandwidth_bytes_per_s) is Bound.MEMORY for n, b in traffic.items()
    )
    # NodeTiming(...) by keyword, without a frozen dataclass's per-field object.__setattr__ (one per
    # node and profile); every field is given here, and the class has no __post_init__
    timing = object.__new__(NodeTiming)
    timing.__dict__.update(
        name=name,
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
        unknown_ops=unknown,
    )
    return timing
