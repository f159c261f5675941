"""The analysis document (``dfx.analysis/1``) as frozen records: the one reader and writer.

``dfx.analysis.Analysis.to_dict`` and ``dfx.roofline`` write through these records, and every
reader (pictures, reports, the simulator) reads through :func:`read_analysis`, so a renamed or
missing key is a :class:`~dfx.schema.errors.SchemaError` naming the document and the key, never a
default. Field by field: ``docs/export-format.md``. A key declared with ``absent=`` is one the
format documents as optional; the value it means when absent is written here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.bound import Bound
from dfx.schema.errors import SchemaError
from dfx.schema.fields import (
    Obj,
    as_dict,
    as_float,
    as_float_map,
    as_int,
    as_int_map,
    as_opt_float,
    as_opt_str,
    as_str,
    as_str_map,
    as_str_tuple,
)
from dfx.schema.ids import ANALYSIS_SCHEMA, ANALYSIS_SCHEMAS_READ
from dfx.schema.record import Record, key, map_key, nested, nested_list, nested_map, rest

__all__ = [
    "AnalysisDoc",
    "CoverageRecord",
    "CriticalPathRecord",
    "EagerRecord",
    "EdgeRecord",
    "HardwareRecord",
    "HwNodeRecord",
    "KernelRecord",
    "MoeLayerRecord",
    "MoeRecord",
    "NodeRecord",
    "DataParallelRecord",
    "ParallelRecord",
    "RecomputeRecord",
    "ParallelismRecord",
    "PlanRecord",
    "ProgramRecord",
    "ShiftRecord",
    "StageRecord",
    "TotalsRecord",
    "TrainingRecord",
    "UnknownOpRecord",
    "example_analysis",
    "example_hardware",
    "example_program",
    "migrate_analysis",
    "read_analysis",
]


def as_bound(v: Any) -> Bound:
    return Bound(v)


def _opt_int(v: Any) -> int | None:
    return None if v is None else as_int(v)


def as_opt_bound(v: Any) -> Bound | None:
    return None if v is None else Bound(v)


def _frozen(v: Any) -> Mapping[str, Any]:
    return MappingProxyType(as_dict(v))


def _float_map(v: Any) -> Mapping[str, float]:
    return MappingProxyType(as_float_map(v))


def _int_map(v: Any) -> Mapping[str, int]:
    return MappingProxyType(as_int_map(v))


def _str_map(v: Any) -> Mapping[str, str]:
    return MappingProxyType(as_str_map(v))


def _list(v: Any) -> tuple[Any, ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list")
    return tuple(v)


_record = dataclass(frozen=True, kw_only=True)


# ---- hardware.<id>.nodes.<name> ---------------------------------------------------------------
@_record
class HwNodeRecord(Record):
    """One node's evaluation on one profile (``hardware.<id>.nodes.<name>``)."""

    name: str = map_key()  # the node's name, the key it is filed under
    bound: Bound = key(as_bound)
    time_s: float = key(as_float)
    compute_time_s: float = key(as_float)
    memory_time_s: float = key(as_float)
    overhead_s: float = key(as_float)
    flops: int = key(as_int)
    bytes: int = key(as_int)
    intensity_flop_per_byte: float = key(as_float)
    dtype: str | None = key(as_opt_str)
    peak_dtype: str | None = key(as_opt_str)
    bytes_by_level: Mapping[str, int] = key(_int_map)
    bound_off_chip: Bound | None = key(as_opt_bound)
    bound_on_chip: Bound | None = key(as_opt_bound)
    unknown_ops: tuple[str, ...] = key(as_str_tuple, absent=(), omit=())  # present only when non-empty

    @property
    def lower_bound(self) -> bool:
        """The node has aten calls with no cost rule: its time is a lower bound."""
        return bool(self.unknown_ops)


# ---- hardware.<id>.program --------------------------------------------------------------------
@_record
class StageRecord(Record):
    """One compiler pass's record (``program.stages[]``, and the ``dfx.compile/1`` stages)."""

    name: str = key(as_str)
    nodes: int = key(as_int)
    kernels: int = key(as_int)
    tiles: int = key(as_int)
    offchip_bytes: int = key(as_int)
    modified: bool = key(bool)
    notes: tuple[str, ...] = key(as_str_tuple)


@_record
class KernelRecord(Record):
    """One kernel's timing and place in the schedule (``hardware.<id>.program.kernels[]``)."""

    name: str = key(as_str)
    kind: str = key(as_str)
    nodes: tuple[str, ...] = key(as_str_tuple)
    bound: Bound = key(as_bound)
    time_s: float = key(as_float)
    compute_time_s: float = key(as_float)
    memory_time_s: float = key(as_float)
    overhead_s: float = key(as_float)
    cores: int = key(as_int)
    tiles: int = key(as_int)
    flops: int = key(as_int)
    offchip_bytes: int = key(as_int)
    onchip_bytes: int = key(as_int)
    start_s: float = key(as_float)
    end_s: float = key(as_float)
    deps: tuple[str, ...] = key(as_str_tuple)


@_record
class ProgramRecord(Record):
    """The compiled program on one profile and its schedule (``hardware.<id>.program``)."""

    target: str = key(as_str)
    commitment: str = key(as_str)
    schedule_policy: str = key(as_str)
    cores: int = key(as_int)
    kernel_count: int = key(as_int)
    tile_count: int = key(as_int)
    flops: int = key(as_int)
    offchip_bytes: int = key(as_int)
    core_utilization: float = key(as_float)
    critical_path_kernels: tuple[str, ...] = key(as_str_tuple)
    stages: tuple[StageRecord, ...] = nested_list(StageRecord)
    kernels: tuple[KernelRecord, ...] = nested_list(KernelRecord)


@_record
class EagerRecord(Record):
    """The same graph under ``eager`` beside a compiled GPU result (``hardware.<id>.eager``)."""

    execution_model: str = key(as_str)
    serial_time_s: float = key(as_float)
    critical_path_s: float = key(as_float)
    makespan_s: float = key(as_float)
    kernels: int = key(as_int)
    offchip_bytes: int = key(as_int)
    more: Mapping[str, Any] = rest()


@_record
class CriticalPathRecord(Record):
    time_s: float = key(as_float)
    nodes: tuple[str, ...] = key(as_str_tuple)


@_record
class ShiftRecord(Record):
    """A node whose bound against the on-chip level (``to``) differs from the off-chip one (``from``)."""

    node: str = key(as_str)
    from_bound: Bound = key(as_bound, name="from")
    to_bound: Bound = key(as_bound, name="to")


@_record
class ParallelismRecord(Record):
    work_s: float = key(as_float)
    span_s: float = key(as_float)
    parallelism: float = key(as_float)


@_record
class PlanRecord(Record):
    """The split over chips a result was placed on (``hardware.<id>.parallel.plan``)."""

    tp: int = key(as_int)
    pp: int = key(as_int)
    ep: int = key(as_int)
    chips: int = key(as_int)
    source: str = key(as_str)  # what chose it: --chips, --parallel, the fewest that fit; an architecture model's count
    dp: int = key(as_int, absent=1, omit=1)  # data-parallel replicas (training steps); chips = dp*tp*pp*ep
    sharding: str = key(as_str, absent="none", omit="none")  # "ddp", "fsdp", or "none" (dp = 1)


@_record
class DataParallelRecord(Record):
    """A training step's data-parallel collectives (``hardware.<id>.parallel.data_parallel``,
    ``docs/parallel.md``, ``dfx.parallel.data``): bytes per replica, seconds per step."""

    dp: int = key(as_int)
    sharding: str = key(as_str)  # "ddp" (gradients all-reduced) or "fsdp" (gathered and reduce-scattered)
    gradient_bytes: float = key(as_float)  # one replica's gradients synchronised (its model-parallel share)
    parameter_bytes: float = key(as_float)  # one replica's trainable parameters (FSDP gathers them twice)
    collectives: int = key(as_int)  # collectives per step: DDP's 25 MiB buckets; FSDP 3 per layer group
    all_reduce_s: float = key(as_float)
    all_gather_s: float = key(as_float)  # forward and backward
    reduce_scatter_s: float = key(as_float)
    collective_s: float = key(as_float)  # the three summed
    exposed_s: float = key(as_float)  # what the compute does not hide (in the makespan)
    forward_s: float = key(as_float)  # one replica's step shared out by node times
    backward_s: float = key(as_float)
    optimizer_s: float = key(as_float)  # per chip (FSDP: on 1/dp of the parameters)
    model_state_bytes: float = key(as_float)  # per chip: parameters + gradients + optimizer state (FSDP: / dp)
    overlap: str = key(as_str)  # the overlap convention, in words


def _opt_bool(v: Any) -> bool | None:
    if v is not None and not isinstance(v, bool):
        raise ValueError("expected true, false or null")
    return v


@_record
class TrainingMemoryRecord(Record):
    """A training step's bytes on each chip of its plan (``hardware.<id>.parallel.memory``, ``docs/parallel.md``,
    :func:`dfx.parallel.plan.training_memory`)."""

    model_state_bytes: float = key(as_float)  # parameters + gradients + optimizer state / (tp*pp*ep) / (dp, FSDP)
    saved_activation_bytes: float = key(as_float)  # one replica's, kept for backward / (tp*pp)
    per_chip_bytes: float = key(as_float)  # the two summed
    capacity_bytes: float | None = key(as_opt_float)  # one chip's off-chip memory; null: unknown or weights on chip
    fits: bool | None = key(_opt_bool)  # per_chip_bytes <= capacity_bytes; null without a capacity


@_record
class RecomputeRecord(Record):
    """Full activation recomputation of a training step that does not fit (``hardware.<id>.recompute``,
    ``docs/training.md``, :mod:`dfx.training.recompute`)."""

    policy: str = key(as_str)  # "full": each layer's input kept, the layers' forward run again
    layers: int = key(as_int)
    kept_bytes: float = key(as_float)  # kept for backward under recomputation, one replica
    saved_bytes: float = key(as_float)  # kept without it
    recompute_s: float = key(as_float)  # the layers' forward again, in the latency
    nodes: tuple[str, ...] = key(as_str_tuple)  # the forward nodes run again


@_record
class MoeLayerRecord(Record):
    """One MoE layer as a target runs it (``hardware.<id>.moe.layers[]``, :mod:`dfx.compile.moe`)."""

    router: str = key(as_str)
    experts: int = key(as_int)
    top_k: int = key(as_int)
    tokens: int = key(as_int)
    routed_slots: int = key(as_int)
    capacity: int | None = key(_opt_int)  # slots per expert; null where sized at run time
    computed_slots: int = key(as_int)
    padding_slots: int = key(as_int)
    dropped_slots: int = key(as_int)
    padding_fraction: float = key(as_float)
    dropped_fraction: float = key(as_float)
    overhead_kernels: int = key(as_int)


@_record
class MoeRecord(Record):
    """A profile's lowering of the graph's MoE layers (``hardware.<id>.moe``, ``docs/compile.md``)."""

    target: str = key(as_str)
    strategy: str = key(as_str)  # "capacity" (compile time) or "grouped-gemm" (run time)
    routing: str = key(as_str)
    capacity_factor: float = key(as_float)
    padding_fraction: float = key(as_float)
    dropped_fraction: float = key(as_float)
    padding_s: float = key(as_float)
    overhead_s: float = key(as_float)
    expert_s: float = key(as_float)
    layers: tuple[MoeLayerRecord, ...] = nested_list(MoeLayerRecord)


@_record
class ParallelRecord(Record):
    """A result spread over chips (``hardware.<id>.parallel``, ``docs/parallel.md``); ``more``: the timeline."""

    plan: PlanRecord = nested(PlanRecord)
    model: str = key(as_str)
    latency_s: float = key(as_float)
    compute_s: float = key(as_float)
    communication_s: float = key(as_float)
    data_parallel: DataParallelRecord | None = nested(DataParallelRecord, absent=None, omit=None)  # training, dp > 1
    memory: TrainingMemoryRecord | None = nested(TrainingMemoryRecord, absent=None, omit=None)  # training steps
    more: Mapping[str, Any] = rest()


# ---- hardware.<id> ----------------------------------------------------------------------------
@_record
class HardwareRecord(Record):
    """One profile's evaluation of the whole graph (``hardware.<id>``).

    ``extras`` holds the keys this record does not declare: the fields an architecture model adds
    (``systolic``, ``mapping``, ``schedule``...); they are written back
    unchanged and documented beside their models.
    """

    execution_model: str = key(as_str)
    off_chip_level: str | None = key(as_opt_str)
    on_chip_level: str | None = key(as_opt_str)
    ridge_dtype: str = key(as_str)
    ridge_flop_per_byte: Mapping[str, float] = key(_float_map)
    peak_flop_per_s: float | None = key(as_float, absent=None)  # absent before 2026-11-30's faf7587
    bandwidth_bytes_per_s: Mapping[str, float] | None = key(_float_map, absent=None)  # likewise
    nodes: Mapping[str, HwNodeRecord] = nested_map(HwNodeRecord)
    serial_time_s: float = key(as_float)
    makespan_s: float = key(as_float)
    critical_path: CriticalPathRecord = nested(CriticalPathRecord)
    partition_shift: tuple[ShiftRecord, ...] = nested_list(ShiftRecord)
    parallelism: ParallelismRecord = nested(ParallelismRecord)
    bound_counts: Mapping[str, int] = key(_int_map)
    dtype_fallbacks: Mapping[str, str] = key(_str_map)
    arch_model: str | None = key(as_opt_str)
    program: ProgramRecord | None = nested(ProgramRecord, nullable=True)  # null unless compiled
    eager: EagerRecord | None = nested(EagerRecord, absent=None, omit=None)  # compiled GPUs only
    chips: int | None = key(as_int, absent=None, omit=None)  # set by dfx.parallel.place
    parallel: ParallelRecord | None = nested(ParallelRecord, absent=None, omit=None)  # spread over chips only
    recompute: RecomputeRecord | None = nested(RecomputeRecord, absent=None, omit=None)  # a step that did not fit
    moe: MoeRecord | None = nested(MoeRecord, absent=None, omit=None)  # a mixture of experts' lowering
    runtime: str | None = key(as_str, absent=None, omit=None)  # the profile runtime that timed it; absent: ideal
    extras: Mapping[str, Any] = rest()
    id: str = map_key()  # the profile id, the key it is filed under

    @property
    def critical_time_s(self) -> float:
        """The infinite-resource lower bound: ``critical_path.time_s``."""
        return self.critical_path.time_s

    @property
    def latency_s(self) -> float:
        """The latency to quote: the makespan (``docs/export-format.md``)."""
        return self.makespan_s


# ---- top level --------------------------------------------------------------------------------
@_record
class NodeRecord(Record):
    """One graph node (``nodes[]``)."""

    name: str = key(as_str)
    op: str = key(as_str)
    target: str = key(as_str)
    module_path: str = key(as_str)
    category: str = key(as_str)
    flops: int = key(as_int)
    bytes_read: int = key(as_int)
    bytes_written: int = key(as_int)
    intensity_flop_per_byte: float = key(as_float, name="intensity")
    dtype: str | None = key(as_opt_str)
    input_kind: str | None = key(as_opt_str, absent=None)  # absent before 2026-11-30's faf7587
    inputs: tuple[str, ...] = key(as_str_tuple)
    outputs: tuple[Mapping[str, Any], ...] = key(lambda v: tuple(_frozen(o) for o in _list(v)))
    params: tuple[str, ...] = key(as_str_tuple)
    aten_ops: tuple[str, ...] = key(as_str_tuple)
    unknown_ops: tuple[str, ...] = key(as_str_tuple)

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shape of each output tensor."""
        return tuple(tuple(o["shape"]) for o in self.outputs)

    @property
    def op_label(self) -> str:
        """The target without the ``aten.`` prefix and ``.default`` overload: ``linear``, ``add.Tensor``."""
        t = self.target
        if t.startswith("aten."):
            t = t[len("aten.") :]
        return t[: -len(".default")] if t.endswith(".default") else t


@_record
class EdgeRecord(Record):
    src: str = key(as_str)
    dst: str = key(as_str)
    bytes: int = key(as_int)


@_record
class TotalsRecord(Record):
    flops: int = key(as_int)
    bytes_read: int = key(as_int)
    bytes_written: int = key(as_int)
    intensity_flop_per_byte: float = key(as_float, name="intensity")
    flops_by_category: Mapping[str, int] = key(_int_map)
    matmul_macs: int = key(as_int)
    unique_parameter_count: int = key(as_int)
    unique_parameter_bytes: int = key(as_int)
    parameter_traffic_bytes: int = key(as_int)
    node_count: int = key(as_int)


@_record
class UnknownOpRecord(Record):
    target: str = key(as_str)
    count: int = key(as_int)
    nodes: tuple[str, ...] = key(as_str_tuple)


@_record
class CoverageRecord(Record):
    unknown_ops: tuple[UnknownOpRecord, ...] = nested_list(UnknownOpRecord)
    aten_calls: int = key(as_int)


@_record
class TrainingRecord(Record):
    """A training step's forward, backward and optimizer step (``training``, with ``--train``)."""

    loss: str = key(as_str)  # "sum" (of the outputs) or "model" (the model's own scalar loss)
    loss_node: str = key(as_str)
    optimizer: str = key(as_str)
    optimizer_node: str = key(as_str)
    trainable_parameter_count: int = key(as_int)
    trainable_parameter_bytes: int = key(as_int)
    gradient_bytes: int = key(as_int)
    optimizer_state_dtype: str = key(as_str)
    optimizer_state_bytes: int = key(as_int)
    optimizer_flops_per_parameter: int = key(as_int)
    optimizer_flops: int = key(as_int)
    optimizer_bytes: int = key(as_int)
    forward_flops: int = key(as_int)
    backward_flops: int = key(as_int)
    backward_nodes: tuple[str, ...] = key(as_str_tuple)
    saved_activation_bytes: int = key(as_int)
    saved_input_bytes: int = key(as_int)
    saved_tensors: tuple[str, ...] = key(as_str_tuple)
    gradients: Mapping[str, str] = key(_str_map)
    min_cut_saved_bytes: int | None = key(as_int, absent=None, omit=None)  # torch.compile's partitioner's choice


@_record
class AnalysisDoc(Record):
    """The whole ``dfx.analysis/1`` document.

    ``model`` and ``inference`` stay plain read-only objects: their keys depend on how the model
    was given and on the phase (``docs/export-format.md``); read them with :meth:`model_field`.
    """

    schema: str = key(as_str)
    dfx_version: str = key(as_str)
    model: Mapping[str, Any] = key(_frozen)
    totals: TotalsRecord = nested(TotalsRecord)
    coverage: CoverageRecord = nested(CoverageRecord)
    nodes: tuple[NodeRecord, ...] = nested_list(NodeRecord)
    edges: tuple[EdgeRecord, ...] = nested_list(EdgeRecord)
    hardware: Mapping[str, HardwareRecord] = nested_map(HardwareRecord)
    inference: Mapping[str, Any] | None = key(_frozen, absent=None, omit=None)  # only with a phase
    training: TrainingRecord | None = nested(TrainingRecord, absent=None, omit=None)  # only with --train

    @property
    def model_name(self) -> str:
        """``model.name``, else the captured graph's name (``model.graph_name``)."""
        return str(self.model["name"] if "name" in self.model else self.model["graph_name"])

    def model_field(self, name: str) -> Any:
        """An optional ``model`` field (``batch``, ``seq``, ``dtype``...): ``None`` when absent."""
        return self.model[name] if name in self.model else None

    def node(self, name: str) -> NodeRecord:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def read_analysis(doc: Any, origin: str = "the analysis") -> AnalysisDoc:
    """Read an analysis document (``Analysis.to_dict()`` or a loaded ``analysis.json``).

    Raises
    ------
    SchemaError
        If ``doc`` is not an analysis document, or a key is missing or holds the wrong kind of
        value: the message names the document, the key and the fix.
    """
    obj = Obj(doc, ANALYSIS_SCHEMA, "")
    schema = obj.d["schema"] if "schema" in obj.d else None
    if schema not in ANALYSIS_SCHEMAS_READ:
        raise SchemaError(
            ANALYSIS_SCHEMA,
            "schema",
            f"is {schema!r} in {origin}, not an analysis document",
            fix=f"pass a document written by `dfx analyze --out DIR` (schema {ANALYSIS_SCHEMA})",
        )
    return AnalysisDoc.from_dict(migrate_analysis(obj.d), ANALYSIS_SCHEMA)


def migrate_analysis(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """``doc`` brought to the current ``dfx.analysis`` layout (``docs/export-format.md``, "Versions and migrations").

    Documents written before ``makespan_s`` and ``program`` existed (dfx before 2026-12-01's
    38ae178) ran one operator at a time: their makespan is their serial time and they hold no
    program. Nothing else is filled in: any other missing key is a :class:`SchemaError`.

    Examples
    --------
    >>> old = {"hardware": {"h": {"serial_time_s": 2.0}}}
    >>> migrate_analysis(old)["hardware"]["h"]
    {'serial_time_s': 2.0, 'makespan_s': 2.0, 'program': None}
    """
    hardware = doc["hardware"] if "hardware" in doc else None
    if not isinstance(hardware, Mapping) or all(
        isinstance(h, Mapping) and "makespan_s" in h and "program" in h for h in hardware.values()
    ):
        return doc
    upgraded = {}
    for hw_id, h in hardware.items():
        if isinstance(h, Mapping) and "serial_time_s" in h:
            h = dict(h)
            h.setdefault("makespan_s", h["serial_time_s"])  # one operator at a time: the serial time
            h.setdefault("program", None)
        upgraded[hw_id] = h
    return {**doc, "hardware": upgraded}


def example_analysis(
    name: str = "m",
    nodes: list[dict[str, Any]] | None = None,
    hardware: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A small valid ``dfx.analysis/1`` document: for examples, tests and hand-made inputs.

    ``nodes`` are ``nodes[]`` objects with only ``name`` required (the rest take a no-work node's
    values); edges follow each node's ``inputs``. ``hardware`` is put in as given (see
    :func:`example_hardware`); ``model`` adds fields to ``{"name": name}``.

    Examples
    --------
    >>> d = read_analysis(example_analysis("m", [{"name": "x", "op": "placeholder"}, {"name": "y", "inputs": ["x"]}]))
    >>> d.model_name, [n.name for n in d.nodes], [(e.src, e.dst) for e in d.edges]
    ('m', ['x', 'y'], [('x', 'y')])
    """
    full = []
    for n in nodes or []:
        base = {
            "op": "call_function",
            "target": n["name"],
            "module_path": "",
            "category": "none",
            "flops": 0,
            "bytes_read": 0,
            "bytes_written": 0,
            "intensity": 0.0,
            "dtype": None,
            "input_kind": None,
            "inputs": [],
            "outputs": [],
            "params": [],
            "aten_ops": [],
            "unknown_ops": [],
        }
        full.append({**base, **n})
    flops = sum(n["flops"] for n in full)
    nbytes = sum(n["bytes_read"] + n["bytes_written"] for n in full)
    return {
        "schema": ANALYSIS_SCHEMA,
        "dfx_version": "0",
        "model": {"name": name, **(model or {})},
        "totals": {
            "flops": flops,
            "bytes_read": sum(n["bytes_read"] for n in full),
            "bytes_written": sum(n["bytes_written"] for n in full),
            "intensity": flops / nbytes if nbytes else 0.0,
            "flops_by_category": {},
            "matmul_macs": 0,
            "unique_parameter_count": 0,
            "unique_parameter_bytes": 0,
            "parameter_traffic_bytes": 0,
            "node_count": len(full),
        },
        "coverage": {"unknown_ops": [], "aten_calls": 0},
        "nodes": full,
        "edges": [{"src": s, "dst": n["name"], "bytes": 0} for n in full for s in n["inputs"]],
        "hardware": dict(hardware or {}),
    }


def example_hardware(nodes: dict[str, dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """A small valid ``hardware.<id>`` object: eager, one level ``HBM``, every node of ``nodes`` a no-work node
    unless its object says otherwise; ``fields`` replace top-level keys.

    Examples
    --------
    >>> h = example_hardware({"mm": {"bound": "compute", "time_s": 1e-6}}, ridge_dtype="float16")
    >>> r = HardwareRecord.from_dict(h, ANALYSIS_SCHEMA, "hardware.h")
    >>> r.nodes["mm"].bound, r.nodes["mm"].time_s, r.ridge_dtype
    (<Bound.COMPUTE: 'compute'>, 1e-06, 'float16')
    """
    per = {}
    for name, n in (nodes or {}).items():
        per[name] = {
            "bound": "none",
            "time_s": 0.0,
            "compute_time_s": 0.0,
            "memory_time_s": 0.0,
            "overhead_s": 0.0,
            "flops": 0,
            "bytes": 0,
            "intensity_flop_per_byte": 0.0,
            "dtype": None,
            "peak_dtype": None,
            "bytes_by_level": {},
            "bound_off_chip": None,
            "bound_on_chip": None,
            **n,
        }
    serial = sum(n["time_s"] for n in per.values())
    base = {
        "execution_model": "eager",
        "off_chip_level": "HBM",
        "on_chip_level": None,
        "ridge_dtype": "float32",
        "peak_flop_per_s": 1e12,
        "bandwidth_bytes_per_s": {"HBM": 1e12},
        "ridge_flop_per_byte": {"HBM": 1.0},
        "nodes": per,
        "serial_time_s": serial,
        "makespan_s": serial,
        "critical_path": {"time_s": serial, "nodes": list(per)},
        "program": None,
        "partition_shift": [],
        "parallelism": {"work_s": serial, "span_s": serial, "parallelism": 1.0},
        "bound_counts": {b.value: sum(n["bound"] == b.value for n in per.values()) for b in Bound},
        "dtype_fallbacks": {},
        "arch_model": None,
    }
    return {**base, **fields}


def example_program(kernels: list[dict[str, Any]], cores: int = 1, **fields: Any) -> dict[str, Any]:
    """A valid ``hardware.<id>.program`` object from partial ``kernels[]`` objects.

    Each kernel needs ``name``; the rest default to a one-core, one-tile ``gemm`` of its own name,
    0 s and no dependences, scheduled back to back.

    Examples
    --------
    >>> p = ProgramRecord.from_dict(example_program([{"name": "k", "time_s": 2.0}], cores=4), ANALYSIS_SCHEMA)
    >>> p.kernels[0].nodes, p.kernels[0].end_s, p.cores
    (('k',), 2.0, 4)
    """
    full, clock = [], 0.0
    for k in kernels:
        time_s = k["time_s"] if "time_s" in k else 0.0
        base = {
            "name": k["name"],
            "kind": "gemm",
            "nodes": [k["name"]],
            "bound": "compute",
            "time_s": time_s,
            "compute_time_s": time_s,
            "memory_time_s": 0.0,
            "overhead_s": 0.0,
            "cores": 1,
            "tiles": 1,
            "flops": 0,
            "offchip_bytes": 0,
            "onchip_bytes": 0,
            "start_s": clock,
            "end_s": clock + time_s,
            "deps": [],
        }
        full.append({**base, **k})
        clock += time_s
    base = {
        "target": "inductor",
        "commitment": "dynamic",
        "schedule_policy": "dynamic",
        "cores": cores,
        "kernel_count": len(full),
        "tile_count": sum(k["tiles"] for k in full),
        "flops": 0,
        "offchip_bytes": 0,
        "core_utilization": 0.0,
        "critical_path_kernels": [k["name"] for k in full],
        "stages": [],
        "kernels": full,
    }
    return {**base, **fields}
