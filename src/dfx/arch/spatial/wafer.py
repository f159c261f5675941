"""The Cerebras wafer: layers mapped onto regions of cores, pipelined, or weights streamed in.

Layer-pipelined mode (``reference/concepts.md`` section f, from the Cerebras execution-mode docs):
each layer gets its own region of the wafer, weights stay with their layer, samples flow through
the regions. dfx's model of it (the concepts.md "Model for the tool": a kernel's throughput is
proportional to its area, the pipeline's is the minimum over kernels)::

    work_i     = max(flops_i / core_peak, bytes_i / core_sram_bandwidth)   # seconds on one core
    floor_i    = max(1, ceil(param_bytes_i / sram_per_core))                # its weights must fit
    cores_i    = floor(free * work_i / sum(work))  or floor_i if that is larger (water-filling)
    time_i     = work_i / cores_i                                           # NB: no halo or hop cost
    bottleneck = argmax time_i  (= the stage with the most work per core)
    throughput = 1 / time_bottleneck         busy = sum(work_i) / (usable_cores * time_bottleneck)

``usable_cores`` holds back the spare cores the fabric routes around defects with
(``compute.usable_cores``; WSE-3: 900,000 of about 970,000). When the stages' weights do not fit
(``sum(floor_i) > usable_cores``) the model runs in weight-streaming mode: one layer at a time on the
whole wafer, its weights streamed from MemoryX::

    time_i = max(work_i / usable_cores, param_bytes_i / memoryx_bandwidth);   latency = sum(time_i)

Over several wafers (``max_wafers > 1``) consecutive stages go to each wafer, as few wafers as the
weights need and spread evenly over them (:func:`_wafer_groups`); a decode step's latency is the
sum of the stage times plus a hop between wafers (:mod:`dfx.parallel.place`).

A stage is a layer: the nodes sharing a module path (``q_proj``, ``mlp.fc1``), or a prefix of it
(``stage_depth``). Nodes with no module path form the stage ``(top)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Sequence

from dfx.costs.record import CostedGraph, CostedNode
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.roofline.bound import Bound
from dfx.roofline.latency import NodeTiming

__all__ = [
    "Stage",
    "StageWork",
    "WaferCore",
    "WaferMapping",
    "WaferMode",
    "WaferModel",
    "map_graph",
    "map_layers",
    "stage_name",
    "stages_of",
    "wafer_node_timer",
]

TOP_STAGE = "(top)"
_MAPPING_DTYPE = "float16"  # Cerebras profiles list the FP16 peak only


class WaferMode(str, Enum):
    """How the model runs on the wafer (Cerebras execution modes)."""

    LAYER_PIPELINED = "layer-pipelined"  # every layer resident in its own region
    WEIGHT_STREAMING = "weight-streaming"  # one layer at a time, weights from MemoryX

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class WaferCore:
    """What one core and the whole wafer offer, from the profile."""

    usable_cores: int
    physical_cores: int
    core_flop_per_s: float  # peak / active cores
    core_sram_bytes: float  # memory.SRAM capacity / instances (48 KB)
    core_sram_bytes_per_s: float  # memory.SRAM bandwidth / instances
    stream_bytes_per_s: float | None  # MemoryX bandwidth, for weight streaming

    @classmethod
    def from_profile(cls, profile: HardwareProfile) -> WaferCore:
        """Raises :class:`DfxError` if the profile lacks cores or an on-chip SRAM level."""
        c, on, off = profile.compute, profile.on_chip_level(), profile.off_chip_level()
        if c.cores is None or on is None:
            raise DfxError(f"profile {profile.id!r} lacks compute.cores or an on-chip SRAM level for the wafer model")
        usable = c.usable_cores or c.cores
        return cls(
            usable_cores=usable,
            physical_cores=c.physical_cores or c.cores,
            core_flop_per_s=profile.peak(_MAPPING_DTYPE).flop_per_s / c.cores,
            core_sram_bytes=on.capacity_per_instance_bytes,
            core_sram_bytes_per_s=on.bandwidth_bytes_per_s / on.instances,
            stream_bytes_per_s=off.bandwidth_bytes_per_s if off else None,
        )

    def work_s(self, flops: float, nbytes: float) -> float:
        """Seconds the work takes on one core: compute or SRAM traffic, whichever is longer."""
        return max(flops / self.core_flop_per_s, nbytes / self.core_sram_bytes_per_s)


@dataclass(frozen=True)
class StageWork:
    """One layer's work: FLOPs, bytes moved, and the bytes of the weights it keeps."""

    name: str
    flops: int
    bytes: int
    param_bytes: int


@dataclass(frozen=True)
class Stage:
    """One layer as mapped: its cores, its work on one core, its time on its region."""

    name: str
    cores: int
    work_s: float  # on one core
    time_s: float  # on its region
    param_bytes: int
    wafer: int = 0  # which wafer of a multi-wafer pipeline holds it

    def to_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "time_s": self.time_s,
            "work_core_s": self.work_s,
            "param_bytes": self.param_bytes,
            "wafer": self.wafer,
        }


@dataclass(frozen=True)
class WaferMapping:
    """Layers on the wafer: cores and time per stage, the bottleneck, the busy fraction."""

    mode: WaferMode
    usable_cores: int  # of one wafer
    physical_cores: int
    stages: tuple[Stage, ...]
    wafers: int = 1

    @property
    def cores_per_stage(self) -> dict[str, int]:
        return {s.name: s.cores for s in self.stages}

    @property
    def bottleneck(self) -> str | None:
        return max(self.stages, key=lambda s: s.time_s).name if self.stages else None

    @property
    def cycle_s(self) -> float:
        """Time between samples: the slowest stage (pipelined) or the sum of stages (streaming)."""
        times = [s.time_s for s in self.stages]
        if self.mode is WaferMode.WEIGHT_STREAMING:
            return sum(times)
        return max(times, default=0.0)

    @property
    def busy_fraction(self) -> float:
        """Fraction of the usable cores' time doing work: ``sum(work) / (usable_cores * cycle)``."""
        work = sum(s.work_s for s in self.stages)
        return work / (self.wafers * self.usable_cores * self.cycle_s) if self.cycle_s else 0.0

    def latency_s(self, rows: int = 1) -> float:
        """One sample's time through the wafer(s) when it streams as ``rows`` rows (tokens).

        Layer-pipelined, the rows follow each other through the stages, so the sample takes the
        pipeline's fill plus its cycle: ``cycle + (sum(stage times) - cycle) / rows`` (one row
        per stage per ``time_i / rows``). A decode step's single token (``rows = 1``) pays every
        stage in turn. Weight streaming runs the layers one after the other: the sum. NB: hops
        between wafers are not counted here (``dfx.parallel`` adds them).
        """
        total = sum(s.time_s for s in self.stages)
        if self.mode is WaferMode.WEIGHT_STREAMING or rows <= 1:
            return total
        return self.cycle_s + (total - self.cycle_s) / rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value,
            "usable_cores": self.usable_cores,
            "physical_cores": self.physical_cores,
            "spare_cores": self.physical_cores - self.usable_cores,
            "cores_used": sum(s.cores for s in self.stages)
            if self.mode is WaferMode.LAYER_PIPELINED
            else self.usable_cores,
            "cores_per_stage": self.cores_per_stage,
            "stage_time_s": {s.name: s.time_s for s in self.stages},
            "bottleneck": self.bottleneck,
            "busy_fraction": self.busy_fraction,
            "cycle_s": self.cycle_s,
            "samples_per_s": 1.0 / self.cycle_s if self.cycle_s else None,
            "latency_s": sum(s.time_s for s in self.stages),
            "wafers": self.wafers,
            "wafer_of_stage": {s.name: s.wafer for s in self.stages},
        }


def stage_name(module_path: str, depth: int | None = None) -> str:
    """The stage of a node: its module path, cut to ``depth`` components (``(top)`` if empty)."""
    if not module_path:
        return TOP_STAGE
    return module_path if depth is None else ".".join(module_path.split(".")[:depth])


def stages_of(costed: CostedGraph, depth: int | None = None) -> tuple[StageWork, ...]:
    """The layers of ``costed``, in order of first appearance; nodes with no work are left out."""
    index = costed.graph.parameter_index
    acc: dict[str, list[int]] = {}
    params: dict[str, dict[str, None]] = {}
    for cn in costed.nodes:
        if cn.cost.flops == 0 and cn.cost.bytes == 0:
            continue
        name = stage_name(cn.node.module_path, depth)
        row = acc.setdefault(name, [0, 0])
        row[0] += cn.cost.flops
        row[1] += cn.cost.bytes
        params.setdefault(name, {}).update(dict.fromkeys(cn.node.params))
    return tuple(StageWork(n, f, b, sum(index[p].spec.nbytes for p in params[n])) for n, (f, b) in acc.items())


def _allocate(works: Sequence[float], floors: Sequence[int], cores: int) -> list[int]:
    """Cores by time: the fewest per stage that finish within the shortest cycle the wafer allows.

    ``cores_i = max(floor_i, ceil(work_i / T))`` for the smallest cycle ``T`` whose cores sum to at
    most ``cores`` (found by bisection). Sharing cores in proportion to work and rounding down
    instead leaves a small stage (an elementwise op needing 3.7 cores gets 3) as the pipeline's
    bottleneck; here no stage's time exceeds ``T``.
    """

    pairs = list(zip(works, floors))

    def fits(t: float) -> bool:
        """Whether ``sum(max(floor_i, ceil(work_i / t)))`` is at most ``cores`` (stops once it is not)."""
        need = 0
        for w, f in pairs:
            c = math.ceil(w / t - 1e-9)
            need += f if f >= c else c
            if need > cores:
                return False
        return True

    if not any(works):
        return list(floors)
    lo = sum(works) / cores  # every core busy: no cycle is shorter
    hi = max(w / f for w, f in zip(works, floors))  # every stage on its floor
    if not fits(hi):
        return list(floors)
    for _ in range(100):
        mid = (lo + hi) / 2
        step = (lo, mid) if fits(mid) else (mid, hi)
        if step == (lo, hi):  # a fixed point (mid is lo or hi): every later step would repeat it
            break
        lo, hi = step
    return [max(f, math.ceil(w / hi - 1e-9)) for w, f in zip(works, floors)]


def _greedy_groups(floors: Sequence[int], cap: int) -> list[list[int]]:
    """Stage indices per wafer: consecutive stages while their weights' cores stay within ``cap``."""
    groups: list[list[int]] = [[]]
    used = 0
    for i, f in enumerate(floors):
        if groups[-1] and used + f > cap:
            groups.append([])
            used = 0
        groups[-1].append(i)
        used += f
    return groups


def _wafer_groups(floors: Sequence[int], usable: int) -> list[list[int]]:
    """Stage indices per wafer: consecutive stages, as few wafers as the weights need, balanced.

    The number of wafers is the greedy fill's (consecutive stages while their weights' cores fit
    one wafer: the fewest a contiguous split allows). The stages are then split over that many
    wafers so that the fullest wafer holds as few weight cores as possible (the smallest cap with
    which the greedy fill still needs no more wafers, found by bisection): a model of 80 equal
    layers on 4 wafers gets 20 a wafer, each wafer keeping the same spare cores for the stages
    without weights (attention over the KV cache, norms), where filling wafers in turn left the
    first three full (26 layers each, a few cores for a norm) and the last nearly empty.
    """
    groups = _greedy_groups(floors, usable)
    if len(groups) <= 1 or max(floors) > usable:
        return groups
    lo, hi = max(floors), usable  # a cap below the largest stage cannot hold it; usable is feasible
    while lo < hi:
        mid = (lo + hi) // 2
        if len(_greedy_groups(floors, mid)) <= len(groups):
            hi = mid
        else:
            lo = mid + 1
    return _greedy_groups(floors, hi)


def map_layers(stages: Sequence[StageWork], wafer: WaferCore, *, max_wafers: int = 1) -> WaferMapping:
    """Map ``stages`` onto the wafer: layer-pipelined if their weights fit, else weight streaming.

    With ``max_wafers > 1`` (a profile whose interconnect keeps weights on chip: several CS-3
    systems) stages that do not fit one wafer continue on the next, consecutive layers per wafer,
    each wafer's cores given out by :func:`_allocate`; weight streaming is used only when even
    ``max_wafers`` wafers cannot hold the weights.

    Raises
    ------
    DfxError
        If the weights do not fit and the profile has no off-chip level to stream them from.
    """
    works = [wafer.work_s(s.flops, s.bytes) for s in stages]
    floors = [max(1, math.ceil(s.param_bytes / wafer.core_sram_bytes)) for s in stages]
    groups = _wafer_groups(floors, wafer.usable_cores)
    if len(groups) <= max_wafers and all(sum(floors[i] for i in g) <= wafer.usable_cores for g in groups):
        out: list[Stage] = []
        for k, group in enumerate(groups):
            cores = _allocate([works[i] for i in group], [floors[i] for i in group], wafer.usable_cores)
            out += [
                Stage(stages[i].name, c, works[i], works[i] / c, stages[i].param_bytes, k) for i, c in zip(group, cores)
            ]
        return WaferMapping(
            WaferMode.LAYER_PIPELINED, wafer.usable_cores, wafer.physical_cores, tuple(out), len(groups)
        )
    if wafer.stream_bytes_per_s is None:
        raise DfxError("the weights do not fit on the wafer and the profile has no off-chip level to stream them from")
    u = wafer.usable_cores
    out = [
        Stage(s.name, u, w, max(w / u, s.param_bytes / wafer.stream_bytes_per_s), s.param_bytes)
        for s, w in zip(stages, works)
    ]
    return WaferMapping(WaferMode.WEIGHT_STREAMING, u, wafer.physical_cores, tuple(out))


def max_wafers(profile: HardwareProfile) -> int:
    """Wafers a model may spread over: the interconnect's domain where it keeps weights on chip, else 1."""
    link = profile.interconnect
    return (link.domain_chips or 1) if link is not None and link.weights_on_chip else 1


# One evaluation on a wafer asks for a graph's mapping three times (the node timer, the export's
# ``mapping``, the placement over wafers): it is made once per graph while the graph lives
# (dfx.memo.weak_memo: freed with it), then per profile (held, so an ``is`` match is never a
# recycled object) and depth.
_MAPPINGS: dict[int, tuple[Any, dict[tuple[int, int | None], tuple[HardwareProfile, WaferMapping]]]] = {}


def map_graph(costed: CostedGraph, profile: HardwareProfile, depth: int | None = None) -> WaferMapping:
    """:func:`map_layers` on the layers of ``costed`` (see :func:`stages_of`), over :func:`max_wafers`."""
    from dfx.memo import weak_memo

    per_profile = weak_memo(_MAPPINGS, costed, lambda _: {})
    hit = per_profile.get((id(profile), depth))
    if hit is not None and hit[0] is profile:
        return hit[1]
    mapping = map_layers(stages_of(costed, depth), WaferCore.from_profile(profile), max_wafers=max_wafers(profile))
    per_profile[(id(profile), depth)] = (profile, mapping)
    return mapping


def wafer_node_timer(costed: CostedGraph, profile: HardwareProfile) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
    """Time each node on its stage's region: its work on one core / the region's cores.

    In weight-streaming mode a node's time is at least its weights' bytes / the MemoryX bandwidth.
    """
    wafer = WaferCore.from_profile(profile)
    mapping = map_graph(costed, profile)
    cores = mapping.cores_per_stage
    index = costed.graph.parameter_index
    streaming = mapping.mode is WaferMode.WEIGHT_STREAMING

    def seconds(cn: CostedNode) -> tuple[float, float]:
        """A node's compute and memory seconds on its stage's region."""
        c = cores[stage_name(cn.node.module_path)]
        compute = cn.cost.flops / (c * wafer.core_flop_per_s)
        memory = cn.cost.bytes / (c * wafer.core_sram_bytes_per_s)
        if streaming:
            weights = sum(index[p].spec.nbytes for p in dict.fromkeys(cn.node.params))
            memory = max(memory, weights / wafer.stream_bytes_per_s)
        return compute, memory

    def timer(cn: CostedNode, base: NodeTiming) -> NodeTiming:
        if cn.cost.flops == 0 and cn.cost.bytes == 0:
            return base
        compute, memory = seconds(cn)
        return base.with_(
            bound=Bound.COMPUTE if compute >= memory else Bound.MEMORY,
            time_s=max(compute, memory),
            compute_time_s=compute,
            memory_time_s=memory,
            overhead_s=0.0,
        )

    def figures(cn: CostedNode) -> tuple[float, float, float, float]:
        """``timer``'s time, compute, memory and overhead seconds of a node with work (what a kernel's
        time reads of it: :func:`dfx.roofline.program.evaluate_program_from_figures`)."""
        compute, memory = seconds(cn)
        return max(compute, memory), compute, memory, 0.0

    timer.figures = figures  # type: ignore[attr-defined]
    return timer


@dataclass(frozen=True)
class WaferModel:
    """The :class:`dfx.arch.ArchModel` for Cerebras wafer profiles."""

    name: str = "cerebras-wafer"
    times_operators: bool = True  # cycles (regions) per operator, SRAM traffic included

    def applies_to(self, profile: HardwareProfile) -> bool:
        return profile.compute.cores is not None  # the wafer target (dfx.targets.wafer) asks

    def node_timer(
        self, costed: CostedGraph, profile: HardwareProfile
    ) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
        return wafer_node_timer(costed, profile)

    def extras(self, costed: CostedGraph, profile: HardwareProfile) -> dict[str, Any]:
        """``mapping``: cores per stage, stage times, the bottleneck, usable cores, busy fraction."""
        return {"mapping": map_graph(costed, profile).to_dict()}
