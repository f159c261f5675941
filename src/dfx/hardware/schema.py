"""The hardware profile schema: one validated, frozen record per device, every number with a source.

Field names carry their unit (``_flop_per_s``, ``_bytes``, ``_bytes_per_s``, ``_s``, ``_hz``, ``_j``,
``_w``); values are stored in SI. In a profile file a quantity may be written with a unit
(``"3.35 TB/s"``), see :mod:`dfx.hardware.units`. Every number must be covered by an entry of
``sources``: a key naming the field (``memory.HBM3.bandwidth_bytes_per_s``) or one of its parents
(``memory.HBM3``, ``peak_flop_per_s``). A source that is an estimate says "estimate".
"""

from __future__ import annotations

from enum import Enum
from functools import cached_property, partial
from typing import Annotated, Any, Callable, Iterator, Mapping, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from dfx.hardware.units import parse_quantity
from dfx.ir import DTYPE_ITEMSIZE_BYTES, normalize_dtype

__all__ = [
    "Calibrated",
    "Commitment",
    "Compute",
    "Design",
    "Determinism",
    "Efficiency",
    "ExecutionLayers",
    "Interconnect",
    "HardwareProfile",
    "IDEAL_RUNTIME",
    "Kind",
    "Managed",
    "MemoryLevel",
    "MemoryModel",
    "PeakLookup",
    "Scheduling",
    "Simt",
]


def _quantity(dimension: str, **constraints: Any) -> Any:
    return Annotated[float, BeforeValidator(partial(parse_quantity, dimension=dimension)), Field(**constraints)]


# Rates below these floors describe no machine dfx models (a 1 MHz scalar core does about 1 MFLOP/s)
# and drive latencies past 1e300 s (a tester's 1e-300 FLOP/s profile printed "nan% busy")
MIN_FLOP_PER_S = 1e6
MIN_BYTES_PER_S = 1e6
# A level nearer the compute units is never slower than one farther away (a cache serves what it
# holds at least as fast as DRAM). Noise makes two measured levels cross by a little (dfx calibrate), so
# a nearer level contradicts the hierarchy only below 1 / HIERARCHY_SLACK of a farther one's figure.
HIERARCHY_SLACK = 1.25


def hierarchy_contradictions(bandwidth: Mapping[str, float]) -> list[tuple[str, str]]:
    """Pairs (nearer, farther) of levels, nearest first, where the nearer one is slower beyond the slack;
    ``bandwidth`` maps each level's name to its bytes per second, nearest first. Used by a profile's
    check and by calibrate's (:func:`dfx.measure.calibration.measure_bandwidths`).

    Examples
    --------
    >>> hierarchy_contradictions({"L2": 1e9, "L3": 170e9, "DRAM": 200e9})
    [('L2', 'L3'), ('L2', 'DRAM')]
    >>> hierarchy_contradictions({"L2": 400e9, "L3": 180e9, "DRAM": 200e9})  # within the slack
    []
    """
    levels = list(bandwidth)
    return [
        (near, far)
        for i, near in enumerate(levels)
        for far in levels[i + 1 :]
        if bandwidth[near] * HIERARCHY_SLACK < bandwidth[far]
    ]


Bytes = _quantity("bytes", gt=0)
BytesPerS = _quantity("bytes_per_s", ge=MIN_BYTES_PER_S)
FlopPerS = _quantity("flop_per_s", ge=MIN_FLOP_PER_S)
Seconds = _quantity("s", ge=0)
Hertz = _quantity("hz", gt=0)
Joules = _quantity("j", gt=0)
Watts = _quantity("w", gt=0)
Count = Annotated[int, Field(ge=1)]
Fraction = Annotated[float, Field(ge=0, le=1)]


class Kind(str, Enum):
    """The machine family a profile describes; each has one target in :mod:`dfx.targets`.

    ``gpu``: SIMT GPUs (NVIDIA, AMD); ``tpu``: systolic-array chips compiled by XLA; ``tsp``: the
    Groq Tensor Streaming Processor; ``wafer``: the Cerebras wafer-scale engine; ``spyre``: IBM Spyre;
    ``dataflow``: other scratchpad dataflow chips (a quick ``model=scratchpad`` profile); ``cpu``: host
    CPUs.
    """

    GPU = "gpu"
    TPU = "tpu"
    TSP = "tsp"
    WAFER = "wafer"
    SPYRE = "spyre"
    DATAFLOW = "dataflow"
    CPU = "cpu"

    def __str__(self) -> str:
        return self.value


class Managed(str, Enum):
    """Who decides what a memory level holds: the program/compiler, or a hardware cache policy."""

    SOFTWARE = "software"
    CACHE = "cache"

    def __str__(self) -> str:
        return self.value


class MemoryModel(str, Enum):
    """How the device's working memory is managed: a hardware cache, or a software scratchpad."""

    CACHE = "cache"
    SCRATCHPAD = "scratchpad"

    def __str__(self) -> str:
        return self.value


class Commitment(str, Enum):
    """How much of the schedule is fixed at compile time."""

    STATIC = "static"  # order, placement and timing fixed by the compiler
    DYNAMIC = "dynamic"  # decided at run time (kernel launches, warp schedulers, caches)
    MIXED = "mixed"  # placement fixed at compile time, firing decided at run time

    def __str__(self) -> str:
        return self.value


class Determinism(str, Enum):
    """Whether the same program on the same input takes the same time every run."""

    CYCLE_EXACT = "cycle-exact"  # every instruction's cycle fixed at compile time; no run-time variation
    STALLS_ON_DATA = (
        "stalls-on-data"  # order and placement fixed; units wait for data or DMA, so timing varies a little
    )
    VARIABLE = "variable"  # run-time dispatch, caches and arbitration make timing vary run to run

    def __str__(self) -> str:
        return self.value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class MemoryLevel(_Strict):
    """One level of the memory hierarchy.

    ``capacity_bytes`` and ``bandwidth_bytes_per_s`` must be written, as ``null`` where the figure
    is not published; a level with no bandwidth is listed but takes no part in the roofline.
    ``capacity_bytes`` is the total on the chip; ``instances`` says how many physical copies share
    it (32 per-core scratchpads of 2 MB: ``capacity_bytes: 64 MB``, ``instances: 32``).
    """

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    capacity_bytes: Optional[Bytes]
    bandwidth_bytes_per_s: Optional[BytesPerS]
    managed: Managed
    on_chip: bool
    instances: Count = 1
    energy_per_byte_j: Optional[Joules] = None
    # The bandwidth one core can draw from this level on its own (its load/store path, the bytes it can
    # keep in flight); ``None``: unpublished, and a core's share is taken as bandwidth / cores
    # (dfx.hardware.cores.restrict_to_cores, docs/hardware.md "Part of a chip")
    core_bandwidth_bytes_per_s: Optional[BytesPerS] = None

    @model_validator(mode="after")
    def _check_core_bandwidth(self) -> MemoryLevel:
        core, whole = self.core_bandwidth_bytes_per_s, self.bandwidth_bytes_per_s
        if core is not None and whole is not None and core > whole:
            raise ValueError(
                f"core_bandwidth_bytes_per_s ({core:.4g} B/s) exceeds the level's bandwidth_bytes_per_s ({whole:.4g} B/s); "
                "one core cannot draw more than the whole level"
            )
        return self

    @property
    def capacity_per_instance_bytes(self) -> float | None:
        return None if self.capacity_bytes is None else self.capacity_bytes / self.instances


class Compute(_Strict):
    """How the compute is organised. Every field is optional: unpublished figures stay ``null``."""

    cores: Optional[Count] = None  # SMs, TensorCores, AI cores, processing elements
    units: Optional[Count] = None  # matrix units (tensor cores, MXUs, MXM planes) in total
    unit_kind: str = ""
    array_rows: Optional[Count] = None  # of one matrix unit, in PEs
    array_cols: Optional[Count] = None
    clock_hz: Optional[Hertz] = None
    description: str = ""
    # Added for the spatial architecture models (dfx.arch.spatial); optional, null where unpublished.
    lanes_per_core: Optional[Count] = None  # SIMD lanes of one core (Groq: 16 lanes per superlane)
    vector_units: Optional[Count] = None  # vector ALUs in total (Groq VXM: 5,120)
    physical_cores: Optional[Count] = None  # cores on the silicon, spares included (Cerebras WSE-3: ~970,000)
    usable_cores: Optional[Count] = None  # cores a compiler may map work to, spares held back

    @model_validator(mode="after")
    def _check_core_counts(self) -> Compute:
        if self.physical_cores and self.usable_cores and self.usable_cores > self.physical_cores:
            raise ValueError(f"usable_cores ({self.usable_cores}) exceeds physical_cores ({self.physical_cores})")
        return self


# -- SIMT limits (dfx.arch.gpu): thread blocks, warps, registers, shared memory per SM ------------
class Simt(_Strict):
    """A GPU's per-SM execution limits, as the CUDA occupancy calculator reads them.

    The SM count is ``compute.cores`` (an AMD CU plays the SM's part, a wavefront the warp's).
    ``warp_size_threads`` is the lanes one warp or wavefront issues together: 32 on NVIDIA GPUs
    (its default, which the NVIDIA profiles rely on), 64 on AMD CDNA. ``compute_capability`` is
    CUDA's (``"9.0"``) or the AMD LLVM target (``"gfx942"``). Limits follow the CUDA C Programming Guide's table
    "Technical Specifications per Compute Capability"; allocation granularities follow NVIDIA's
    occupancy calculator (``cuda_occupancy.h``: registers are allocated per warp in units of 256,
    shared memory per block in units of 128 bytes on compute capability 8.x and later, plus a
    per-block reserve). Used by :mod:`dfx.arch.gpu`.
    """

    compute_capability: str = Field(pattern=r"^([0-9]+\.[0-9]+|gfx[0-9a-f]+)$")
    warp_size_threads: Count = 32  # lanes per warp (NVIDIA) or wavefront (AMD CDNA: 64)
    max_warps_per_sm: Count
    max_blocks_per_sm: Count
    max_threads_per_block: Count
    registers_per_sm: Count  # 32-bit registers
    max_registers_per_block: Count
    max_registers_per_thread: Count
    register_allocation_unit: Count  # registers, allocated per warp
    register_sub_partitions: Count  # SM sub-partitions (one warp scheduler and register bank each)
    shared_memory_per_sm_bytes: Bytes  # the largest shared-memory carveout
    shared_memory_per_block_optin_bytes: Bytes
    shared_memory_reserved_per_block_bytes: _quantity("bytes", ge=0) = 0
    shared_memory_allocation_unit_bytes: Bytes
    shared_memory_bytes_per_clock_per_sm: Optional[Bytes] = None  # 32 banks x 4 bytes


_SIMT_NUMBERS = tuple(k for k in Simt.model_fields if k != "compute_capability")


class Scheduling(_Strict):
    """The scheduling commitment, with one line on what it means for this device."""

    commitment: Commitment
    description: str = Field(min_length=1)


class ExecutionLayers(_Strict):
    """The device described along dfx's six-layer execution model.

    The six layers are **dfx's own synthesis**: no public source describes accelerators this way
    (``reference/concepts.md`` section k, "NOT FOUND"). Each entry says what the layer is on this
    device, from the sourced facts elsewhere in the profile.
    """

    program_graph: str = Field(min_length=1)  # what the program is handed over as
    capture_specialization: str = Field(min_length=1)  # how shapes and control flow are fixed
    compiler_mapping_schedule: str = Field(min_length=1)  # who decides placement and order, and when
    memory_model: str = Field(min_length=1)  # where tensors live, who moves them
    interconnect: str = Field(min_length=1)  # on-chip and chip-to-chip links
    compute_units: str = Field(min_length=1)  # what does the arithmetic


class Design(_Strict):
    """Where the device sits in the design space: the cells of ``dfx hw compare`` and ``dfx hw landscape``.

    ``memory_model_position`` (0 = cache-managed, 1 = software-managed scratchpad) and
    ``scheduling_position`` (0 = decided at run time, 1 = every cycle fixed at compile time) place
    the device on the landscape map; left out, they follow ``memory_model`` and
    ``scheduling.commitment``. They are judgements and their source says so.
    """

    unit_of_execution: str = Field(min_length=1)  # what one scheduled piece of work is
    interconnect: str = Field(min_length=1)
    determinism: Determinism
    memory_model_position: Optional[Fraction] = None
    scheduling_position: Optional[Fraction] = None
    chip_link_latency_s: Optional[Seconds] = None  # one chip-to-chip crossing
    layers: Optional[ExecutionLayers] = None


# -- machines as they run, and the links between chips (dfx.roofline.latency, dfx.parallel) --------
COST_CATEGORIES = ("matmul", "elementwise", "normalization", "memory", "view")  # dfx.costs.Category values
Share = Annotated[float, Field(gt=0, le=1)]


class Efficiency(_Strict):
    """How one runtime runs the machine: achieved fractions of peak and a fixed cost per kernel.

    A node's time under this runtime (:func:`dfx.roofline.latency.node_timing`)::

        compute = flops / (peak(dtype) * flop_fraction[category])
        memory  = bytes / (bandwidth * bandwidth_fraction[category])
        time    = max(compute, memory) + kernel_fixed_s

    A category missing from a ``*_by_category`` map takes the plain fraction. Each figure is a
    cited measurement or labelled an estimate in the profile's ``sources``
    (``runtimes.<name>.<field>``).
    """

    description: str = Field(min_length=1)  # what runs the kernels, and how they were timed
    flop_fraction: Share = 1.0
    flop_fraction_by_category: dict[str, Share] = Field(default_factory=dict)
    bandwidth_fraction: Share = 1.0
    bandwidth_fraction_by_category: dict[str, Share] = Field(default_factory=dict)
    kernel_fixed_s: Seconds = 0.0

    @field_validator("flop_fraction_by_category", "bandwidth_fraction_by_category")
    @classmethod
    def _check_categories(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(set(value) - set(COST_CATEGORIES))
        if bad:
            raise ValueError(f"unknown cost categories {bad}; expected some of {list(COST_CATEGORIES)}")
        return value

    def flop_share(self, category: str | None) -> float:
        return self.flop_fraction_by_category.get(category or "", self.flop_fraction)

    def bandwidth_share(self, category: str | None) -> float:
        return self.bandwidth_fraction_by_category.get(category or "", self.bandwidth_fraction)


class Topology(str, Enum):
    """How chips are linked, which sets how a collective's steps travel (``dfx.parallel.collectives``)."""

    SWITCH = "switch"  # every chip one hop from every other through a switch (NVSwitch)
    TORUS = "torus"  # nearest-neighbour links with wraparound (TPU ICI)
    DRAGONFLY = "dragonfly"  # groups of chips, all-to-all between groups (Groq C2C)
    ETHERNET = "ethernet"  # systems joined over a network (Cerebras CS-3 over SwarmX / 100 GbE)

    def __str__(self) -> str:
        return self.value


class GemmPoint(_Strict):
    """One measured GEMM ``[rows, k] x [k, n]`` (or a convolution's implicit GEMM) and its FLOP/s."""

    rows: Count
    k: Count
    n: Count
    flop_per_s: FlopPerS


class AttentionPoint(_Strict):
    """Fused attention's FLOP/s at one query length, causal or not."""

    causal: bool
    seq: Count
    flop_per_s: FlopPerS


class ColdGemmPoint(_Strict):
    """A GEMM ``[rows, k] x [k, n]`` timed with its weight in cache (``hot_s``) and read from DRAM (``cold_s``)."""

    rows: Count
    k: Count
    n: Count
    hot_s: Seconds
    cold_s: Seconds


class AfterGemmPoint(_Strict):
    """An element-wise op moving ``bytes`` timed in a hot loop (``hot_s``) and right after a GEMM that moved ``streamed_bytes`` (``after_s``)."""

    bytes: Bytes
    streamed_bytes: Bytes
    hot_s: Seconds
    after_s: Seconds


class AfterGemmChainPoint(_Strict):
    """The ``position``-th tiny element-wise call after a GEMM that moved ``streamed_bytes``: its median ``time_s``."""

    position: Count
    streamed_bytes: Bytes
    time_s: Seconds


class ColdWritePoint(_Strict):
    """An element-wise op writing ``bytes`` of output into one buffer (``hot_s``) and into buffers that left the cache (``cold_s``)."""

    bytes: Bytes
    hot_s: Seconds
    cold_s: Seconds


class LayoutCopyPoint(_Strict):
    """Inductor's generated NCHW -> channels-last copy moving ``bytes`` (read + written) in ``time_s`` seconds."""

    bytes: Bytes
    time_s: Seconds


class OverheadPoint(_Strict):
    """An op's fixed cost ``overhead_s`` when ``gap_s`` seconds passed since an op of its kind last ran."""

    gap_s: Seconds
    overhead_s: Seconds


class GemmBiasPoint(_Strict):
    """``[rows, k] x [k, n]`` timed as ``mm`` and as ``addmm`` with a bias, seconds."""

    rows: Count
    k: Count
    n: Count
    mm_s: Seconds
    addmm_s: Seconds


class KindOverheadPoint(_Strict):
    """One tiny-op kind's own fixed cost ``overhead_s`` when ``gap_s`` seconds passed since it last ran."""

    kind: str
    gap_s: Seconds
    overhead_s: Seconds


class Calibrated(_Strict):
    """The calibrated machine model's tables (``dfx calibrate``; ``dfx.measure.machine``, ``docs/validation.md``).

    A profile that carries them is timed node by node with them (the cache-aware calibrated
    prediction) wherever dfx evaluates it, so ``dfx analyze --hw my-cpu.yaml`` predicts what
    ``dfx validate`` measures. One source (``sources.calibrated``) covers every figure.
    """

    overhead_curve: tuple[OverheadPoint, ...] = ()
    overhead_by_kind: dict[str, Seconds] = Field(default_factory=dict)
    overhead_mixed: dict[str, Seconds] = Field(default_factory=dict)  # added 2026-12-01: tiny calls in turn
    overhead_curve_by_kind: tuple[KindOverheadPoint, ...] = ()  # added 2026-12-01: mean's and cat's own curves
    overhead_curve_each: tuple[KindOverheadPoint, ...] = ()  # added 2026-12-02: the median curve's kinds, each its own
    vector_rates: dict[str, FlopPerS] = Field(default_factory=dict)
    gemm_dtype: str = "float32"  # the dtype of the GEMM, attention and convolution tables
    gemm_table: tuple[GemmPoint, ...] = ()
    attention_rates: tuple[AttentionPoint, ...] = ()
    conv_points: tuple[GemmPoint, ...] = ()
    resident_bytes: Optional[Bytes] = None
    reference_flop_per_s: Optional[FlopPerS] = None
    gemm_cold: tuple[ColdGemmPoint, ...] = ()  # added 2026-12-01: a large weight from DRAM, by rows
    after_gemm: tuple[AfterGemmPoint, ...] = ()  # added 2026-12-01: a small op right after a large GEMM
    cold_write: tuple[ColdWritePoint, ...] = ()  # added 2026-12-01: an output written into a block not in cache
    conv_points_channels_last: tuple[
        GemmPoint, ...
    ] = ()  # added 2026-12-01: conv_points in channels-last (Inductor's CPU layout)
    layout_copy: tuple[LayoutCopyPoint, ...] = ()  # added 2026-12-01: Inductor's NCHW -> channels-last copy kernel
    gemm_bias: tuple[GemmBiasPoint, ...] = ()  # added 2026-12-01: the table's GEMM as mm and as addmm with a bias
    after_gemm_chain: tuple[AfterGemmChainPoint, ...] = ()  # added 2026-12-02: tiny calls in turn after a GEMM
    # added 2026-12-02: a call's fixed cost in Inductor's compiled code: generated, addmm, mm, entry
    compiled_overhead: dict[str, Seconds] = Field(default_factory=dict)


class Interconnect(_Strict):
    """The links between chips, as a ring collective sees them.

    ``ring_bytes_per_s`` is what one chip can send per second, one direction, to the next chip of
    a ring laid over the topology (NVLink: all of a GPU's links through the switch; a TPU torus:
    both directions of one axis' links); ``hop_latency_s`` is the fixed cost of one step. A ring
    all-reduce of ``S`` bytes over ``n`` chips then takes ``2(n-1) * hop + 2(n-1)/n * S / ring``
    (NCCL's bus-bandwidth factor; ``dfx.parallel.collectives``). ``domain_chips`` is how many
    chips one such domain links (8 GPUs on one NVSwitch board, a 256-chip TPU pod).
    """

    topology: Topology
    ring_bytes_per_s: BytesPerS
    hop_latency_s: Seconds
    base_latency_s: Seconds = 0.0  # once per collective (NCCL's baseLat)
    domain_chips: Optional[Count] = None
    torus_dims: tuple[Count, ...] = ()  # chips along each torus axis (TPU pods)
    link_bytes_per_s: Optional[BytesPerS] = None  # one link, one way (a torus' bisection, dfx.arch.systolic.torus)
    weights_on_chip: bool = False  # a model spread over chips keeps its weights in on-chip memory (Groq, Cerebras)
    description: str = ""


class PeakLookup(BaseModel):
    """The peak FLOP/s used for a requested dtype, and the dtype it was taken from."""

    model_config = ConfigDict(frozen=True)

    requested: str
    used: str
    flop_per_s: float

    @property
    def fell_back(self) -> bool:
        return self.requested != self.used


# a complex number's arithmetic is its components' (an FFT's butterflies are real multiply-adds on them)
_COMPLEX_COMPONENT = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def _dtype_family(dtype: str) -> str:
    if dtype.startswith(("float", "bfloat")):
        return "float"
    if dtype.startswith("complex"):
        return "complex"
    return "int"


def _normalize_dtype_keys(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        try:
            name = normalize_dtype(str(key))
        except ValueError:
            raise ValueError(
                f"unknown dtype {key!r}; expected a torch dtype name such as float32, bfloat16, float16, "
                "float8_e4m3fn, int8 (or an alias: fp32, bf16, fp16, fp8)"
            ) from None
        if name in out:
            raise ValueError(f"dtype {name!r} is given twice (as {key!r} and an alias)")
        out[name] = v
    return out


_PROFILE_ID = r"^[a-z0-9][a-z0-9.-]*$"
_COMPUTE_NUMBERS = (
    "cores",
    "units",
    "array_rows",
    "array_cols",
    "clock_hz",
    "lanes_per_core",
    "vector_units",
    "physical_cores",
    "usable_cores",
)
_DESIGN_NUMBERS = ("memory_model_position", "scheduling_position", "chip_link_latency_s")
# the runtime name that asks for no runtime (fractions 1, op_overhead_s per kernel): `--runtime ideal`
IDEAL_RUNTIME = "ideal"
_EFFICIENCY_NUMBERS = ("flop_fraction", "bandwidth_fraction", "kernel_fixed_s")
_INTERCONNECT_NUMBERS = ("ring_bytes_per_s", "hop_latency_s", "base_latency_s", "domain_chips", "link_bytes_per_s")


class HardwareProfile(_Strict):
    """A validated hardware profile in SI units.

    ``memory`` is ordered from the level closest to the compute to the farthest. The roofline uses
    :meth:`off_chip_level` (the nearest off-chip level with a bandwidth) and :meth:`on_chip_level`
    (the largest on-chip level with a bandwidth and a capacity).
    """

    id: str = Field(pattern=_PROFILE_ID)
    name: str = Field(min_length=1)
    vendor: str = Field(min_length=1)
    kind: Kind
    aliases: tuple[Annotated[str, Field(pattern=_PROFILE_ID)], ...] = ()
    peak_flop_per_s: dict[str, FlopPerS] = Field(min_length=1)
    memory: tuple[MemoryLevel, ...] = Field(min_length=1)
    compute: Compute
    scheduling: Scheduling
    memory_model: MemoryModel
    op_overhead_s: Seconds
    energy_per_flop_j: dict[str, Joules] = Field(default_factory=dict)
    tdp_w: Optional[Watts] = None
    notes: str = ""
    design: Optional[Design] = None
    simt: Optional[Simt] = None  # GPU SIMT limits for dfx.arch.gpu
    runtimes: dict[str, Efficiency] = Field(default_factory=dict)  # name -> how that runtime runs it
    # the runtime the machine is usually run under, which dfx.analyze and the CLI time it with unless told
    # otherwise (--runtime); None: the ideal roofline (fractions 1, op_overhead_s per kernel)
    default_runtime: Optional[str] = None
    interconnect: Optional[Interconnect] = None
    calibrated: Optional[Calibrated] = None  # measured tables of the calibrated machine model (dfx calibrate)
    sources: dict[str, str]

    @field_validator("peak_flop_per_s", "energy_per_flop_j", mode="before")
    @classmethod
    def _check_dtype_keys(cls, value: Any) -> Any:
        return _normalize_dtype_keys(value)

    @model_validator(mode="after")
    def _check_levels_and_sources(self) -> HardwareProfile:
        names = [level.name for level in self.memory]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"memory level name {name!r} is used twice; level names must be unique")
        if not any(level.bandwidth_bytes_per_s is not None for level in self.memory):
            raise ValueError("memory: no level has a bandwidth; at least one level needs bandwidth_bytes_per_s")
        timed = {m.name: m.bandwidth_bytes_per_s for m in self.memory if m.bandwidth_bytes_per_s is not None}
        pairs = hierarchy_contradictions(timed)  # the levels are listed closest to the compute first
        if pairs:
            near, far = pairs[0]
            raise ValueError(
                f"memory: {near} ({timed[near] / 1e9:.3g} GB/s) is listed before, so nearer the compute than, "
                f"{far} ({timed[far] / 1e9:.3g} GB/s) but is slower; list the levels closest to the compute "
                "first, or fix the bandwidth"
            )
        if IDEAL_RUNTIME in self.runtimes:
            raise ValueError(
                f"runtimes: {IDEAL_RUNTIME!r} is reserved for the ideal roofline (no runtime); name that runtime otherwise"
            )
        if self.default_runtime is not None:
            if self.default_runtime not in self.runtimes:
                known = ", ".join(sorted(self.runtimes)) or "none"
                raise ValueError(
                    f"default_runtime {self.default_runtime!r} names no entry of runtimes (its runtimes: {known}); "
                    "name one of them, or leave default_runtime out for the ideal roofline"
                )
            if "default_runtime" not in self.sources:
                raise ValueError(
                    "default_runtime has no source; add sources['default_runtime'] saying why the machine is "
                    "usually run that way"
                )
        every = self._citable_paths()
        for key in self.sources:
            if key not in every:
                raise ValueError(f"sources key {key!r} names no field of the profile")
        for path in self.numeric_paths():
            if self.source_of(path) is None:
                raise ValueError(f"field {path!r} has no source; add sources[{path!r}] or a parent key")
        return self

    # -- sources -------------------------------------------------------------------------------
    def numeric_paths(self) -> Iterator[str]:
        """Dotted paths of the numbers the profile gives (``memory.HBM3.bandwidth_bytes_per_s``).

        Each is covered by :meth:`source_of`; ``instances: 1`` (the default) needs no source.
        """
        for dtype in self.peak_flop_per_s:
            yield f"peak_flop_per_s.{dtype}"
        for dtype in self.energy_per_flop_j:
            yield f"energy_per_flop_j.{dtype}"
        for level in self.memory:
            for key in (
                "capacity_bytes",
                "bandwidth_bytes_per_s",
                "instances",
                "energy_per_byte_j",
                "core_bandwidth_bytes_per_s",
            ):
                value = getattr(level, key)
                if value is not None and not (key == "instances" and value == 1):
                    yield f"memory.{level.name}.{key}"
        for key in _COMPUTE_NUMBERS:
            if getattr(self.compute, key) is not None:
                yield f"compute.{key}"
        if self.design is not None:
            for key in _DESIGN_NUMBERS:
                if getattr(self.design, key) is not None:
                    yield f"design.{key}"
        if self.simt is not None:
            yield from (f"simt.{k}" for k in _SIMT_NUMBERS if getattr(self.simt, k) is not None)
        for name, eff in self.runtimes.items():
            for key in _EFFICIENCY_NUMBERS:
                if getattr(eff, key) != Efficiency.model_fields[key].default:
                    yield f"runtimes.{name}.{key}"
            for key in ("flop_fraction_by_category", "bandwidth_fraction_by_category"):
                for cat in getattr(eff, key):
                    yield f"runtimes.{name}.{key}.{cat}"
        if self.interconnect is not None:
            for key in _INTERCONNECT_NUMBERS:
                if getattr(self.interconnect, key) not in (None, Interconnect.model_fields[key].default):
                    yield f"interconnect.{key}"
            if self.interconnect.torus_dims:
                yield "interconnect.torus_dims"
        if self.calibrated is not None:
            yield "calibrated"
        yield "op_overhead_s"
        if self.tdp_w is not None:
            yield "tdp_w"

    def _citable_paths(self) -> set[str]:
        """Every key ``sources`` may use: any field, set or not, and every parent of one."""
        paths = set(type(self).model_fields) | {f"peak_flop_per_s.{d}" for d in self.peak_flop_per_s}
        paths |= {f"energy_per_flop_j.{d}" for d in self.energy_per_flop_j}
        paths |= {f"compute.{k}" for k in Compute.model_fields} | {f"scheduling.{k}" for k in Scheduling.model_fields}
        paths |= {f"design.{k}" for k in Design.model_fields} | {
            f"design.layers.{k}" for k in ExecutionLayers.model_fields
        }
        paths |= {f"simt.{k}" for k in Simt.model_fields}
        for level in self.memory:
            paths |= {f"memory.{level.name}"} | {f"memory.{level.name}.{k}" for k in MemoryLevel.model_fields}
        for name, eff in self.runtimes.items():
            paths |= {f"runtimes.{name}"} | {f"runtimes.{name}.{k}" for k in Efficiency.model_fields}
            for key in ("flop_fraction_by_category", "bandwidth_fraction_by_category"):
                paths |= {f"runtimes.{name}.{key}.{c}" for c in getattr(eff, key)}
        paths |= {f"interconnect.{k}" for k in Interconnect.model_fields}
        return paths

    def source_of(self, path: str) -> str | None:
        """The source covering the field at ``path``: its own entry, else its nearest parent's."""
        while True:
            if path in self.sources:
                return self.sources[path]
            if "." not in path:
                return None
            path = path.rsplit(".", 1)[0]

    def estimates(self) -> list[str]:
        """Paths of the numbers whose source calls them an estimate."""
        return [p for p in self.numeric_paths() if "estimate" in (self.source_of(p) or "").lower()]

    # -- lookups -------------------------------------------------------------------------------
    def level(self, name: str) -> MemoryLevel:
        """The memory level called ``name``; ``KeyError`` naming the known levels if absent."""
        for level in self.memory:
            if level.name == name:
                return level
        raise KeyError(f"profile {self.id!r} has no memory level {name!r}; levels: {[lv.name for lv in self.memory]}")

    @cached_property
    def _memo(self) -> dict[Any, tuple[Any, Any]]:
        """Lookups already made (:meth:`peak`, the levels), each beside the fields it read.

        The roofline asks them once per node and profile. ``cached_property`` stores it in the
        instance's ``__dict__``, which pydantic's ``==``, hashing and dumps ignore. A hit is used only
        while what it read is unchanged: the level tuples are immutable (compared by identity, then by
        value, :meth:`_recalled`; a ``model_copy(update=...)`` of other levels misses), and
        ``peak_flop_per_s`` is a dict a caller may mutate (kept as a copy and compared by value).
        """
        return {}

    def _recalled(self, key: Any, read: Any, make: Callable[[], Any]) -> Any:
        """``make()``, kept in :attr:`_memo` under ``key`` beside ``read`` (the fields it reads) and
        made again once ``read`` is neither the same object nor equal to what it was."""
        hit = self._memo.get(key)
        if hit is not None and (hit[0] is read or hit[0] == read):
            return hit[1]
        value = make()
        self._memo[key] = (read, value)
        return value

    def levels_by_name(self) -> dict[str, MemoryLevel]:
        """Level name -> level, in ``memory``'s order (made once; do not change the dict returned)."""
        return self._recalled("levels", self.memory, self._levels_by_name)

    def _levels_by_name(self) -> dict[str, MemoryLevel]:
        return {lv.name: lv for lv in self.memory}

    def off_chip_level(self) -> MemoryLevel | None:
        """The nearest off-chip level with a known bandwidth (HBM, LPDDR, DRAM, Groq's C2C links)."""
        return self._recalled("off", self.memory, self._off_chip_level)

    def _off_chip_level(self) -> MemoryLevel | None:
        return next((lv for lv in self.memory if not lv.on_chip and lv.bandwidth_bytes_per_s), None)

    def on_chip_level(self) -> MemoryLevel | None:
        """The on-chip level a tensor can be kept in: known bandwidth and capacity, largest capacity.

        On a scratchpad device only software-managed levels qualify.
        """
        return self._recalled("on", (self.memory, self.memory_model), self._on_chip_level)

    def _on_chip_level(self) -> MemoryLevel | None:
        candidates = [
            lv
            for lv in self.memory
            if lv.on_chip
            and lv.bandwidth_bytes_per_s
            and lv.capacity_bytes
            and (self.memory_model is MemoryModel.CACHE or lv.managed is Managed.SOFTWARE)
        ]
        return max(candidates, key=lambda lv: (lv.capacity_bytes, lv.bandwidth_bytes_per_s), default=None)

    def runtime(self, name: str) -> Efficiency:
        """The efficiency record of runtime ``name``.

        Raises
        ------
        HardwareProfileError
            If the profile lists no such runtime (the message names the ones it has).
        """
        from dfx.hardware.errors import HardwareProfileError

        if name not in self.runtimes:
            known = ", ".join(sorted(self.runtimes)) or "none"
            raise HardwareProfileError(f"profile {self.id!r} has no runtime {name!r}; its runtimes: {known}")
        return self.runtimes[name]

    def runtime_name(self, requested: str | None) -> str | None:
        """The runtime a request for ``requested`` times this profile with: ``None`` (not given) -> the
        profile's ``default_runtime``; ``"ideal"`` -> ``None`` (the ideal roofline); any other name, that
        runtime, which must exist.

        Raises
        ------
        HardwareProfileError
            A name the profile has no runtime for (the message names the ones it has, and ``ideal``).

        >>> from dfx.hardware import load_profile
        >>> a100 = load_profile("nvidia-a100-sxm-80gb")
        >>> a100.runtime_name(None), a100.runtime_name("ideal"), a100.runtime_name("pytorch-eager-timed")
        ('back-to-back', None, 'pytorch-eager-timed')
        """
        from dfx.hardware.errors import HardwareProfileError

        if requested is None:
            return self.default_runtime
        if requested == IDEAL_RUNTIME:
            return None
        if requested not in self.runtimes:
            known = ", ".join([*sorted(self.runtimes), IDEAL_RUNTIME])
            raise HardwareProfileError(
                f"profile {self.id!r} has no runtime {requested!r}; its runtimes: {known} (dfx hw show {self.id})"
            )
        return requested

    @property
    def cycle_exact(self) -> bool:
        """Whether a run takes exactly its compile-time schedule (``design.determinism: cycle-exact``).

        A simulator should apply no run-time jitter to such a device (Groq's TSP: no caches,
        arbiters or reactive flow control). ``False`` when the profile has no ``design`` section.
        """
        return self.design is not None and self.design.determinism is Determinism.CYCLE_EXACT

    def peak(self, dtype: str) -> PeakLookup:
        """Peak dense FLOP/s for ``dtype``, falling back to the closest dtype the profile lists.

        The fallback prefers, in order: a dtype at least as wide (a narrower one only as a last
        resort), the same family (float / int / complex), the closest width, then the name. So
        ``bfloat16`` on a float16-only device uses ``float16``; ``float8_e4m3fn`` on an A100 uses
        ``bfloat16``; ``float32`` on a TPU (no float32 entry) uses ``bfloat16``, as XLA's default
        matmul precision does. A complex dtype the profile does not list is timed at its
        components' float dtype by the same rule (``complex64`` at ``float32``, ``complex32`` at
        ``float16``): dfx counts a complex op's real FLOPs, which run in that precision; the width
        rule alone had timed ``complex64`` (8 bytes) at ``float64`` and ``complex32`` at ``float32``
        (an fp16 FFT on an H100 at 66.9 TFLOP/s, not its fp16 989.4).
        The substitution is reported (``PeakLookup.used``).

        Raises
        ------
        HardwareProfileError
            If ``dtype`` is not a dtype dfx knows.
        """
        hit = self._memo.get(("peak", dtype))
        if hit is not None and hit[0] == self.peak_flop_per_s:
            return hit[1]
        lookup = self._peak(dtype)
        self._memo["peak", dtype] = (dict(self.peak_flop_per_s), lookup)  # PeakLookup is frozen: shared
        return lookup

    def _peak(self, dtype: str) -> PeakLookup:
        try:
            want = normalize_dtype(dtype)
        except ValueError as exc:
            from dfx.hardware.errors import HardwareProfileError

            raise HardwareProfileError(f"profile {self.id!r}: {exc}") from None
        if want in self.peak_flop_per_s:
            return PeakLookup(requested=want, used=want, flop_per_s=self.peak_flop_per_s[want])
        if want in _COMPLEX_COMPONENT:  # no complex peak listed: its components' (complex64 -> float32)
            inner = self._peak(_COMPLEX_COMPONENT[want])
            return PeakLookup(requested=want, used=inner.used, flop_per_s=inner.flop_per_s)
        width, family = DTYPE_ITEMSIZE_BYTES[want], _dtype_family(want)

        def rank(candidate: str) -> tuple[bool, bool, int, str]:
            w = DTYPE_ITEMSIZE_BYTES[candidate]
            return (w < width, _dtype_family(candidate) != family, abs(w - width), candidate)

        used = min(self.peak_flop_per_s, key=rank)
        return PeakLookup(requested=want, used=used, flop_per_s=self.peak_flop_per_s[used])

    # -- export --------------------------------------------------------------------------------
    def summary_row(self) -> dict[str, Any]:
        """One row for ``dfx hw list``, in SI units.

        ``peak_bf16_flop_per_s`` is the bf16 peak, or the fallback's (``peak_bf16_dtype`` says
        which dtype it came from); ``on_chip_bytes`` is the largest on-chip level's capacity
        (whether or not its bandwidth is published); ``None`` where unknown.
        """
        peak = self.peak("bfloat16")
        off = self.off_chip_level()
        on_chip = [lv.capacity_bytes for lv in self.memory if lv.on_chip and lv.capacity_bytes]
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind.value,
            "peak_bf16_flop_per_s": peak.flop_per_s,
            "peak_bf16_dtype": peak.used,
            "off_chip_bytes_per_s": off.bandwidth_bytes_per_s if off else None,
            "on_chip_bytes": max(on_chip, default=None),
            "memory_model": self.memory_model.value,
        }

    def to_si_dict(self) -> dict[str, Any]:
        """The validated profile as JSON-able data, every quantity in SI units.

        Feeding it back to :meth:`HardwareProfile.model_validate` gives an equal profile.
        """
        return self.model_dump(mode="json")
