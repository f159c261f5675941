"""One costed graph on one hardware profile: every node's bound and time, and the graph's schedule.

:func:`evaluate` is the entry point; its :class:`HardwareResult` is what the export format holds
under ``hardware.<profile id>`` (``HardwareResult.to_dict``, documented in ``docs/hardware.md``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from dfx.compile import KernelKind, Program
from dfx.costs.record import CostedGraph, CostedNode
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile, HardwareProfileError, load_profile
from dfx.hardware.schema import Efficiency
from dfx.ir import normalize_dtype
from dfx.roofline.bound import Bound, ridge_points
from dfx.roofline.execution import ExecutionModel, default_execution_model, node_model, parse_execution_model
from dfx.roofline.latency import _FALLBACK_DTYPE, NodeTiming, node_timings
from dfx.roofline.per_graph import per_graph
from dfx.roofline.program import (
    ProgramResult,
    evaluate_fused_from_figures,
    evaluate_program,
    evaluate_program_from_figures,
)
from dfx.schedule import CriticalPath, Parallelism, critical_path, parallelism
from dfx.schema.ids import ANALYSIS_SCHEMA

if TYPE_CHECKING:  # export records, imported where a record is built: a sweep never builds one
    from dfx.schema.analysis import (
        HardwareRecord,
    )

__all__ = ["BoundShift", "HardwareResult", "evaluate", "partition_shift"]

NodeTimer = Callable[[CostedNode, NodeTiming], NodeTiming]

_DEFAULT_RIDGE_DTYPE = "float32"  # ridge dtype of a graph with no dtype to read (e.g. empty)


@dataclass(frozen=True)
class BoundShift:
    """A node whose bound against the on-chip level differs from its bound against the off-chip one."""

    node: str
    from_bound: Bound  # against the off-chip level
    to_bound: Bound  # against the on-chip level

    def to_dict(self) -> dict[str, str]:
        from dfx.schema.analysis import ShiftRecord

        return ShiftRecord(node=self.node, from_bound=self.from_bound, to_bound=self.to_bound).to_dict()


def partition_shift(nodes: Iterable[NodeTiming]) -> tuple[BoundShift, ...]:
    """The nodes whose bound changes when classified against the on-chip ridge instead of the off-chip one.

    Empty when the profile lacks either level (then ``bound_on_chip`` or ``bound_off_chip`` is ``None``).
    """
    return tuple(
        BoundShift(t.name, t.bound_off_chip, t.bound_on_chip)
        for t in nodes
        if t.bound_off_chip is not None and t.bound_on_chip is not None and t.bound_off_chip != t.bound_on_chip
    )


@dataclass(frozen=True)
class HardwareResult:
    """A costed graph evaluated on one profile. Build it with :func:`evaluate`."""

    profile: HardwareProfile
    execution_model: ExecutionModel
    ridge_dtype: str
    ridge_flop_per_byte: Mapping[str, float]
    nodes: tuple[NodeTiming, ...]
    serial_time_s: float
    critical_path: CriticalPath
    partition_shift: tuple[BoundShift, ...]
    parallelism: Parallelism
    dtype_fallbacks: Mapping[str, str]  # requested dtype -> dtype whose peak was used
    arch_model: str | None = None  # the architecture model that timed some nodes, if any
    extras: Mapping[str, Any] = field(default_factory=dict)  # export fields an architecture model adds
    makespan_s: float | None = None  # on the machine's finite resources; None: the serial time
    program: ProgramResult | None = None  # the compiled program's evaluation (execution model compiled)

    def __getattr__(self, name: str) -> Any:
        """A field :func:`evaluate` left to work out on first read (``_DEFERRED``: the per-node records, the
        bound shifts and the dtype fallbacks of a compiled result, which no
        latency reads): all of them are computed then, once, and kept. Called only for a missing attribute."""
        fields_ = self.__dict__
        deferred = fields_.get("_deferred")
        if deferred is None or name not in _DEFERRED:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        for key, value in deferred().items():
            fields_.setdefault(key, value)  # a field a copy was given (copy_with) stands
        del fields_["_deferred"]
        if name not in fields_:  # a field this result did not defer (its default was given)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return fields_[name]

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and copy the result with every deferred field worked out (a closure does not pickle)."""
        if "_deferred" in self.__dict__:
            self.nodes  # noqa: B018 (fills every deferred field)
        return self.__dict__

    @property
    def profile_id(self) -> str:
        return self.profile.id

    @property
    def latency_s(self) -> float:
        """The latency a user should quote for one run of the graph on this profile: the makespan.

        Under the ``compiled`` execution model, the list schedule of the compiled program's kernels
        on the machine's cores (:mod:`dfx.roofline.program`). Under a node-level model (``eager``,
        ``scratchpad``) operators run one at a time on the whole machine, so the makespan is the
        serial time. Callers that need "the" predicted time (phases, sweeps, reality checks) read
        this, never a field directly.
        """
        return self.serial_time_s if self.makespan_s is None else self.makespan_s

    def node(self, name: str) -> NodeTiming:
        """The timing of the node called ``name``; ``KeyError`` naming it if absent."""
        for timing in self.nodes:
            if timing.name == name:
                return timing
        raise KeyError(f"no node {name!r} in the result for {self.profile.id!r}")

    @property
    def bound_counts(self) -> dict[str, int]:
        """How many nodes are compute-bound, memory-bound, or do no work."""
        counts = Counter(t.bound for t in self.nodes)
        return {b.value: counts.get(b, 0) for b in Bound}

    def to_record(self) -> HardwareRecord:
        """This result as the document's ``hardware.<id>`` record (:mod:`dfx.schema.analysis`).

        ``extras`` (what an architecture model or :mod:`dfx.parallel` adds) go in as they are;
        ``eager``, ``chips``, ``parallel`` and ``runtime`` among them are typed by the record.
        """
        from dfx.schema.analysis import (
            CriticalPathRecord,
            EagerRecord,
            HardwareRecord,
            ParallelismRecord,
            ParallelRecord,
            MoeRecord,
            RecomputeRecord,
            ShiftRecord,
        )

        on, off = self.profile.on_chip_level(), self.profile.off_chip_level()
        extras = dict(self.extras)
        eager = extras.pop("eager", None)
        chips = extras.pop("chips", None)
        parallel = extras.pop("parallel", None)
        recompute = extras.pop("recompute", None)
        moe = extras.pop("moe", None)
        runtime = extras.pop("runtime", None)
        return HardwareRecord(
            id=self.profile.id,
            execution_model=self.execution_model.value,
            off_chip_level=off.name if off else None,
            on_chip_level=on.name if on else None,
            ridge_dtype=self.ridge_dtype,
            ridge_flop_per_byte=MappingProxyType(dict(self.ridge_flop_per_byte)),
            peak_flop_per_s=self.profile.peak(self.ridge_dtype).flop_per_s,
            bandwidth_bytes_per_s=MappingProxyType(
                {lv.name: lv.bandwidth_bytes_per_s for lv in self.profile.memory if lv.bandwidth_bytes_per_s}
            ),
            nodes=MappingProxyType({t.name: t.to_record() for t in self.nodes}),
            serial_time_s=self.serial_time_s,
            makespan_s=self.latency_s,
            critical_path=CriticalPathRecord(time_s=self.critical_path.time_s, nodes=tuple(self.critical_path.nodes)),
            partition_shift=tuple(
                ShiftRecord(node=s.node, from_bound=s.from_bound, to_bound=s.to_bound) for s in self.partition_shift
            ),
            parallelism=ParallelismRecord(**self.parallelism.to_dict()),
            bound_counts=MappingProxyType(self.bound_counts),
            dtype_fallbacks=MappingProxyType(dict(self.dtype_fallbacks)),
            arch_model=self.arch_model,
            program=self.program.to_record() if self.program is not None else None,
            eager=None
            if eager is None
            else EagerRecord.from_dict(eager, ANALYSIS_SCHEMA, f"hardware.{self.profile.id}.eager"),
            chips=chips,
            parallel=None
            if parallel is None
            else ParallelRecord.from_dict(parallel, ANALYSIS_SCHEMA, f"hardware.{self.profile.id}.parallel"),
            recompute=None
            if recompute is None
            else RecomputeRecord.from_dict(recompute, ANALYSIS_SCHEMA, f"hardware.{self.profile.id}.recompute"),
            moe=None if moe is None else MoeRecord.from_dict(moe, ANALYSIS_SCHEMA, f"hardware.{self.profile.id}.moe"),
            runtime=runtime,
            extras=MappingProxyType(extras),
        )

    def to_dict(self) -> dict[str, Any]:
        """The export fields for this profile (documented in ``docs/export-format.md``)."""
        return self.to_record().to_dict()


# HardwareResult fields a compiled evaluation defers to their first read (HardwareResult.__getattr__): the
# makespan only where the program's last passes wait too (operator-timed: evaluate_fused_from_figures)
_DEFERRED = frozenset({"nodes", "partition_shift", "dtype_fallbacks", "makespan_s"})
# A field with a default has it as a class attribute, which would answer for a deferred field before
# __getattr__ is asked: makespan_s's goes (__init__ keeps the default: dataclasses puts it in its signature).
del HardwareResult.makespan_s


def _ridge_dtype(costed: CostedGraph, dtype: str | None) -> str:
    """The override, else the dtype carrying the most FLOPs, else the commonest node dtype."""
    return dtype if dtype is not None else per_graph(costed, _graph_dtype)


def _graph_dtype(costed: CostedGraph) -> str:
    """The dtype carrying the most FLOPs, else the commonest node dtype (a per-graph fact)."""
    flops: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for n in costed.nodes:
        if n.dtype is not None:
            flops[n.dtype] += n.cost.flops
            seen[n.dtype] += 1
    ranked = flops if any(flops.values()) else seen
    return ranked.most_common(1)[0][0] if ranked else _DEFAULT_RIDGE_DTYPE


def evaluate(
    costed: CostedGraph,
    profile: HardwareProfile | str | Path,
    dtype: str | None = None,
    *,
    execution_model: ExecutionModel | None = None,
    node_timer: NodeTimer | None = None,
    kernel_timer: Callable[..., Any] | None = None,
    arch_model: str | None = None,
    extras: Mapping[str, Any] | None = None,
    program: Program | None = None,
    runtime: str | None = None,
    operator_times: bool = False,
    finish: Callable[[Program], Program] | None = None,
) -> HardwareResult:
    """Classify and time every node of ``costed`` on ``profile``, and schedule the graph.

    Parameters
    ----------
    costed : CostedGraph
        The graph with a cost per node.
    profile : HardwareProfile, or an id, alias or path for :func:`dfx.hardware.load_profile`
    dtype : str, optional
        Use this dtype's peak FLOP/s for every node (``"bf16"``, ``"float16"``...) instead of each
        node's own dtype; bytes are unchanged (they come from the costs). It is also the dtype of
        the reported ridge points, which otherwise use the dtype carrying the most FLOPs.
    execution_model : ExecutionModel or str, optional
        ``compiled`` (the compiled program's kernels on the machine's cores: a makespan; what
        :func:`dfx.analyze` uses by default), ``eager`` or ``scratchpad`` (each operator on the whole
        machine, one at a time). Default: the profile's node-level model (``eager`` for cache
        devices, ``scratchpad`` for scratchpad devices with a usable on-chip level).
    node_timer : callable, optional
        ``node_timer(costed_node, roofline_timing) -> NodeTiming``: an architecture model (see
        :mod:`dfx.arch`) that re-times the nodes it models (e.g. matmuls on a systolic array) and
        returns the roofline timing unchanged for the rest.
    kernel_timer : callable, optional
        For ``compiled``: ``kernel_timer(kernel, kernel_timing) -> KernelTiming``, a machine model that
        re-times whole kernels (:func:`dfx.roofline.program.evaluate_program`).
    arch_model, extras : optional
        The name of that architecture model and the export fields it adds (e.g. a wafer mapping),
        carried into :meth:`HardwareResult.to_dict`.
    program : Program, optional
        For ``compiled`` (required): the program to evaluate, compiled by the profile's target
        (:meth:`dfx.targets.Target.compile`; :meth:`dfx.targets.Target.evaluate` does both). For
        ``eager``: the degenerate program
        (:meth:`dfx.targets.Target.eager_program`: one kernel per operator, no fusion) to time on the same
        kernel model as a compiled one (tiles, cores, list schedule); without it ``eager`` is the
        node-level roofline, one operator at a time on the whole machine.
    runtime : str, optional
        Time nodes as runtime ``runtime`` runs the machine (the profile's ``runtimes`` entry:
        achieved fractions of peak, fixed cost per kernel); ``None``: the ideal roofline.
    operator_times : bool
        ``node_timer`` times each operator whole (the Groq TSP, the Cerebras wafer): a program's
        kernels take the sum of their nodes' times (:func:`dfx.roofline.program.kernel_timing`).
    finish : callable, optional
        With ``operator_times``: ``program`` is the fused program and ``finish(program)`` runs the
        target's later passes on it (:meth:`dfx.targets.Target.fused`), so the kernels are priced
        before the schedule is made, which a latency alone never needs.

    Returns
    -------
    HardwareResult

    Raises
    ------
    HardwareProfileError
        If the profile cannot be loaded, ``dtype`` is not a dtype dfx knows or the execution model
        is unknown.
    DfxError
        ``compiled`` without a ``program`` (this stage times a program; the target compiles it).
    """
    if not isinstance(profile, HardwareProfile):
        profile = load_profile(profile)
    if dtype is not None:
        try:
            dtype = normalize_dtype(dtype)
        except ValueError as exc:
            raise HardwareProfileError(str(exc)) from None
    try:
        model = parse_execution_model(execution_model) or default_execution_model(profile)
    except ValueError as exc:
        raise HardwareProfileError(str(exc)) from None
    if model is ExecutionModel.COMPILED and program is None:
        raise DfxError(
            f"evaluate(execution_model='compiled') on {profile.id} needs the compiled program: pass "
            "program=dfx.targets.target_for(profile).compile(costed, profile), or call "
            "dfx.targets.target_for(profile).evaluate(costed, profile), which compiles and times it"
        )
    graph = costed.graph
    per_node = node_model(profile, model)
    efficiency = profile.runtime(runtime) if runtime is not None else None
    kernel_model = model is ExecutionModel.COMPILED or (model is ExecutionModel.EAGER and program is not None)
    if runtime is not None:
        extras = {"runtime": runtime, **dict(extras or {})}
    if kernel_model and kernel_timer is None:
        # the kernels' times read only a few figures of each node: the nodes' full records wait for a reader
        lazy = _Timings.of(costed, profile, per_node, dtype, node_timer, operator_times, efficiency)
        if lazy is not None:
            return _compiled(
                costed,
                profile,
                dtype,
                lazy,
                program,
                arch_model,
                extras,
                None,
                model,
                operator_times,
                efficiency,
                finish,
            )
    timings = node_timings(costed, profile, per_node, dtype, efficiency=efficiency)
    if node_timer is not None:
        timings = tuple(node_timer(n, t) for n, t in zip(costed.nodes, timings))
    if kernel_model:
        if finish is not None:
            program = finish(program)
        return _compiled(
            costed,
            profile,
            dtype,
            timings,
            program,
            arch_model,
            extras,
            kernel_timer,
            model,
            operator_times,
            efficiency,
        )
    durations = {t.name: t.time_s for t in timings}
    ridge_dtype = normalize_dtype(_ridge_dtype(costed, dtype))
    ridge_peak = profile.peak(ridge_dtype)
    work_span = parallelism(graph, durations)
    return HardwareResult(
        profile=profile,
        execution_model=model,
        ridge_dtype=ridge_dtype,
        ridge_flop_per_byte=MappingProxyType(ridge_points(profile, ridge_peak.requested)),
        nodes=timings,
        serial_time_s=work_span.work_s,
        critical_path=critical_path(graph, durations),
        partition_shift=partition_shift(timings),
        parallelism=work_span,
        dtype_fallbacks=_fallbacks(timings, ridge_peak),
        arch_model=arch_model,
        extras=MappingProxyType(dict(extras or {})),
        makespan_s=work_span.work_s,  # one operator at a time on the whole machine: the serial time
    )


class _Timings:
    """A graph's node timings on a profile (:func:`dfx.roofline.latency.node_timings`, under the runtime if any,
    then the node timer if any), made when first asked for (:meth:`all`), and at once only the figures a
    kernel's time reads of its nodes (:func:`dfx.roofline.program.evaluate_program_from_figures`):

    - a kernel model that is not operator-timed reads each node's compute time: the roofline's
      ``flops / (peak FLOP/s of the node's dtype x the runtime's FLOP fraction of its category)`` (1.0
      without a runtime; ``0.0`` for a node with no work), or the node timer's where it sets one
      (``node_timer.compute_s(node)``, ``None``: the roofline's stands);
    - an operator-timed one (Groq, Cerebras) reads each node's time, compute, memory and overhead
      seconds: the node timer's ``figures(node)`` for a node with work, all ``0.0`` for a node without
      (both timers return the roofline's no-work record for it).

    :meth:`of` is ``None`` where a node timer gives no such figures: the caller times every node first.
    """

    def __init__(self, args: tuple, figures: dict[str, Any]) -> None:
        self.args, self.figures = args, figures
        self._all: tuple[NodeTiming, ...] | None = None

    @classmethod
    def of(
        cls,
        costed: CostedGraph,
        profile: HardwareProfile,
        per_node: ExecutionModel,
        dtype: str | None,
        node_timer: NodeTimer | None,
        operator_times: bool,
        efficiency: Efficiency | None = None,
    ) -> _Timings | None:
        args = costed, profile, per_node, dtype, node_timer, efficiency
        figures: dict[str, Any] = {}
        nodes = per_graph(costed, _node_work)
        if operator_times:
            of_node = getattr(node_timer, "figures", None)
            if of_node is None:
                return None
            idle = (0.0, 0.0, 0.0, 0.0)
            for name, flops, _, n in nodes:
                figures[name] = idle if flops is None else of_node(n)
            return cls(args, figures)
        timer_compute = None
        if node_timer is not None:
            timer_compute = getattr(node_timer, "compute_s", None)
            if timer_compute is None:
                return None
        peaks: dict[str | None, Any] = {}
        for name, flops, node_dtype, n in nodes:
            if timer_compute is not None:
                own = timer_compute(n)
                if own is not None:
                    figures[name] = own
                    continue
            if flops is None:
                figures[name] = 0.0
                continue
            peak = peaks.get(node_dtype)
            if peak is None:
                peak = peaks[node_dtype] = profile.peak(dtype or node_dtype or _FALLBACK_DTYPE).flop_per_s
            share = 1.0 if efficiency is None else efficiency.flop_share(n.category.value)
            figures[name] = flops / (peak * share)
        return cls(args, figures)

    def all(self) -> tuple[NodeTiming, ...]:
        """Every node's timing, as :func:`evaluate` makes them without deferring (node timer applied)."""
        if self._all is None:
            costed, profile, per_node, dtype, node_timer, efficiency = self.args
            timings = node_timings(costed, profile, per_node, dtype, efficiency=efficiency)
            if node_timer is not None:
                timings = tuple(node_timer(n, t) for n, t in zip(costed.nodes, timings))
            self._all = timings
        return self._all


def _node_work(costed: CostedGraph) -> tuple[tuple[str, int | None, str | None, CostedNode], ...]:
    """Per node of ``costed``: its name, FLOPs (``None`` for a node with no work: 0 FLOPs and 0 bytes),
    dtype, and the node (a per-graph fact)."""
    return tuple(
        (n.name, None if n.cost.flops == 0 and n.cost.bytes == 0 else n.cost.flops, n.dtype, n) for n in costed.nodes
    )


def _fallbacks(timings: tuple[NodeTiming, ...], ridge_peak: Any) -> Mapping[str, str]:
    fallbacks = {t.dtype: t.peak_dtype for t in timings if t.flops and t.dtype != t.peak_dtype}
    if ridge_peak.fell_back:
        fallbacks[ridge_peak.requested] = ridge_peak.used
    return MappingProxyType(dict(sorted(fallbacks.items())))


def _sinks(costed: CostedGraph) -> tuple[str, ...]:
    """The graph's output nodes, which end its critical path (a per-graph fact)."""
    return tuple(n.name for n in costed.graph.nodes if n.op == "output")


def _compiled(
    costed: CostedGraph,
    profile: HardwareProfile,
    dtype: str | None,
    timings: tuple[NodeTiming, ...] | _Timings,
    program: Program,
    arch_model: str | None,
    extras: Mapping[str, Any] | None,
    kernel_timer: Callable[..., Any] | None = None,
    model: ExecutionModel = ExecutionModel.COMPILED,
    operator_times: bool = False,
    efficiency: Efficiency | None = None,
    finish: Callable[[Program], Program] | None = None,
) -> HardwareResult:
    """A program on the kernel model: time each kernel on its cores, list-schedule.

    ``model`` labels the result: ``compiled``, or ``eager`` for the degenerate program. With ``finish``,
    ``program`` is an operator-timed target's fused program (:func:`evaluate`).
    ``efficiency``: the runtime the nodes were timed under, which times the kernels too.
    """
    result = None
    if finish is not None:
        if operator_times and isinstance(timings, _Timings) and not _has_collective(program):
            result = evaluate_fused_from_figures(program, finish, timings.figures, profile)
        else:
            program = finish(program)
    if result is not None:
        timings_of = timings.all
    elif isinstance(timings, _Timings) and not _has_collective(program):
        result = evaluate_program_from_figures(
            program, timings.figures, profile, operator_times=operator_times, efficiency=efficiency
        )
        timings_of = timings.all
    else:
        if isinstance(timings, _Timings):
            timings = timings.all()
        result = evaluate_program(
            program, timings, profile, kernel_timer=kernel_timer, operator_times=operator_times, efficiency=efficiency
        )
        full = timings
        timings_of = lambda: full  # noqa: E731
    cp = result.critical_path
    kernel_nodes = {k.name: k.nodes for k in program.kernels}  # as the placed program's: passes keep them
    sinks = per_graph(costed, _sinks)
    # a node split into several kernels (dfx.compile.decompose) is named once
    path = CriticalPath(cp.time_s, tuple(dict.fromkeys(n for k in cp.nodes for n in kernel_nodes[k])) + sinks)
    span = cp.time_s
    work = result.serial_time_s
    ridge_dtype = normalize_dtype(_ridge_dtype(costed, dtype))
    ridge_peak = profile.peak(ridge_dtype)

    def deferred() -> dict[str, Any]:
        """The fields no latency reads, worked out when one is first read (HardwareResult.__getattr__)."""
        base = timings_of()
        return {
            "nodes": result.node_timings(base),
            "partition_shift": partition_shift(base),
            "dtype_fallbacks": _fallbacks(base, ridge_peak),
            "makespan_s": result.makespan_s,
        }

    # HardwareResult(...) with the _DEFERRED fields left out: every other field given, no __post_init__
    out = object.__new__(HardwareResult)
    out.__dict__.update(
        profile=profile,
        execution_model=model,
        ridge_dtype=ridge_dtype,
        ridge_flop_per_byte=MappingProxyType(ridge_points(profile, ridge_peak.requested)),
        serial_time_s=work,
        critical_path=path,
        parallelism=Parallelism(work, span, work / span if span > 0 else 1.0),
        arch_model=arch_model,
        extras=MappingProxyType(dict(extras or {})),
        program=result,
        _deferred=deferred,
    )
    if "schedule" in result.__dict__:  # the program's schedule is made: its makespan with it
        out.__dict__["makespan_s"] = result.makespan_s
    return out


def _has_collective(program: Program) -> bool:
    return any(k.kind is KernelKind.COLLECTIVE for k in program.kernels)
