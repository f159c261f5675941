"""The Groq Tensor Streaming Processor, one chip: its organisation and the cycles a node takes.

A TSP is cut into functional slices (``reference/concepts.md`` section e; ``reference/hardware.md``
section 8): MXM (matrix), VXM (vector), SXM (switch: shift, permute, transpose), MEM (SRAM). Data
flows east-west on streams past the slices; instructions flow north-south through the superlanes.
The compiler fixes every instruction's cycle, so a node's time is a whole number of cycles::

    mxm_cycles  = ceil(weight_tiles / planes) * rows        # tiles of rows x cols weights (below)
    vxm_cycles  = ceil(vector_flops / vector_alus)          # one op per ALU per cycle
    mem_cycles  = ceil(sram_bytes / (sram_bandwidth / clock))
    c2c_cycles  = ceil(c2c_bytes / (c2c_bandwidth / clock))  # bytes over the links (0 in dfx.arch.spatial.groq)
    cycles      = max(mxm, vxm, mem, c2c) + fill             # the slices stream concurrently
    fill        = superlanes + mem_slices / 2                # [D] see ``TspOrganisation.fill_cycles``

A contraction ``[B.., M, K] x [K, N]`` (weights shared by every row) installs
``ceil(K / rows) * ceil(N / cols)`` weight tiles, one per MXM plane at a time, and streams all
``B*M`` rows through each: one 320-element vector per cycle. Batched weights (``bmm``) multiply the
tile count by the batch; a weight ``expand``ed over a bmm's batch (stride 0) is one weight matrix
(:func:`dfx.costs.terms.gemm_shape`). NB: contractions dfx cannot read a shape from (convolution, attention,
einsum) are taken as perfectly packed, ``ceil(MACs / MACs per cycle)``; weight install is charged
through MEM (the weights are read from SRAM), and is assumed to overlap the previous tile.

The 320 x 320 MACs per plane per cycle are the int8 rate: ``4 * 320 * 320 * 2 * 0.9 GHz`` = 737
TOP/s, the product brief's 750 TOPS int8. At fp16 the brief gives 188 TFLOP/s, a quarter of it, so
a contraction in another dtype takes ``passes = int8 rate / peak(dtype)`` times the cycles
(:meth:`TspOrganisation.mxm_passes`; fp16 and bf16, which falls back to the fp16 peak: 3.92).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from dfx.costs.record import Category, CostedNode
from dfx.costs.terms import FMA_FLOPS, broadcast_shapes, gemm_shape, numel
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.ir import AtenCall, TensorSpec

__all__ = ["NodeCycles", "Slice", "TspOrganisation", "node_cycles", "slice_of"]

# aten op -> positions of its two matrix operands (a: [.., M, K], b: [.., K, N]).
_MATRIX_OPERANDS: dict[str, tuple[int, int]] = {
    "aten.mm": (0, 1),
    "aten.bmm": (0, 1),
    "aten.matmul": (0, 1),
    "aten.addmm": (1, 2),
    "aten.baddbmm": (1, 2),
    "aten._addmm_activation": (1, 2),
}


class Slice(str, Enum):
    """A TSP functional slice: what a node runs on."""

    MXM = "MXM"  # matrix: contractions
    VXM = "VXM"  # vector: pointwise, activations, normalisation
    SXM = "SXM"  # switch: permutes, transposes, gathers, copies
    MEM = "MEM"  # SRAM: reads and writes only

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TspOrganisation:
    """The figures of one TSP the model reads, all from the profile (see its ``sources``)."""

    clock_hz: float
    superlanes: int  # compute.cores
    mxm_planes: int  # compute.units
    mxm_rows: int
    mxm_cols: int
    vector_alus: int  # compute.vector_units
    mem_slices: int  # memory.SRAM.instances
    sram_bytes: float
    sram_bytes_per_s: float
    c2c_bytes_per_s: float
    chip_link_latency_s: float
    profile: HardwareProfile | None = field(default=None, compare=False, repr=False)  # for dtype peaks

    @classmethod
    def from_profile(cls, profile: HardwareProfile) -> TspOrganisation:
        """Read the organisation from a Groq profile.

        Raises
        ------
        DfxError
            If the profile lacks a figure the model needs (named in the message).
        """
        c, on, off = profile.compute, profile.on_chip_level(), profile.off_chip_level()
        design = profile.design
        need = {
            "compute.clock_hz": c.clock_hz,
            "compute.cores": c.cores,
            "compute.units": c.units,
            "compute.array_rows": c.array_rows,
            "compute.array_cols": c.array_cols,
            "compute.vector_units": c.vector_units,
            "an on-chip memory level": on,
            "an off-chip (C2C) level": off,
            "design.chip_link_latency_s": design and design.chip_link_latency_s,
        }
        missing = [k for k, v in need.items() if v is None]
        if missing:
            raise DfxError(f"profile {profile.id!r} lacks {', '.join(missing)} for the Groq TSP model")
        return cls(
            clock_hz=c.clock_hz,
            superlanes=c.cores,
            mxm_planes=c.units,
            mxm_rows=c.array_rows,
            mxm_cols=c.array_cols,
            vector_alus=c.vector_units,
            mem_slices=on.instances,
            sram_bytes=on.capacity_bytes,
            sram_bytes_per_s=on.bandwidth_bytes_per_s,
            c2c_bytes_per_s=off.bandwidth_bytes_per_s,
            chip_link_latency_s=design.chip_link_latency_s,
            profile=profile,
        )

    @property
    def macs_per_cycle(self) -> int:
        """4 planes x 320 x 320 = 409,600 on the TSP v1."""
        return self.mxm_planes * self.mxm_rows * self.mxm_cols

    def mxm_passes(self, dtype: str | None) -> float:
        """How many times longer a contraction in ``dtype`` takes than at the array's int8 rate.

        ``2 * macs_per_cycle * clock / peak(dtype)``, at least 1; 1 without a profile or dtype.
        TSP v1: 737.3 TOP/s / 188 TFLOP/s = 3.92 for fp16 (and bf16, which uses the fp16 peak).
        """
        if self.profile is None or dtype is None:
            return 1.0
        array_rate = 2 * self.macs_per_cycle * self.clock_hz
        return max(1.0, array_rate / self.profile.peak(dtype).flop_per_s)

    @property
    def fill_cycles(self) -> int:
        """Cycles before a node's first result: the superlane stagger plus a stream's trip.

        An instruction reaches superlane ``i`` ``i`` cycles after superlane 0, and a stream moves one
        slice per cycle (concepts.md section e, "Model for the tool"); a stream from the central VXM
        to an MXM at the edge passes one hemisphere's MEM slices. [D]: 20 + 88 / 2 = 64 cycles.
        """
        return self.superlanes + self.mem_slices // 2

    def cycles_for_bytes(self, nbytes: float, bytes_per_s: float) -> int:
        return math.ceil(nbytes * self.clock_hz / bytes_per_s) if nbytes else 0


@dataclass(frozen=True)
class NodeCycles:
    """Cycles one node keeps each slice busy; ``total`` is what the schedule reserves for it."""

    name: str
    slice: Slice | None  # None for a node with no work
    mxm: int = 0
    vxm: int = 0
    mem: int = 0
    c2c: int = 0
    fill: int = 0

    @property
    def total(self) -> int:
        busy = max(self.mxm, self.vxm, self.mem, self.c2c)
        return busy + self.fill if busy else 0

    @property
    def compute_bound(self) -> bool:
        return max(self.mxm, self.vxm) >= max(self.mem, self.c2c)


# aten op (with its overload) -> its matrix operands' positions, or None: the op name parsed once per op
_POSITIONS: dict[str, tuple[int, int] | None] = {}


def _positions(op: str) -> tuple[int, int] | None:
    if op not in _POSITIONS:
        _POSITIONS[op] = _MATRIX_OPERANDS.get(op.rsplit(".", 1)[0] if op.count(".") > 1 else op)
    return _POSITIONS[op]


def _operands(call: AtenCall) -> tuple[TensorSpec, TensorSpec] | None:
    positions = _POSITIONS[call.op] if call.op in _POSITIONS else _positions(call.op)
    if positions is None or len(call.args) <= max(positions):
        return None
    a, b = (call.args[i] for i in positions)
    if not (isinstance(a, TensorSpec) and isinstance(b, TensorSpec)) or len(a.shape) < 2 or len(b.shape) < 2:
        return None
    return a, b


def contraction_cycles(a: tuple[int, ...], b: tuple[int, ...], org: TspOrganisation) -> int:
    """MXM cycles of ``a @ b`` for ``a: [.., M, K]``, ``b: [.., K, N]``.

    Examples
    --------
    >>> org = TspOrganisation(9e8, 20, 4, 320, 320, 5120, 88, 230686720, 8e13, 4.8e11, 3e-6)
    >>> contraction_cycles((4, 640), (640, 960), org)  # 2 x 3 = 6 tiles on 4 planes: 2 rounds x 4 rows
    8
    """
    tiles = math.ceil(a[-1] / org.mxm_rows) * math.ceil(b[-1] / org.mxm_cols)  # ceil(K/320) * ceil(N/320)
    if numel(b[:-2]) == 1:  # one weight matrix: every row of a streams through each tile
        rows = numel(a[:-1])
    else:  # batched weights: each batch has its own tiles
        tiles *= numel(b[:-2])
        rows = a[-2]
    return math.ceil(tiles / org.mxm_planes) * rows


def mxm_cycles(costed: CostedNode, org: TspOrganisation) -> int:
    """MXM cycles of a node's contractions: tiled where a shape is readable, else perfectly packed."""
    return _mxm_cycles(costed, org, dict(costed.flops_by_category).get(Category.MATMUL.value, 0))


def _mxm_cycles(costed: CostedNode, org: TspOrganisation, matmul_flops: int) -> int:
    """:func:`mxm_cycles` given the node's matmul FLOPs."""
    cycles, covered = 0, 0
    for call in costed.node.aten_calls:
        pair = _operands(call)
        if pair is None:
            continue
        a, b = pair
        dims = gemm_shape(a, b)
        if dims is not None and dims[3] == 1:  # one weight matrix (a bmm's stride-0 weight too): [M, K] x [K, N]
            m, k, n, _ = dims
            cycles += contraction_cycles((m, k), (k, n), org)
        else:
            cycles += contraction_cycles(a.shape, b.shape, org)
        batch = numel(broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        covered += FMA_FLOPS * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]  # 2 * B * M * K * N
    rest = max(0, matmul_flops - covered)
    int8_cycles = cycles + math.ceil(rest / FMA_FLOPS / org.macs_per_cycle)
    return math.ceil(int8_cycles * org.mxm_passes(costed.dtype))


def slice_of(costed: CostedNode) -> Slice | None:
    """The slice a node's category runs on; ``None`` for a node with no work."""
    if costed.cost.flops == 0 and costed.cost.bytes == 0:
        return None
    return _SLICES.get(costed.category, Slice.MEM)


_SLICES = {  # a node's category -> the slice it runs on (any other category: MEM)
    Category.MATMUL: Slice.MXM,
    Category.ELEMENTWISE: Slice.VXM,
    Category.NORMALIZATION: Slice.VXM,
    Category.MEMORY: Slice.SXM,
    Category.VIEW: Slice.SXM,
}


def node_cycles(
    costed: CostedNode, org: TspOrganisation, sram_bytes: float, c2c_bytes: float = 0.0, ways: int = 1
) -> NodeCycles:
    """The cycles ``costed`` takes on one TSP, its bytes split between SRAM and the C2C links.

    ``ways > 1``: the node is split over that many chips (its weights need their SRAM), each doing
    ``1/ways`` of the MXM, VXM and MEM work: ``ceil(cycles / ways)``.
    """
    unit = slice_of(costed)
    new = object.__new__(NodeCycles)  # the frozen __init__ would only set each field (it validates nothing)
    if unit is None:
        new.__dict__.update(name=costed.name, slice=None, mxm=0, vxm=0, mem=0, c2c=0, fill=0)
        return new
    matmul_flops = dict(costed.flops_by_category).get(Category.MATMUL.value, 0)
    vector_flops = costed.cost.flops - matmul_flops
    new.__dict__.update(
        name=costed.name,
        slice=unit,
        mxm=math.ceil(_mxm_cycles(costed, org, matmul_flops) / ways),
        vxm=math.ceil(math.ceil(vector_flops / org.vector_alus) / ways),
        mem=math.ceil(org.cycles_for_bytes(sram_bytes, org.sram_bytes_per_s) / ways),
        c2c=org.cycles_for_bytes(c2c_bytes, org.c2c_bytes_per_s),
        fill=org.fill_cycles,
    )
    return new
