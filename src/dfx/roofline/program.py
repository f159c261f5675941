"""A compiled program on one profile: each kernel's time on its share of the machine, and the makespan.

A kernel placed on ``c`` of the chip's ``C`` cores (:mod:`dfx.compile.placement`) gets ``c / C`` of
the peak FLOP/s *and* ``c / C`` of each memory level's bandwidth::

    compute_full = sum of its nodes' compute times on the whole machine   (flops / peak, or an
                                                                            architecture model's)
    memory_full  = max(offchip_bytes / off-chip bandwidth, onchip_bytes / on-chip bandwidth)
    time         = max(compute_full, memory_full) * C / c + op_overhead   (one launch per kernel)
    time         = max(time, tile_time_s)   where the tiling pass gave one (a GPU kernel's Triton waves,
                                            docs/gpu.md: the tail wave and masked tiles add time)

Under a runtime (``efficiency``, a profile's ``runtimes.<name>``, as :mod:`dfx.roofline.latency` uses it)
the nodes' compute times already carry the runtime's FLOP fraction of their category; the kernel's
bandwidths are scaled by the runtime's bandwidth fraction of the kernel's category (:func:`kernel_category`:
a GEMM or attention kernel ``matmul``, a reduction ``normalization``, a pointwise one ``elementwise``, a
memory one ``memory``), and the runtime's ``kernel_fixed_s`` replaces ``op_overhead`` (one launch per
kernel, in the tile model's time too)::

    memory_full  = max(offchip_bytes / (off-chip bandwidth * f), onchip_bytes / (on-chip bandwidth * f))
    time         = max(compute_full, memory_full) * C / c + kernel_fixed_s
    time         = max(time, tile_time_s - op_overhead + kernel_fixed_s)

NB: a fused kernel takes one category's bandwidth fraction (its kind's), not a mix of its nodes'. The tile
model's waves run at the peaks; the runtime's fractions bound the kernel from the other side (max).

Why bandwidth is shared in proportion to cores: a core draws memory bandwidth through its own
load/store path, and the bytes it can have in flight bound what it can draw (Little's law:
bandwidth = bytes in flight / latency); a GPU needs most of its SMs busy to approach HBM's peak.
Sharing both resources by the same fraction keeps the machine one resource (cores) for the list
schedule and makes the bounds sound: a kernel on ``c`` cores for ``t`` seconds does at most
``c / C * peak * t`` FLOPs and moves at most ``c / C * bandwidth * t`` bytes, so the makespan is never
below total FLOPs / peak or total off-chip bytes / bandwidth. It is pessimistic for a lone kernel
with few tiles (one SM can draw more than ``1 / C`` of HBM), whose time is mostly launch overhead.

Where an architecture model times each operator whole, on-chip traffic and chip-to-chip crossings
included (the Groq TSP's cycles, the Cerebras wafer's regions: ``operator_times``), a kernel's time is
the sum of its nodes' times from that model. Those chips keep one kernel per operator, and their
latency (the TSP's compile-time schedule, the wafer's stages) is built from the same operator times,
so the serial time is never below it and the critical path stays the lower bound. Their off-chip
bytes are not charged again: the models hold weights, the KV cache and the graph's activations on
chip, the steady state dfx quotes there (``docs/compile.md``, "Weights resident on chip").

On-chip bytes are charged to the on-chip level when the profile gives it a bandwidth, else they are
free (kept in registers and caches whose bandwidth is not published). A ``COLLECTIVE`` kernel
occupies no cores; its time is the sum of its nodes' times (the interconnect model that produced it).

The makespan is the list schedule of :func:`dfx.compile.schedule.list_schedule` under the profile's
policy (static where the scheduling commitment is static, else dynamic). ``serial_time_s`` is the
one-stream sum of the kernels' times; the critical path (the infinite-resource lower bound) is the
longest dependency chain of kernel times.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from dfx.compile import KernelKind, Program, core_count, list_schedule, policy_for
from dfx.compile.program import Kernel
from dfx.compile.schedule import KernelSchedule, Policy
from dfx.frozen import copy_with
from dfx.hardware import HardwareProfile
from dfx.hardware.schema import Efficiency
from dfx.roofline.bound import Bound
from dfx.roofline.execution import home_level
from dfx.roofline.latency import NodeTiming
from dfx.schedule import CriticalPath

if TYPE_CHECKING:  # export records, imported where a record is built: a sweep never builds one
    from dfx.schema.analysis import KernelRecord, ProgramRecord

__all__ = ["KernelTiming", "ProgramResult", "evaluate_program", "kernel_category", "kernel_timing"]


@dataclass(frozen=True)
class KernelTiming:
    """One kernel's time on its cores, and where in the schedule it ran."""

    name: str
    kind: str
    nodes: tuple[str, ...]
    bound: Bound
    time_s: float  # on its cores, overhead included
    compute_time_s: float  # on the whole machine
    memory_time_s: float  # on the whole machine
    overhead_s: float
    cores: int
    tiles: int
    flops: int
    offchip_bytes: int
    onchip_bytes: int
    start_s: float = 0.0
    end_s: float = 0.0
    deps: tuple[str, ...] = ()  # kernels whose outputs it reads

    def with_(self, **changes: Any) -> KernelTiming:
        """A copy with ``changes`` applied, without ``dataclasses.replace``'s per-field walk
        (as :meth:`dfx.compile.Kernel.with_`); an unknown field still raises replace's ``TypeError``."""
        return copy_with(self, changes)

    def to_record(self) -> KernelRecord:
        """The document's ``program.kernels[]`` record (:mod:`dfx.schema.analysis`)."""
        from dfx.schema.analysis import KernelRecord

        return KernelRecord(
            name=self.name,
            kind=str(self.kind),
            nodes=tuple(self.nodes),
            bound=self.bound,
            time_s=self.time_s,
            compute_time_s=self.compute_time_s,
            memory_time_s=self.memory_time_s,
            overhead_s=self.overhead_s,
            cores=self.cores,
            tiles=self.tiles,
            flops=self.flops,
            offchip_bytes=self.offchip_bytes,
            onchip_bytes=self.onchip_bytes,
            start_s=self.start_s,
            end_s=self.end_s,
            deps=tuple(self.deps),
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


@dataclass(frozen=True)
class ProgramResult:
    """A program evaluated on a profile: kernel timings, their schedule and the summary times."""

    program: Program
    kernels: tuple[KernelTiming, ...]
    schedule: KernelSchedule
    total_cores: int
    serial_time_s: float
    critical_path: CriticalPath  # over kernels: the infinite-resource lower bound

    def __getattr__(self, name: str) -> Any:
        """A field :func:`evaluate_fused_from_figures` left to work out on first read (the placed program, its
        kernels' records and their schedule; :func:`evaluate_program_from_figures`: the kernels' records):
        all of them are computed then, once, and kept. Called only for a missing attribute."""
        fields_ = self.__dict__
        deferred = fields_.get("_deferred")
        if deferred is None or name not in _DEFERRED:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        for key, value in deferred().items():
            fields_.setdefault(key, value)
        del fields_["_deferred"]
        return fields_[name]

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and copy the result with every deferred field worked out (a closure does not pickle)."""
        if "_deferred" in self.__dict__:
            self.__getattr__("kernels")  # fills every deferred field (kernels is deferred whenever any is)
        return self.__dict__

    @property
    def makespan_s(self) -> float:
        return self.schedule.makespan_s

    @property
    def policy(self) -> Policy:
        return self.schedule.policy

    def node_timings(self, base: tuple[NodeTiming, ...]) -> tuple[NodeTiming, ...]:
        """``base`` (each node's own roofline) with ``bound`` and ``time_s`` from the node's kernel.

        A kernel's time is shared among its nodes in proportion to their own roofline times (less
        overhead), equally when those are all 0; a node in no kernel takes 0 s. So the node times
        sum to ``serial_time_s``.
        """
        share: dict[str, tuple[Bound, float]] = {}
        by_name = {t.name: t for t in base}
        for k in self.kernels:
            if len(k.nodes) == 1:  # its whole time, as the share below gives it (x 1.0, exactly)
                held = share.get(k.nodes[0])  # an operator split into several kernels: their times add
                share[k.nodes[0]] = (k.bound, k.time_s * 1.0 + (held[1] if held else 0.0))
                continue
            work = [max(0.0, by_name[n].time_s - by_name[n].overhead_s) if n in by_name else 0.0 for n in k.nodes]
            total = sum(work)
            for n, w in zip(k.nodes, work):
                share[n] = (k.bound, k.time_s * (w / total if total > 0 else 1 / len(k.nodes)))
        out, new, none = [], object.__new__, (Bound.NONE, 0.0)
        for t in base:
            bound, time_s = share.get(t.name, none)
            # the same record where nothing changes (a node with no work outside every kernel)
            if bound is t.bound and time_s == t.time_s:
                out.append(t)
                continue
            # t.with_(bound=bound, time_s=time_s) without copy_with's field check (both are fields, and
            # NodeTiming has no __post_init__): one copy per node and profile
            copy = new(NodeTiming)
            copy.__dict__.update(t.__dict__, bound=bound, time_s=time_s)
            out.append(copy)
        return tuple(out)

    def to_record(self) -> ProgramRecord:
        """The ``program`` export field under ``hardware.<id>`` (``docs/export-format.md``)."""
        from dfx.schema.analysis import ProgramRecord

        program = self.program
        return ProgramRecord(
            target=program.target,
            commitment=program.commitment,
            schedule_policy=self.policy.value,
            cores=self.total_cores,
            kernel_count=len(self.kernels),
            tile_count=program.tile_count,
            flops=program.flops,
            offchip_bytes=program.offchip_bytes,
            core_utilization=self.schedule.core_seconds() / (self.total_cores * self.makespan_s)
            if self.makespan_s > 0 and self.total_cores
            else 0.0,
            critical_path_kernels=tuple(self.critical_path.nodes),
            stages=tuple(s.to_record() for s in program.stages),
            kernels=tuple(k.to_record() for k in self.kernels),
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


def _level_time(nbytes: int, bandwidth: float | None) -> float:
    return nbytes / bandwidth if nbytes and bandwidth else 0.0


# the cost category whose runtime bandwidth fraction a kernel of each kind moves its bytes at
_KIND_CATEGORY = {
    KernelKind.GEMM: "matmul",
    KernelKind.ATTENTION: "matmul",  # attention's two contractions are matmul FLOPs (docs/cost-model.md)
    KernelKind.POINTWISE: "elementwise",
    KernelKind.REDUCTION: "normalization",  # softmax, norms and sums with their prologue and epilogue
    KernelKind.MEMORY: "memory",
}


def kernel_category(kind: KernelKind) -> str | None:
    """The cost category (:class:`dfx.costs.Category` value) whose runtime fractions a kernel of ``kind`` takes.

    >>> kernel_category(KernelKind.REDUCTION)
    'normalization'
    """
    return _KIND_CATEGORY.get(kind)


def kernel_timing(
    kernel: Kernel,
    nodes: Mapping[str, NodeTiming],
    profile: HardwareProfile,
    operator_times: bool = False,
    efficiency: Efficiency | None = None,
) -> KernelTiming:
    """``kernel``'s time on its ``cores`` of ``profile`` (see the module docstring).

    ``nodes`` maps node name -> the node's own timing on the whole machine (its compute time, from
    the roofline or an architecture model). ``operator_times``: the nodes' times are an architecture
    model's whole-operator times, and the kernel's time is their sum. ``efficiency``: a runtime's
    fractions and fixed cost per kernel (``profile.runtime(name)``); ``None``: the ideal roofline.
    """
    return _KernelClock(profile, operator_times, efficiency).time(kernel, nodes)


class _KernelClock:
    """What :func:`kernel_timing` reads of the profile (cores, the home and on-chip levels) and of a runtime
    (its bandwidth fractions and fixed cost per kernel), looked up once."""

    def __init__(self, profile: HardwareProfile, operator_times: bool, efficiency: Efficiency | None = None) -> None:
        self.operator_times = operator_times
        self.total = core_count(profile)
        off, on = home_level(profile), profile.on_chip_level()
        self.off_bandwidth = off.bandwidth_bytes_per_s
        self.on_bandwidth = on.bandwidth_bytes_per_s if on else None
        self.op_overhead_s = profile.op_overhead_s
        self.efficiency = efficiency
        self.overhead_s = efficiency.kernel_fixed_s if efficiency is not None else profile.op_overhead_s
        # a tile model's time holds the profile's op_overhead_s: the runtime's fixed cost replaces it
        self.tile_shift_s = self.overhead_s - profile.op_overhead_s

    def time_from_compute(self, kernel: Kernel, compute_s: Mapping[str, float]) -> KernelTiming:
        """:meth:`time` of a kernel that is neither a collective nor operator-timed, from each node's compute
        time alone (all such a kernel reads of its nodes: its memory time and overhead are its own)."""
        compute = 0
        for n in kernel.nodes:
            c = compute_s.get(n)
            if c is not None:
                compute += c
        return self._own_time(kernel, compute)

    def time_from_figures(
        self, kernel: Kernel, figures: Mapping[str, tuple[float, float, float, float]]
    ) -> KernelTiming:
        """:meth:`time` of an operator-timed kernel that is not a collective, from each node's ``(time_s,
        compute_time_s, memory_time_s, overhead_s)`` (all such a kernel reads of its nodes)."""
        time_s = compute = memory = overhead = 0
        for n in kernel.nodes:
            f = figures.get(n)
            if f is not None:
                time_s += f[0]
                compute += f[1]
                memory += f[2]
                overhead += f[3]
        bound = Bound.NONE if not time_s else (Bound.COMPUTE if compute >= memory else Bound.MEMORY)
        return _timed(kernel, bound, time_s, compute, memory, overhead, kernel.cores)

    def time(self, kernel: Kernel, nodes: Mapping[str, NodeTiming]) -> KernelTiming:
        """:func:`kernel_timing` of ``kernel``."""
        # the nodes' sums in one walk: each added in node order from 0, as sum() adds them
        time_s = compute = memory = overhead = 0
        for n in kernel.nodes:
            t = nodes.get(n)
            if t is not None:
                time_s += t.time_s
                compute += t.compute_time_s
                memory += t.memory_time_s
                overhead += t.overhead_s
        if self.operator_times and kernel.kind is not KernelKind.COLLECTIVE:
            bound = Bound.NONE if not time_s else (Bound.COMPUTE if compute >= memory else Bound.MEMORY)
            return _timed(kernel, bound, time_s, compute, memory, overhead, kernel.cores)
        if kernel.kind is KernelKind.COLLECTIVE:
            return _timed(kernel, Bound.MEMORY if time_s else Bound.NONE, time_s, 0.0, time_s, 0.0, 0)
        return self._own_time(kernel, compute)

    def _own_time(self, kernel: Kernel, compute: float) -> KernelTiming:
        """A kernel's time on its cores from its nodes' summed compute time (neither collective nor
        operator-timed): its memory time from its own bytes, one launch's overhead. A step of a split
        operator does its share of the operator's compute (``Kernel.compute_share``)."""
        compute *= kernel.compute_share
        time_s, memory, overhead = self._own_seconds(kernel, compute)
        if not (compute or memory):
            bound = Bound.NONE if not (kernel.flops or kernel.bytes) else Bound.COMPUTE
        else:
            bound = Bound.COMPUTE if compute >= memory else Bound.MEMORY
        return _timed(kernel, bound, time_s, compute, memory, overhead, kernel.cores)

    def _own_seconds(self, kernel: Kernel, compute: float) -> tuple[float, float, float]:
        """:meth:`_own_time`'s ``(time_s, memory_time_s, overhead_s)``, without its record."""
        memory = max(
            _level_time(kernel.offchip_bytes, self.off_bandwidth), _level_time(kernel.onchip_bytes, self.on_bandwidth)
        )
        if memory and self.efficiency is not None:  # the runtime's achieved share of every bandwidth
            memory = memory / self.efficiency.bandwidth_share(_KIND_CATEGORY.get(kernel.kind))
        work = compute or memory or kernel.flops or kernel.bytes
        overhead = self.overhead_s if work else 0.0
        share = self.total / kernel.cores if kernel.cores else 1.0
        time_s = max(compute, memory) * share + overhead
        if kernel.tile_time_s is not None:  # a tile model's waves (GPU: dfx.arch.gpu) only add time: tail, masked tiles
            time_s = max(time_s, kernel.tile_time_s + self.tile_shift_s)
        return time_s, memory, overhead

    def seconds_from_compute(self, kernel: Kernel, compute_s: Mapping[str, float]) -> float:
        """:meth:`time_from_compute`'s ``time_s`` alone (the same sums, no record)."""
        compute = 0
        for n in kernel.nodes:
            c = compute_s.get(n)
            if c is not None:
                compute += c
        return self._own_seconds(kernel, compute * kernel.compute_share)[0]


def _timed(
    kernel: Kernel, bound: Bound, time_s: float, compute_s: float, memory_s: float, overhead_s: float, cores: int
) -> KernelTiming:
    """A :class:`KernelTiming` of ``kernel``: the times given, its name, nodes, tiles, FLOPs and bytes its own.

    Filled without the frozen dataclass's per-field ``object.__setattr__`` (one per kernel and
    profile): every field is given here, and the class has no ``__post_init__``.
    """
    timing = object.__new__(KernelTiming)
    timing.__dict__.update(
        name=kernel.name,
        kind=kernel.kind.value,
        nodes=kernel.nodes,
        bound=bound,
        time_s=time_s,
        compute_time_s=compute_s,
        memory_time_s=memory_s,
        overhead_s=overhead_s,
        cores=cores,
        tiles=kernel.tiles,
        flops=kernel.flops,
        offchip_bytes=kernel.offchip_bytes,
        onchip_bytes=kernel.onchip_bytes,
        start_s=0.0,
        end_s=0.0,
        deps=(),
    )
    return timing


def _critical_path(program: Program, times: Mapping[str, float]) -> CriticalPath:
    finish: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for k in program.kernels:
        best, best_s = None, 0.0  # the dependency that finishes last (the first of equals, as max() picks)
        for d in k.deps:
            if d in finish and (best is None or finish[d] > best_s):
                best, best_s = d, finish[d]
        finish[k.name] = times[k.name] + best_s
        via[k.name] = best
    if not finish:
        return CriticalPath(0.0, ())
    end = max(finish, key=lambda n: finish[n])
    path = [end]
    while via[path[-1]] is not None:
        path.append(via[path[-1]])
    return CriticalPath(finish[end], tuple(reversed(path)))


def evaluate_program(
    program: Program,
    nodes: tuple[NodeTiming, ...],
    profile: HardwareProfile,
    policy: Policy | str | None = None,
    kernel_timer: Any = None,
    *,
    operator_times: bool = False,
    efficiency: Efficiency | None = None,
) -> ProgramResult:
    """Time every kernel of ``program`` on ``profile`` and list-schedule them.

    Parameters
    ----------
    program : Program
        A placed program (:meth:`dfx.targets.Target.compile`); kernels with ``cores == 0`` other
        than collectives are placed on one core.
    nodes : tuple of NodeTiming
        Each graph node's own timing on the whole machine (:func:`dfx.roofline.node_timing`).
    profile : HardwareProfile
    policy : optional
        Override the policy the profile's scheduling commitment implies.
    kernel_timer : callable, optional
        ``kernel_timer(kernel, timing) -> KernelTiming``: a machine model that re-times kernels (the
        calibrated CPU model, ``dfx.measure.cache_model``); it returns the timing unchanged for the rest.
    operator_times : bool
        ``nodes`` hold an architecture model's whole-operator times (Groq, Cerebras): each kernel
        takes the sum of its nodes' times (see the module docstring).
    efficiency : Efficiency, optional
        The runtime ``nodes`` were timed under (``profile.runtime(name)``): its bandwidth fractions and
        fixed cost per kernel time the kernels too; ``None``: the ideal roofline.

    Returns
    -------
    ProgramResult
    """
    by_name = MappingProxyType({t.name: t for t in nodes})
    clock = _KernelClock(profile, operator_times, efficiency)
    return _evaluate(program, profile, policy, kernel_timer, lambda k: clock.time(k, by_name))


def evaluate_program_from_figures(
    program: Program,
    figures: Mapping[str, Any],
    profile: HardwareProfile,
    *,
    operator_times: bool = False,
    efficiency: Efficiency | None = None,
) -> ProgramResult:
    """:func:`evaluate_program` (the profile's policy, no kernel timer) from the few figures a kernel's time
    reads of its nodes, without their full records. Same result.

    ``figures`` maps every node name to its ``NodeTiming.compute_time_s``; with ``operator_times``, to its
    ``(time_s, compute_time_s, memory_time_s, overhead_s)``.

    Raises
    ------
    ValueError
        If the program has a collective kernel (its time is its nodes' times: use :func:`evaluate_program`).
    """
    if any(k.kind is KernelKind.COLLECTIVE for k in program.kernels):
        raise ValueError("a collective kernel's time is its nodes' times: use evaluate_program")
    clock = _KernelClock(profile, operator_times, efficiency)
    if operator_times:
        return _evaluate(program, profile, None, None, lambda k: clock.time_from_figures(k, figures))
    return _evaluate_from_compute(program, profile, clock, figures)


def _evaluate_from_compute(
    program: Program, profile: HardwareProfile, clock: _KernelClock, compute_s: Mapping[str, float]
) -> ProgramResult:
    """:func:`_evaluate` (the profile's policy, no kernel timer) of kernels timed by ``clock.time_from_compute``,
    with the kernels' records made on first read (``ProgramResult.kernels``; a latency reads the schedule,
    the serial time and the critical path, which take each kernel's ``time_s`` alone). Same result."""
    total = core_count(profile)
    placed = _on_cores(program)
    durations = {k.name: clock.seconds_from_compute(k, compute_s) for k in placed.kernels}
    schedule = list_schedule(placed, durations, total, policy_for(profile.scheduling.commitment))

    def deferred() -> dict[str, Any]:
        timings = [clock.time_from_compute(k, compute_s) for k in placed.kernels]
        for t, s, k in zip(timings, schedule.slots, placed.kernels):  # as _evaluate fills its own records
            t.__dict__.update(start_s=s.start_s, end_s=s.end_s, deps=k.deps)
        return {"kernels": tuple(timings)}

    result = object.__new__(ProgramResult)  # the kernels left out, every other field given
    result.__dict__.update(
        program=placed,
        schedule=schedule,
        total_cores=total,
        serial_time_s=sum(durations.values(), 0.0),
        critical_path=_critical_path(placed, durations),
        _deferred=deferred,
    )
    return result


def _on_cores(program: Program) -> Program:
    """``program`` with each kernel that is neither placed nor a collective on one core."""
    if all(k.cores or k.kind is KernelKind.COLLECTIVE for k in program.kernels):
        return program
    return program.with_(
        kernels=tuple(k if k.cores or k.kind is KernelKind.COLLECTIVE else k.with_(cores=1) for k in program.kernels)
    )


def evaluate_fused_from_figures(
    fused: Program, finish: Callable[[Program], Program], figures: Mapping[str, Any], profile: HardwareProfile
) -> ProgramResult:
    """:func:`evaluate_program_from_figures` of an operator-timed program (Groq, Cerebras: each kernel takes the
    sum of its nodes' times) whose last passes are still to run: ``finish(fused)`` runs them (residency,
    tiling, placement, schedule). Those change a kernel's bytes, tiles and cores, never its name, nodes,
    kind or dependencies, and an operator-timed kernel's time reads none of what they change; so the
    serial time and the critical path are the fused program's, worked out now, and the placed program,
    its kernels' records and their schedule (the makespan) when first read. Same result.

    Raises
    ------
    ValueError
        If ``fused`` has a collective kernel (its time is its nodes' times: use :func:`evaluate_program`).
    """
    if any(k.kind is KernelKind.COLLECTIVE for k in fused.kernels):
        raise ValueError("a collective kernel's time is its nodes' times: use evaluate_program")
    durations = {}
    for k in fused.kernels:  # time_from_figures' time_s: the nodes' times added in node order from 0
        time_s = 0
        for n in k.nodes:
            f = figures.get(n)
            if f is not None:
                time_s += f[0]
        durations[k.name] = time_s

    def deferred() -> dict[str, Any]:
        full = evaluate_program_from_figures(finish(fused), figures, profile, operator_times=True)
        return {"program": full.program, "kernels": full.kernels, "schedule": full.schedule}

    result = object.__new__(ProgramResult)  # the _DEFERRED fields left out, every other given
    result.__dict__.update(
        total_cores=core_count(profile),
        serial_time_s=sum(durations.values(), 0.0),
        critical_path=_critical_path(fused, durations),
        _deferred=deferred,
    )
    return result


# ProgramResult fields evaluate_fused_from_figures defers to their first read (ProgramResult.__getattr__);
# evaluate_program_from_figures (not operator-timed) defers the kernels alone
_DEFERRED = frozenset({"program", "kernels", "schedule"})


def _evaluate(
    program: Program, profile: HardwareProfile, policy: Policy | str | None, kernel_timer: Any, time
) -> ProgramResult:
    """:func:`evaluate_program` with each kernel timed by ``time(kernel) -> KernelTiming``."""
    total = core_count(profile)
    placed = _on_cores(program)
    timings = [time(k) for k in placed.kernels]
    if kernel_timer is not None:
        timings = [kernel_timer(k, t) for k, t in zip(placed.kernels, timings)]
    durations = {t.name: t.time_s for t in timings}
    chosen = policy_for(profile.scheduling.commitment) if policy is None else Policy(policy)
    schedule = list_schedule(placed, durations, total, chosen)
    if kernel_timer is None:
        # the records are this call's own, made above and seen by nobody yet: their schedule fields are
        # filled in as the last step of their construction, instead of a copy of each
        for t, s, k in zip(timings, schedule.slots, placed.kernels):
            t.__dict__.update(start_s=s.start_s, end_s=s.end_s, deps=k.deps)
    else:  # a timer's records may be its own or shared: copied
        timings = [
            t.with_(start_s=s.start_s, end_s=s.end_s, deps=k.deps)
            for t, s, k in zip(timings, schedule.slots, placed.kernels)
        ]
    return ProgramResult(
        program=placed,
        kernels=tuple(timings),
        schedule=schedule,
        total_cores=total,
        serial_time_s=sum(durations.values(), 0.0),
        critical_path=_critical_path(placed, durations),
    )
