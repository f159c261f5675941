"""The calibrated machine model: what ``dfx calibrate`` measured beyond the profile, and how a node uses it.

The shared roofline (``docs/hardware.md``) times a node as ``max(flops / peak, bytes / bandwidth) +
op_overhead_s``: one peak, one bandwidth, one overhead. On a real machine each of the three
depends on the node, and ``dfx calibrate --json`` measures how (``docs/validation.md``):

``overhead_by_kind``, ``overhead_curve``
    The fixed cost of an op: each kind's own in a hot loop (a tiny linear costs more than a tiny
    add), plus what the curve adds as a function of the time since an op of the same kind last
    ran (:func:`dfx.measure.microbench.overhead_curve`): a few microseconds in a hot loop, ten to
    twenty times more when a model's other nodes ran in between and evicted its code path.
``vector_flop_per_s``
    The FLOP rate of each kind of vector op (GELU, tanh-GELU, softmax, layer norm, batch norm),
    with dfx's FLOP convention: a fraction of the GEMM peak.
``gemm_table``
    GEMM rates over rows x k x n.
``attention_rates``
    Fused attention's FLOP/s by sequence length, causal and not.
``conv_points``
    Convolutions' FLOP/s at a few layer shapes, as implicit GEMMs: a convolution runs at the GEMM
    table's rate for its implicit GEMM times the ratio of the nearest measured point to the table
    (layout reorders and im2col work make it slower than a GEMM of the same shape; 1x1 layers far
    more than 3x3 ones).
``resident_bytes``
    The largest working set the last-level cache keeps. A model whose weights and activations
    exceed it reads its weights from DRAM on every run: their bytes are charged at DRAM bandwidth.
``gemm_cold``
    A GEMM with a large weight timed hot and with the weight coming from DRAM, by rows: the time
    the weight's DRAM traffic adds to the hot time, per weight byte (:meth:`MachineModel.exposed_s_per_weight_byte`).
``after_gemm``
    An element-wise op timed hot and right after GEMMs that streamed 1 to 64 MiB, at two sizes:
    what a small op pays right after a GEMM (:meth:`MachineModel.after_gemm_s`).
``cold_write``
    An element-wise op writing its output into one buffer and cycling through buffers that left
    the cache: what writing an output into a block not in cache adds per byte
    (:meth:`MachineModel.cold_write_s_per_byte`).
``conv_points_channels_last``
    The same convolutions with channels-last input and weight: the layout Inductor runs every
    convolution in on a CPU (``torch._inductor.graph.GraphLowering.decide_layout_opt``: always,
    when oneDNN is available), read by the compiled prediction (``channels_last=True`` of
    :meth:`MachineModel.conv_factor_at`). On the machine of ``docs/validation.md`` the 1x1 layers
    run 1.6 to 1.8 times faster than in NCHW, the 3x3 ones 1.3 times.
``after_gemm_chain``
    Tiny element-wise calls run one after another after a GEMM that streamed a 64 MiB weight, each
    timed by its position: what a call with no work costs as the second, third, ... op after such
    a GEMM (:meth:`MachineModel.chain_s`). Right after it the call re-fetches the code and data the
    stream evicted (the first position, as ``after_gemm``); each call re-fetches part of what the
    next one needs, but a kind that has not run since still fetches its own: on the machine of
    ``docs/validation.md`` 128 to 135 us at the first position, 31 to 35 at the second, 23 to 31
    from the third on, against 1.5 to 3 in a hot loop.
``gemm_bias``
    The table's GEMM without and with a bias (``mm`` and ``addmm``, as a linear with a bias calls
    it, eager or from Inductor's code), at three row counts and four ``(k, n)``: a GEMM node with a
    bias takes the nearest point's ``addmm / mm`` times its compute (:meth:`MachineModel.bias_factor_at`).
``layout_copy``
    Inductor's generated copy of an NCHW tensor into channels-last (the kernel it runs before a
    convolution whose input is the graph's NCHW input), timed: seconds per byte moved
    (:meth:`MachineModel.layout_copy_s_per_byte`). A strided, transposing pass: on the machine of
    ``docs/validation.md`` about 30 GB/s where a plain copy of the same bytes in the L3 runs at 50.
``compiled_overhead``
    What a call costs in Inductor's compiled code, timed in a tiny compiled graph the way ``dfx
    validate --compiled`` times a model's calls: a generated C++ kernel, an ``extern_kernels.addmm``
    and ``extern_kernels.mm``, each with the wrapper's glue around it, and the graph's first call
    (its entry: unpacking and checking the inputs) (:meth:`MachineModel.compiled_s`,
    :meth:`MachineModel.compiled_entry_s`).

Everything here is pure arithmetic on those tables, so it is tested with hand-computed values.
"""

from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from dfx.costs.record import CostedNode
from dfx.costs.terms import FMA_FLOPS
from dfx.ir import Graph
from dfx.schema.calibration import CalibrationTables, read_calibration, read_calibration_tables

__all__ = [
    "AfterGemmPoint",
    "ColdGemmPoint",
    "ColdWritePoint",
    "GemmRate",
    "MachineModel",
    "attention_call",
    "gemm_curve",
    "gemm_dims",
    "has_bias",
    "is_convolution",
    "model_footprint_bytes",
    "op_kind",
    "overhead_kind",
    "vector_family",
]


@dataclass(frozen=True)
class GemmRate:
    """One measured GEMM ``[rows, k] x [k, n]`` and its FLOP/s."""

    rows: int
    k: int
    n: int
    flop_per_s: float

    @property
    def flops(self) -> int:
        """FLOPs of one call: ``2 * rows * k * n`` (a multiply-accumulate is 2, ``docs/cost-model.md``)."""
        return FMA_FLOPS * self.rows * self.k * self.n


@dataclass(frozen=True)
class ColdGemmPoint:
    """One GEMM ``[rows, k] x [k, n]`` timed with its weight in cache (``hot_s``) and coming from DRAM (``cold_s``), seconds."""

    rows: int
    k: int
    n: int
    hot_s: float
    cold_s: float
    weight_item_bytes: int = 4  # fp32

    @property
    def exposed_s_per_byte(self) -> float:
        """``max(0, cold_s - hot_s) / (k * n * item bytes)``: seconds the cold weight adds per weight byte.

        Examples
        --------
        >>> ColdGemmPoint(64, 1024, 1024, 1.0e-3, 1.5e-3).exposed_s_per_byte  # 0.5 ms over 4 MiB
        1.1920928955078125e-10
        """
        return max(0.0, self.cold_s - self.hot_s) / (self.k * self.n * self.weight_item_bytes)


@dataclass(frozen=True)
class AfterGemmPoint:
    """An element-wise op moving ``bytes``, timed in a hot loop (``hot_s``) and right after a GEMM
    that moved ``streamed_bytes`` (``after_s``), seconds."""

    bytes: int
    streamed_bytes: int
    hot_s: float
    after_s: float

    @property
    def extra_s(self) -> float:
        """``max(0, after_s - hot_s)``: what following the GEMM adds."""
        return max(0.0, self.after_s - self.hot_s)


@dataclass(frozen=True)
class ColdWritePoint:
    """An element-wise op writing ``bytes`` of output, timed into one buffer (``hot_s``) and cycling
    through buffers that left the cache (``cold_s``), seconds."""

    bytes: int
    hot_s: float
    cold_s: float

    @property
    def extra_s_per_byte(self) -> float:
        """``max(0, cold_s - hot_s) / bytes``.

        Examples
        --------
        >>> ColdWritePoint(2**20, 20e-6, 77e-6).extra_s_per_byte * 1e12  # 57 us over 1 MiB: ps per byte
        54.35943603515625
        """
        return max(0.0, self.cold_s - self.hot_s) / self.bytes


# measured beside the tiny ops, kept out of their median: not a kernel's own fixed cost (view), a second
# path (linear_nd), or a kind only some models run (mean, cat: microbench._side_ops)
_SIDE_KINDS = ("view", "linear_nd", "mean", "cat")

CURVE_KN = 512  # the table's k = n column kept as a single FLOP-indexed curve (``gemm_curve``)


def gemm_curve(table: Sequence[GemmRate], k: int = CURVE_KN, n: int = CURVE_KN) -> list[tuple[int, float]]:
    """The ``(flops, flop_per_s)`` points of the table's ``k x n`` column, by rows: the single GEMM
    curve ``dfx.calibration/1`` and ``dfx.validation/1`` export beside the full table.

    Examples
    --------
    >>> gemm_curve([GemmRate(16, 512, 512, 2e9), GemmRate(1, 512, 512, 1e9), GemmRate(1, 64, 64, 5e8)])
    [(524288, 1000000000.0), (8388608, 2000000000.0)]
    """
    return [(p.flops, p.flop_per_s) for p in sorted(table, key=lambda p: p.rows) if (p.k, p.n) == (k, n)]


def _after_line(points: Sequence[AfterGemmPoint], nbytes: float | None) -> float:
    """``fixed + per_byte * nbytes`` through the first and last of ``points`` (sorted by bytes); see
    :meth:`MachineModel.after_gemm_s`. ``nbytes`` ``None``: the fixed part alone."""
    first, last = points[0], points[-1]
    per_byte = 0.0
    if last.bytes > first.bytes:
        per_byte = max(0.0, (last.extra_s - first.extra_s) / (last.bytes - first.bytes))
    if nbytes is None:
        return max(0.0, first.extra_s - per_byte * first.bytes)
    if nbytes < first.bytes:  # below the smallest measured op: in proportion to its bytes, none at none
        return first.extra_s * max(0.0, nbytes) / first.bytes
    fixed = max(0.0, first.extra_s - per_byte * first.bytes)
    return fixed + per_byte * nbytes


def _interp_log(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Linear interpolation of ``log y`` in ``log x`` through sorted points; flat beyond the ends.

    Examples
    --------
    >>> round(_interp_log([1.0, 100.0], [1.0, 100.0], 10.0), 6)  # halfway in log x: the geometric mean
    10.0
    >>> _interp_log([1.0, 100.0], [2.0, 8.0], 1e6)
    8.0
    """
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    w = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + w * (math.log(y1) - math.log(y0)))


def _kind_curves(points: Iterable[tuple[str, float, float]]) -> dict[str, tuple[tuple[float, float], ...]]:
    """``(kind, gap_s, overhead_s)`` rows grouped into each kind's curve.

    Examples
    --------
    >>> _kind_curves([("mean", 1e-3, 5e-5), ("cat", 1e-5, 2e-6), ("mean", 1e-5, 4e-6)])
    {'mean': ((0.001, 5e-05), (1e-05, 4e-06)), 'cat': ((1e-05, 2e-06),)}
    """
    curves: dict[str, list[tuple[float, float]]] = {}
    for kind, gap, cost in points:
        curves.setdefault(kind, []).append((gap, cost))
    return {k: tuple(c) for k, c in curves.items()}


@dataclass(frozen=True)
class MachineModel:
    """The measured tables of one machine (``dfx calibrate --json``); see the module docstring.

    Parameters
    ----------
    overhead_curve : sequence of (gap_s, overhead_s)
        Seconds since an op of the same kind last ran -> the median tiny op's fixed cost, seconds;
        the first point (smallest gap) is the hot loop.
    overhead_by_kind : mapping of str to float
        Tiny-op kind (:func:`overhead_kind`) -> its fixed cost in a hot loop, seconds; ``view``:
        an ``aten.view`` call's (:meth:`view_s`); ``linear_nd``: a linear on a 3-D input's.
    overhead_mixed : mapping of str to float
        The same kinds' fixed costs when the tiny calls run in turn, each after the others, as a
        graph's nodes do (:meth:`mixed_s`), seconds.
    overhead_curve_by_kind : mapping of str to sequence of (gap_s, overhead_s)
        A kind's own curve, for the kinds kept out of the curve's median (``mean``, ``cat``:
        :func:`dfx.measure.microbench.overhead_curves`), seconds; :meth:`overhead_s` reads it in
        place of the median curve, and the eager rules for a node after a GEMM treat it apart
        (:mod:`dfx.measure.cache_model`: it keeps out of the after-GEMM chain).
    vector_flop_per_s : mapping of str to float
        Family (:func:`vector_family`) -> FLOP/s.
    gemm_table : sequence of GemmRate
        A full grid: every ``rows`` value with every ``k`` and every ``n``.
    gemm_dtype : str
        The dtype the table was measured in; other dtypes use the profile's peak.
    attention_rates : sequence of (causal, seq, flop_per_s)
        Fused attention's rate by mask and query length.
    conv_points : sequence of GemmRate
        Measured convolutions as ``(rows, k, n, flop_per_s)`` of their implicit GEMMs.
    resident_bytes : int, optional
        The last-level cache's effective capacity, bytes.
    reference_flop_per_s : float, optional
        The reference GEMM at calibration (:func:`dfx.measure.microbench.reference_flop_per_s`).
    gemm_cold : sequence of ColdGemmPoint
        A large-weight GEMM hot and cold, by rows (:func:`dfx.measure.microbench.gemm_cold_points`).
    after_gemm : sequence of AfterGemmPoint
        An add hot and right after a GEMM, by bytes and bytes streamed (:func:`dfx.measure.microbench.after_gemm_points`).
    cold_write : sequence of ColdWritePoint
        An output written into one buffer and into buffers not in cache (:func:`dfx.measure.microbench.cold_write_points`).
    conv_points_cl : sequence of GemmRate
        ``conv_points`` measured channels-last (input and weight), as Inductor runs convolutions on a CPU.
    layout_copy : sequence of (bytes, time_s)
        Inductor's NCHW -> channels-last copy: bytes moved (read + written), seconds (:func:`dfx.measure.microbench.layout_copy_points`).
    gemm_bias : sequence of (rows, k, n, mm_s, addmm_s)
        A GEMM without and with a bias, seconds (:func:`dfx.measure.microbench.gemm_bias_points`).
    after_gemm_chain : sequence of (position, streamed_bytes, time_s)
        The ``position``-th tiny element-wise call after a GEMM that moved ``streamed_bytes``: its
        median seconds (:func:`dfx.measure.microbench.after_gemm_chain_points`).
    compiled_overhead : mapping of str to float
        A call's time in a tiny Inductor graph by kind: ``generated`` (a C++ kernel), ``addmm``,
        ``mm`` (extern GEMMs), ``first_addmm`` (the graph's first call, an addmm), seconds
        (:func:`dfx.measure.microbench.compiled_overheads`).
    overhead_curve_each : mapping of str to sequence of (gap_s, overhead_s)
        Each kind the median curve is taken over (``add``, ``relu``, ``linear``...), its own
        curve at the same gaps (:func:`dfx.measure.microbench.overhead_curves`), seconds:
        :meth:`overhead_s` reads a kind's own in place of ``by_kind + (curve(gap) - curve(hot))``.
        Every other rule is as without it.
    """

    overhead_curve: tuple[tuple[float, float], ...] = ()
    overhead_by_kind: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    overhead_mixed: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    overhead_curve_by_kind: Mapping[str, tuple[tuple[float, float], ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    vector_flop_per_s: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    gemm_table: tuple[GemmRate, ...] = ()
    gemm_dtype: str = "float32"
    attention_rates: tuple[tuple[bool, int, float], ...] = ()
    conv_points: tuple[GemmRate, ...] = ()
    resident_bytes: int | None = None
    reference_flop_per_s: float | None = None
    gemm_cold: tuple[ColdGemmPoint, ...] = ()
    after_gemm: tuple[AfterGemmPoint, ...] = ()
    cold_write: tuple[ColdWritePoint, ...] = ()
    conv_points_cl: tuple[GemmRate, ...] = ()
    layout_copy: tuple[tuple[int, float], ...] = ()
    gemm_bias: tuple[tuple[int, int, int, float, float], ...] = ()
    after_gemm_chain: tuple[tuple[int, int, float], ...] = ()
    compiled_overhead: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    overhead_curve_each: Mapping[str, tuple[tuple[float, float], ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def __post_init__(self) -> None:
        """Normalise the tables and check every figure is a positive, finite number (``ValueError`` naming the table)."""
        object.__setattr__(self, "overhead_curve", tuple(sorted((float(g), float(o)) for g, o in self.overhead_curve)))
        checks = [("overhead_curve", v) for point in self.overhead_curve for v in point]
        checks += [(f"overhead_by_kind.{k}", v) for k, v in dict(self.overhead_by_kind).items()]
        checks += [(f"overhead_mixed.{k}", v) for k, v in dict(self.overhead_mixed).items()]
        checks += [(f"compiled_overhead.{k}", v) for k, v in dict(self.compiled_overhead).items()]
        own = {
            k: tuple(sorted((float(g), float(o)) for g, o in c)) for k, c in dict(self.overhead_curve_by_kind).items()
        }
        checks += [(f"overhead_curve_by_kind.{k}", v) for k, c in own.items() for point in c for v in point]
        object.__setattr__(self, "overhead_curve_by_kind", MappingProxyType(own))
        each = {k: tuple(sorted((float(g), float(o)) for g, o in c)) for k, c in dict(self.overhead_curve_each).items()}
        checks += [(f"overhead_curve_each.{k}", v) for k, c in each.items() for point in c for v in point]
        object.__setattr__(self, "overhead_curve_each", MappingProxyType(each))
        checks += [(f"vector_rates.{k}", v) for k, v in dict(self.vector_flop_per_s).items()]
        checks += [("gemm_table", p.flop_per_s) for p in self.gemm_table] + [
            ("conv_points", p.flop_per_s) for p in self.conv_points
        ]
        checks += [("conv_points_channels_last", p.flop_per_s) for p in self.conv_points_cl]
        checks += [("layout_copy", v) for point in self.layout_copy for v in point]
        checks += [("gemm_bias", v) for point in self.gemm_bias for v in point]
        checks += [("after_gemm_chain", v) for point in self.after_gemm_chain for v in point]
        object.__setattr__(self, "after_gemm_chain", tuple(sorted(tuple(p) for p in self.after_gemm_chain)))
        checks += [("attention_rates", r) for _, _, r in self.attention_rates]
        checks += [("gemm_cold", v) for p in self.gemm_cold for v in (p.rows, p.k, p.n, p.hot_s, p.cold_s)]
        checks += [("after_gemm", v) for p in self.after_gemm for v in (p.bytes, p.streamed_bytes, p.hot_s, p.after_s)]
        checks += [("cold_write", v) for p in self.cold_write for v in (p.bytes, p.hot_s, p.cold_s)]
        checks += [
            (name, v)
            for name, v in (
                ("resident_bytes", self.resident_bytes),
                ("reference_flop_per_s", self.reference_flop_per_s),
            )
            if v is not None
        ]
        for name, value in checks:
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must hold positive finite numbers, got {value!r}")
        object.__setattr__(self, "vector_flop_per_s", MappingProxyType(dict(self.vector_flop_per_s)))
        object.__setattr__(self, "overhead_by_kind", MappingProxyType(dict(self.overhead_by_kind)))
        object.__setattr__(self, "overhead_mixed", MappingProxyType(dict(self.overhead_mixed)))
        object.__setattr__(self, "compiled_overhead", MappingProxyType(dict(self.compiled_overhead)))
        object.__setattr__(self, "gemm_table", tuple(self.gemm_table))
        object.__setattr__(self, "gemm_cold", tuple(sorted(self.gemm_cold, key=lambda p: p.rows)))
        object.__setattr__(
            self, "after_gemm", tuple(sorted(self.after_gemm, key=lambda p: (p.streamed_bytes, p.bytes)))
        )
        axes = tuple(sorted({getattr(p, a) for p in self.gemm_table}) for a in ("rows", "k", "n"))
        grid = {(p.rows, p.k, p.n): p for p in self.gemm_table}
        if len(grid) != math.prod(len(a) for a in axes) or len(grid) != len(self.gemm_table):
            raise ValueError(
                f"gemm_table must be a full grid of rows x k x n; got {len(self.gemm_table)} points on "
                f"{' x '.join(str(len(a)) for a in axes)} axis values"
            )
        object.__setattr__(self, "_grid", (axes, grid))

    @classmethod
    def from_calibration(cls, doc: CalibrationTables | Mapping[str, Any]) -> MachineModel:
        """The model of a ``dfx.calibration/1`` document's tables (its record, or the document itself).

        Tables the document lacks (written before they existed) are left empty; their nodes are
        predicted from the profile's figures.

        Raises
        ------
        SchemaError
            If the document is not ``dfx.calibration/1`` or a table is malformed (naming it).
        ValueError
            If a figure is not a positive, finite number (naming the table).
        """
        t = doc if isinstance(doc, CalibrationTables) else read_calibration(doc)
        return cls(
            overhead_curve=tuple((p.gap_s, p.overhead_s) for p in t.overhead_curve),
            overhead_by_kind=dict(t.overhead_by_kind),
            overhead_mixed=dict(t.overhead_mixed),
            overhead_curve_by_kind=_kind_curves((p.kind, p.gap_s, p.overhead_s) for p in t.overhead_curve_by_kind),
            overhead_curve_each=_kind_curves((p.kind, p.gap_s, p.overhead_s) for p in t.overhead_curve_each),
            vector_flop_per_s=dict(t.vector_rates),
            gemm_table=tuple(GemmRate(p.rows, p.k, p.n, p.flop_per_s) for p in t.gemm_table),
            gemm_dtype=t.gemm_dtype,
            attention_rates=tuple((p.causal, p.seq, p.flop_per_s) for p in t.attention_rates),
            conv_points=tuple(GemmRate(p.rows, p.k, p.n, p.flop_per_s) for p in t.conv_points),
            resident_bytes=t.resident_bytes,
            reference_flop_per_s=t.reference_flop_per_s,
            gemm_cold=tuple(ColdGemmPoint(p.rows, p.k, p.n, p.hot_s, p.cold_s) for p in t.gemm_cold),
            after_gemm=tuple(AfterGemmPoint(p.bytes, p.streamed_bytes, p.hot_s, p.after_s) for p in t.after_gemm),
            cold_write=tuple(ColdWritePoint(p.bytes, p.hot_s, p.cold_s) for p in t.cold_write),
            conv_points_cl=tuple(GemmRate(p.rows, p.k, p.n, p.flop_per_s) for p in t.conv_points_channels_last),
            layout_copy=tuple((p.bytes, p.time_s) for p in t.layout_copy),
            gemm_bias=tuple((p.rows, p.k, p.n, p.mm_s, p.addmm_s) for p in t.gemm_bias),
            after_gemm_chain=tuple((p.position, p.streamed_bytes, p.time_s) for p in t.after_gemm_chain),
            compiled_overhead=dict(t.compiled_overhead),
        )

    @classmethod
    def from_profile(cls, profile: Any) -> MachineModel | None:
        """The tables a calibrated profile carries (``HardwareProfile.calibrated``), or ``None`` without them."""
        tables = getattr(profile, "calibrated", None)
        return None if tables is None else cls.from_calibration(read_calibration_tables(tables.model_dump()))

    def overhead_s(self, gap_s: float, default_s: float, kind: str | None = None) -> float:
        """An op's fixed cost when ``gap_s`` seconds passed since its kind last ran, seconds.

        The curve is interpolated log-log (flat beyond its ends); a ``kind`` with its own curve
        (``overhead_curve_by_kind``, then ``overhead_curve_each``) reads that one; for another
        ``kind`` measured in a hot loop, that kind's own cost replaces the curve's hot point:
        ``by_kind + (curve(gap) - curve(hot))``. ``default_s`` (the profile's ``op_overhead_s``)
        when there is no curve.

        Why each kind's own: the median kind's rise, added to a kind whose call path is shorter,
        overcharges it. After 12 to 17 us of GEMMs the median kind took 2.4 us more than in its hot
        loop, a ReLU 0.8 to 1.3 us more (2.3 to 2.7 us; the MLP's ReLUs measured 2.4 to 2.9 after
        their 14 us GEMMs and were charged 3.8 to 4.5 with the median's rise); 2026-12-02,
        ``docs/validation.md``.

        Examples
        --------
        >>> m = MachineModel(overhead_curve=((1e-5, 5e-6), (1e-3, 5e-5)), overhead_by_kind={"linear": 9e-6})
        >>> round(m.overhead_s(1e-4, 0.0) * 1e6, 6)  # halfway in log gap: the geometric mean of 5 and 50 us
        15.811388
        >>> round(m.overhead_s(1e-4, 0.0, "linear") * 1e6, 6)  # 9 us + (15.81 - 5) us
        19.811388
        >>> own = MachineModel(overhead_curve=m.overhead_curve, overhead_curve_by_kind={"mean": ((1e-5, 4e-6), (1e-3, 1.6e-4))})
        >>> round(own.overhead_s(1e-4, 0.0, "mean") * 1e6, 6)  # its own curve: the geometric mean of 4 and 160 us
        25.298221
        >>> each = MachineModel(overhead_curve=m.overhead_curve, overhead_by_kind={"relu": 1.5e-6},
        ...                     overhead_curve_each={"relu": ((1e-5, 2e-6), (1e-3, 2e-5))})
        >>> round(each.overhead_s(1e-4, 0.0, "relu") * 1e6, 6)  # its own: the geometric mean of 2 and 20 us
        6.324555
        """
        mine = (self.overhead_curve_by_kind.get(kind) or self.overhead_curve_each.get(kind)) if kind else None
        if mine:
            gaps, costs = zip(*mine)
            return _interp_log(gaps, costs, max(gap_s, 1e-12))
        if not self.overhead_curve:
            return self.overhead_by_kind.get(kind, default_s) if kind else default_s
        gaps, costs = zip(*self.overhead_curve)
        value = _interp_log(gaps, costs, max(gap_s, 1e-12))
        hot = self.overhead_by_kind.get(kind) if kind else None
        return value if hot is None else hot + max(0.0, value - costs[0])

    def compiled_s(self, kind: str) -> float | None:
        """What a call of ``kind`` costs in Inductor's compiled code (``compiled_overhead``): ``generated``
        (a C++ kernel Inductor wrote), ``addmm`` or ``mm`` (a GEMM it calls from the library), seconds;
        ``None`` when not measured (a document written before 2026-12-02).

        Examples
        --------
        >>> m = MachineModel(compiled_overhead={"generated": 1.9e-6, "addmm": 5.1e-6})
        >>> m.compiled_s("generated"), m.compiled_s("mm")
        (1.9e-06, None)
        """
        return self.compiled_overhead.get(kind)

    def compiled_entry_s(self) -> float:
        """What a compiled graph's first call pays over the same call later in the graph: the wrapper's
        entry (unpacking and checking its inputs), ``max(0, first_addmm - addmm)``, seconds; 0 when
        not measured.

        Examples
        --------
        >>> round(MachineModel(compiled_overhead={"addmm": 5e-6, "first_addmm": 6.5e-6}).compiled_entry_s() * 1e6, 6)
        1.5
        >>> MachineModel(compiled_overhead={"addmm": 5e-6, "first_addmm": 4e-6}).compiled_entry_s(), MachineModel().compiled_entry_s()
        (0.0, 0.0)
        """
        first, later = self.compiled_overhead.get("first_addmm"), self.compiled_overhead.get("addmm")
        return max(0.0, first - later) if first is not None and later is not None else 0.0

    def cold_write_s_per_byte(self) -> float:
        """Seconds an output written into a block not in cache adds per output byte: the median
        over ``cold_write`` of :attr:`ColdWritePoint.extra_s_per_byte`; 0 without the table.

        Examples
        --------
        >>> m = MachineModel(cold_write=(ColdWritePoint(1000, 1e-6, 3e-6), ColdWritePoint(1000, 1e-6, 5e-6)))
        >>> round(m.cold_write_s_per_byte() * 1e9, 6)  # median of 2 and 4 ns per byte
        3.0
        """
        if not self.cold_write:
            return 0.0
        return statistics.median(p.extra_s_per_byte for p in self.cold_write)

    def layout_copy_s_per_byte(self) -> float:
        """Seconds per byte moved (read + written) by Inductor's NCHW -> channels-last copy: the median
        over ``layout_copy`` of ``time_s / bytes``; 0 without the table.

        Examples
        --------
        >>> m = MachineModel(layout_copy=((3_000_000, 100e-6), (3_000_000, 200e-6), (6_000_000, 240e-6)))
        >>> round(m.layout_copy_s_per_byte() * 1e12, 6)  # 33.3, 66.7 and 40 ps per byte: the median
        40.0
        """
        if not self.layout_copy:
            return 0.0
        return statistics.median(t / b for b, t in self.layout_copy)

    def view_s(self) -> float | None:
        """What a view node (``aten.view``, ``permute``, ``expand``, ...) costs in an eager run: the
        dispatch of an ``aten.view`` in a hot loop (``overhead_by_kind["view"]``), seconds; ``None``
        when not measured. A compiled program's views are free (Inductor folds them into index
        arithmetic), so only the eager prediction charges it.

        Examples
        --------
        >>> MachineModel(overhead_by_kind={"add": 3e-6, "view": 1.2e-6}).view_s(), MachineModel().view_s()
        (1.2e-06, None)
        """
        return self.overhead_by_kind.get("view")

    def mixed_s(self, kind: str | None) -> float | None:
        """What a call of ``kind`` costs at least when other kinds ran since it last did (a graph node
        that does not follow a node of its own kind): ``overhead_mixed[kind]``, seconds; ``None``
        when not measured.

        Examples
        --------
        >>> m = MachineModel(overhead_mixed={"relu": 2.1e-6})
        >>> m.mixed_s("relu"), m.mixed_s("add"), m.mixed_s(None)
        (2.1e-06, None, None)
        """
        return self.overhead_mixed.get(kind) if kind else None

    def work_overheads(self) -> list[float]:
        """The hot costs of the kinds of op that run a kernel (``overhead_by_kind`` without ``view``), seconds.

        Examples
        --------
        >>> MachineModel(overhead_by_kind={"add": 3e-6, "view": 1.2e-6}).work_overheads()
        [3e-06]
        """
        return [v for k, v in self.overhead_by_kind.items() if k not in _SIDE_KINDS]

    def gemm_flop_per_s(self, rows: float, k: float, n: float) -> float | None:
        """FLOP/s of a GEMM ``[rows, k] x [k, n]``: trilinear in log-log over the table, flat beyond its edges.

        ``log rate`` is interpolated in ``log rows`` on each measured ``(k, n)``, then in ``log n``,
        then in ``log k``. ``None`` with no table.
        """
        (rows_axis, k_axis, n_axis), grid = self._grid  # type: ignore[attr-defined]
        if not grid:
            return None

        def at_k(kk: int) -> float:
            along_n = [_interp_log(rows_axis, [grid[(r, kk, nn)].flop_per_s for r in rows_axis], rows) for nn in n_axis]
            return _interp_log(n_axis, along_n, n)

        return _interp_log(k_axis, [at_k(kk) for kk in k_axis], k)

    def exposed_s_per_weight_byte(self, rows: float) -> float:
        """Seconds a weight read from DRAM adds to a GEMM at ``rows`` rows, per weight byte; 0 without ``gemm_cold``.

        :attr:`ColdGemmPoint.exposed_s_per_byte` interpolated linearly in ``log rows`` between the
        measured rows, flat beyond them: the part of the weight's DRAM time the GEMM does not hide
        behind its compute (all of it for a few rows, none for hundreds).

        Examples
        --------
        >>> m = MachineModel(gemm_cold=(ColdGemmPoint(1, 1, 1, 1.0, 5.0), ColdGemmPoint(100, 1, 1, 1.0, 1.0)))
        >>> m.exposed_s_per_weight_byte(10)  # halfway in log rows between 1.0 and 0.0 s per byte
        0.5
        >>> m.exposed_s_per_weight_byte(1000), m.exposed_s_per_weight_byte(0.5)
        (0.0, 1.0)
        """
        if not self.gemm_cold:
            return 0.0
        rows_axis = [p.rows for p in self.gemm_cold]
        values = [p.exposed_s_per_byte for p in self.gemm_cold]
        if rows <= rows_axis[0]:
            return values[0]
        if rows >= rows_axis[-1]:
            return values[-1]
        i = bisect.bisect_right(rows_axis, rows)
        w = (math.log(rows) - math.log(rows_axis[i - 1])) / (math.log(rows_axis[i]) - math.log(rows_axis[i - 1]))
        return values[i - 1] + w * (values[i] - values[i - 1])

    def after_gemm_fixed_s(self, streamed_bytes: float) -> float | None:
        """The fixed part of :meth:`after_gemm_s` (its line's value at 0 bytes, above the smallest
        measured op's rule) after a GEMM that moved ``streamed_bytes``, interpolated across
        ``streamed_bytes`` as it is; ``None`` without ``after_gemm``. What a view right after a
        GEMM pays in an eager run: it moves no data, yet the first node after the GEMM pays.

        Examples
        --------
        >>> m = MachineModel(after_gemm=(AfterGemmPoint(1000, 100, 1e-6, 21e-6), AfterGemmPoint(5000, 100, 2e-6, 62e-6)))
        >>> round(m.after_gemm_fixed_s(100) * 1e6, 6), round(m.after_gemm_fixed_s(50) * 1e6, 6)  # 20 - 10 ns x 1,000 B; half at half
        (10.0, 5.0)
        """
        return self.after_gemm_s(None, streamed_bytes)

    def after_gemm_s(self, nbytes: float | None, streamed_bytes: float) -> float | None:
        """What an op moving ``nbytes`` (that a hot loop keeps in the closest cache) pays right after
        a GEMM that moved ``streamed_bytes``, seconds; ``None`` without ``after_gemm``.

        At each measured ``streamed_bytes``, the line through its points' ``(bytes, after_s -
        hot_s)``: a fixed part (the op's code and the threads are cold) plus a part per byte (its
        data comes from a farther cache), each at least 0. From ``(B1, P1)`` and ``(B2, P2)``:
        ``per_byte = max(0, (P2 - P1) / (B2 - B1))``, ``fixed = max(0, P1 - per_byte * B1)``, the
        value ``fixed + per_byte * nbytes`` from ``B1`` on, and ``P1 * nbytes / B1`` below it (no
        measurement says what an op moving almost nothing pays: the MLP's 2 KiB ReLU pays about
        nothing after its 1.5 MiB GEMM, not the line's 3 us); one point alone is a fixed part. Across
        ``streamed_bytes``: 0 at none streamed, linear up to the smallest measured, linear in
        ``log streamed_bytes`` between measured ones, flat beyond the largest.

        Examples
        --------
        >>> m = MachineModel(after_gemm=(AfterGemmPoint(1000, 100, 1e-6, 21e-6), AfterGemmPoint(5000, 100, 2e-6, 62e-6)))
        >>> round(m.after_gemm_s(3000, 100) * 1e6, 6)  # P1 = 20 us, P2 = 60 us: 10 ns per byte, 10 us fixed; 10 + 30
        40.0
        >>> round(m.after_gemm_s(3000, 50) * 1e6, 6), m.after_gemm_s(3000, 0), round(m.after_gemm_s(3000, 1e9) * 1e6, 6)
        (20.0, 0.0, 40.0)
        >>> round(m.after_gemm_s(500, 100) * 1e6, 6)  # below 1,000 B: 20 us x 500 / 1,000
        10.0
        """
        if not self.after_gemm:
            return None
        if streamed_bytes <= 0:
            return 0.0
        by_streamed: dict[int, list[AfterGemmPoint]] = {}
        for p in self.after_gemm:
            by_streamed.setdefault(p.streamed_bytes, []).append(p)
        axis = sorted(by_streamed)
        values = [_after_line(sorted(by_streamed[d], key=lambda p: p.bytes), nbytes) for d in axis]
        if streamed_bytes <= axis[0]:
            return values[0] * streamed_bytes / axis[0]
        if streamed_bytes >= axis[-1]:
            return values[-1]
        i = bisect.bisect_right(axis, streamed_bytes)
        w = (math.log(streamed_bytes) - math.log(axis[i - 1])) / (math.log(axis[i]) - math.log(axis[i - 1]))
        return values[i - 1] + w * (values[i] - values[i - 1])

    def chain_s(self, position: int, streamed_bytes: float) -> float | None:
        """What a call with no work costs as the ``position``-th working op after a GEMM that moved
        ``streamed_bytes``, seconds: the ``after_gemm_chain`` point at that position (the last
        measured position beyond it); ``None`` without the table, for ``position`` under 1, or after
        a GEMM that moved less than the chain's did (nothing measured there: such a node keeps the
        other rules).

        Examples
        --------
        >>> m = MachineModel(after_gemm_chain=((1, 100, 130e-6), (2, 100, 33e-6), (3, 100, 26e-6)))
        >>> [round(m.chain_s(p, 100) * 1e6, 6) for p in (1, 2, 3, 7)]  # beyond the third: the third's
        [130.0, 33.0, 26.0, 26.0]
        >>> m.chain_s(2, 99), m.chain_s(0, 100), MachineModel().chain_s(2, 100)
        (None, None, None)
        """
        if not self.after_gemm_chain or position < 1:
            return None
        if streamed_bytes < max(b for _, b, _ in self.after_gemm_chain):
            return None
        measured = [(p, t) for p, _, t in self.after_gemm_chain if p <= position]
        return max(measured)[1] if measured else None

    def conv_factor(self) -> float | None:
        """Median over ``conv_points`` of (convolution FLOP/s) / (GEMM table FLOP/s at its implicit GEMM); ``None`` without both.

        Examples
        --------
        >>> table = [GemmRate(r, k, n, 1e11) for r in (1, 10) for k in (1, 10) for n in (1, 10)]
        >>> m = MachineModel(gemm_table=table, conv_points=(GemmRate(5, 5, 5, 5e10), GemmRate(5, 5, 5, 8e10)))
        >>> round(m.conv_factor(), 6)  # median of 0.5 and 0.8
        0.65
        """
        ratios = [p.flop_per_s / rate for p in self.conv_points if (rate := self.gemm_flop_per_s(p.rows, p.k, p.n))]
        return statistics.median(ratios) if ratios else None

    def conv_factor_at(self, rows: float, k: float, n: float, channels_last: bool = False) -> float | None:
        """The conv-to-GEMM ratio of the measured convolution nearest ``(rows, k, n)``; ``None`` without both tables.

        ``channels_last``: from ``conv_points_cl`` (the layout Inductor runs convolutions in on a
        CPU), falling back to ``conv_points`` when that table is empty (a document written before it).

        Nearest by the squared distance of ``log rows``, ``log k`` and ``log n``. A 1x1 convolution
        and a 3x3 one of the same channels differ in ``k`` by 9x, and in their ratio too (on the
        machine of ``docs/validation.md`` 0.47 to 0.54 for 1x1 layers, 0.88 to 1.16 for 3x3: a
        1x1 convolution reorders its input for a GEMM that is short in ``k``), which one median
        (:meth:`conv_factor`) cannot hold.

        Examples
        --------
        >>> table = [GemmRate(r, k, n, 1e11) for r in (1, 1000) for k in (1, 1000) for n in (1, 1000)]
        >>> m = MachineModel(gemm_table=table, conv_points=(GemmRate(100, 64, 64, 5e10), GemmRate(100, 576, 64, 9e10)))
        >>> round(m.conv_factor_at(400, 64, 64), 6), round(m.conv_factor_at(400, 500, 64), 6)  # nearest in k: 64, 576
        (0.5, 0.9)
        >>> round(m.conv_factor_at(400, 64, 64, channels_last=True), 6)  # no channels-last table: the NCHW one
        0.5
        """
        best = None
        for p in (self.conv_points_cl or self.conv_points) if channels_last else self.conv_points:
            rate = self.gemm_flop_per_s(p.rows, p.k, p.n)
            if not rate:
                continue
            d = sum((math.log(a) - math.log(b)) ** 2 for a, b in ((rows, p.rows), (k, p.k), (n, p.n)))
            if best is None or d < best[0]:
                best = (d, p.flop_per_s / rate)
        return None if best is None else best[1]

    def bias_factor_at(self, rows: float, k: float, n: float) -> float | None:
        """What a bias costs a GEMM over the ``mm`` the table times: ``(addmm_s - tiny addmm_s) /
        (mm_s - tiny mm_s)`` of the ``gemm_bias`` point nearest ``(rows, k, n)`` (squared distance of
        their logs, as :meth:`conv_factor_at`), the tiny point being the one of fewest ``rows x k x
        n`` (the calls' fixed costs: a node pays its kind's). At least half of each time is kept
        (:func:`dfx.measure.microbench._net_rate`'s guard); ``None`` with fewer than two points.

        Examples
        --------
        >>> tiny = (1, 8, 8, 1e-6, 2e-6)  # mm 1 us, addmm 2 us: fixed costs
        >>> m = MachineModel(gemm_bias=(tiny, (64, 512, 512, 101e-6, 104e-6), (64, 512, 2048, 401e-6, 434e-6)))
        >>> round(m.bias_factor_at(64, 768, 768), 6), round(m.bias_factor_at(64, 768, 2304), 6)  # 102 / 100, 432 / 400
        (1.02, 1.08)
        """
        if len(self.gemm_bias) < 2:
            return None
        tiny = min(self.gemm_bias, key=lambda p: p[0] * p[1] * p[2])
        best = None
        for point in self.gemm_bias:
            if point is tiny:
                continue
            r, pk, pn, mm_s, addmm_s = point
            d = sum((math.log(a) - math.log(b)) ** 2 for a, b in ((rows, r), (k, pk), (n, pn)))
            if best is None or d < best[0]:
                net_mm, net_addmm = max(mm_s - tiny[3], mm_s / 2), max(addmm_s - tiny[4], addmm_s / 2)
                best = (d, net_addmm / net_mm)
        return None if best is None else best[1]

    def attention_flop_per_s(self, seq: int, causal: bool) -> float | None:
        """FLOP/s of fused attention at query length ``seq`` (log-log in ``seq``, flat beyond); ``None`` if not measured."""
        points = sorted((n, r) for c, n, r in self.attention_rates if c == causal)
        if not points:
            return None
        return _interp_log([n for n, _ in points], [r for _, r in points], seq)

    def vector_rate(self, family: str | None) -> float | None:
        """FLOP/s of a vector-op family; ``None`` if it was not measured."""
        return self.vector_flop_per_s.get(family) if family else None

    def median_vector_rate(self) -> float | None:
        """The median over measured families: the rate of a normalization dfx has no family for."""
        rates = list(self.vector_flop_per_s.values())
        return statistics.median(rates) if rates else None


def vector_family(node: CostedNode) -> str | None:
    """The :meth:`MachineModel.vector_rate` family of a node's aten calls, or ``None``.

    ``aten.gelu`` with ``approximate="tanh"`` is ``gelu_tanh``, otherwise ``gelu``; softmax
    (``_softmax``, ``softmax``, ``_safe_softmax``); layer norm; any batch norm.
    """
    for call in node.node.aten_calls:
        packet = call.packet
        if packet == "aten.gelu":
            return "gelu_tanh" if call.arg(1, "approximate", "none") == "tanh" else "gelu"
        if packet in ("aten._softmax", "aten.softmax", "aten._safe_softmax"):
            return "softmax"
        if packet in ("aten.native_layer_norm", "aten.layer_norm"):
            return "layer_norm"
        if "batch_norm" in packet:
            return "batch_norm"
    return None


def attention_call(node: CostedNode) -> tuple[int, bool] | None:
    """``(query length, causal)`` of a node's ``aten.scaled_dot_product_attention`` call, or ``None``."""
    for call in node.node.aten_calls:
        if call.packet == "aten.scaled_dot_product_attention" and call.args and hasattr(call.args[0], "shape"):
            return call.args[0].shape[-2], bool(call.arg(5, "is_causal", False))
    return None


def is_convolution(node: CostedNode) -> bool:
    """Whether the node's contraction is a convolution (its GEMM dims are an implicit GEMM's)."""
    return any(
        c.packet in ("aten.convolution", "aten.conv1d", "aten.conv2d", "aten.conv3d") for c in node.node.aten_calls
    )


def gemm_dims(node: CostedNode) -> tuple[int, int, int] | None:
    """``(rows, k, n)`` of a node's GEMM, or ``None`` when its contraction has no weight operand.

    ``addmm(bias, a[M,K], b[K,N])``, ``mm(a, b)``: ``(M, K, N)``; ``linear(x, w[N,K])``: ``(x.numel / K, K, N)``;
    a convolution as its implicit GEMM (im2col): ``(output elements / C_out, C_in / groups * kernel elements, C_out)``.
    """
    for call in node.node.aten_calls:
        packet, args = call.packet, call.args
        tensors = [a for a in args if hasattr(a, "shape")]
        if (
            packet in ("aten.addmm", "aten._addmm_activation")
            and len(args) >= 3
            and hasattr(args[1], "shape")
            and hasattr(args[2], "shape")
        ):
            (m, k), (_, n) = args[1].shape, args[2].shape
            return m, k, n
        if packet == "aten.mm" and len(tensors) >= 2 and len(tensors[0].shape) == 2 and len(tensors[1].shape) == 2:
            (m, k), (_, n) = tensors[0].shape, tensors[1].shape
            return m, k, n
        if packet == "aten.linear" and len(tensors) >= 2 and tensors[0].shape and len(tensors[1].shape) == 2:
            n, k = tensors[1].shape
            return max(1, math.prod(tensors[0].shape) // max(k, 1)), k, n
        if (
            packet in ("aten.convolution", "aten.conv1d", "aten.conv2d", "aten.conv3d")
            and len(tensors) >= 2
            and call.outputs
        ):
            out, weight = call.outputs[0].shape, tensors[1].shape
            channels = out[1] if len(out) > 1 else 1
            return max(1, math.prod(out) // max(channels, 1)), math.prod(weight[1:]), weight[0]
    return None


_OVERHEAD_KINDS = (  # aten packet -> the tiny op of dfx.measure.microbench that has the same fixed cost
    (("aten.add", "aten.sub", "aten.mul", "aten.div"), "add"),
    (("aten.relu",), "relu"),
    (("aten.gelu",), "gelu"),
    (("aten._softmax", "aten.softmax", "aten._safe_softmax"), "softmax"),
    (("aten.native_layer_norm", "aten.layer_norm"), "layer_norm"),
    (("aten.addmm", "aten.mm", "aten.linear", "aten._addmm_activation"), "linear"),
    (("aten.convolution", "aten.conv1d", "aten.conv2d", "aten.conv3d"), "conv2d"),
    (("aten.scaled_dot_product_attention", "aten._scaled_dot_product_flash_attention_for_cpu"), "attention"),
    (("aten.mean",), "mean"),
    (("aten.cat",), "cat"),
)


def overhead_kind(node: CostedNode) -> str | None:
    """The tiny op whose hot-loop cost stands for this node's (``MachineModel.overhead_by_kind``), or ``None``."""
    for call in node.node.aten_calls:
        if "batch_norm" in call.packet:
            return "batch_norm"
        for packets, kind in _OVERHEAD_KINDS:
            if call.packet in packets:
                return kind
    return None


def op_kind(node: CostedNode) -> tuple[str, ...]:
    """What makes two nodes "the same kind of op" for the overhead curve: their aten calls' names, in order."""
    return tuple(call.op for call in node.node.aten_calls)


def has_bias(node: CostedNode) -> bool:
    """Whether the node's GEMM adds a bias: an ``addmm`` (its first operand), or an ``aten.linear``
    with a third tensor. A convolution's bias is not counted (``conv_points`` time it with none)."""
    for call in node.node.aten_calls:
        tensors = [a for a in call.args if hasattr(a, "shape")]
        if call.packet in ("aten.addmm", "aten._addmm_activation"):
            return True
        if call.packet == "aten.linear":
            return len(tensors) >= 3
    return False


def model_footprint_bytes(graph: Graph) -> int:
    """Bytes a run touches: parameters and buffers once, inputs, and every node's outputs (none freed)."""
    params = sum(p.spec.nbytes for p in graph.parameters)
    activations = sum(
        spec.nbytes for n in graph.nodes if n.op not in ("placeholder", "get_attr", "output") for spec in n.outputs
    )
    inputs = sum(
        spec.nbytes for n in graph.nodes if n.op == "placeholder" and n.input_kind == "input" for spec in n.outputs
    )
    return params + activations + inputs


def load_calibration(path: str | Path, hw: str | None = None) -> tuple[Any, MachineModel, list[str]]:
    """What ``dfx validate --calibration PATH [--hw HW]`` predicts with: a profile, the machine model, warnings.

    The profile is the calibration's own, or ``hw`` when given (it must be the same machine: its
    id equal to the calibration's); the warnings name the tables the document lacks.

    Raises
    ------
    DfxError
        One line naming ``path`` and the fix: no such file, a profile (YAML) passed instead, not
        JSON, not a ``dfx.calibration/1`` document (or a key missing, a :class:`SchemaError`), a
        profile that does not load, ``hw`` of another machine, or a table with a bad figure.
    """
    from dfx.errors import DfxError
    from dfx.hardware import load_profile, parse_profile
    from dfx.safe_load import load_json

    path = Path(path)
    fix = "write it with `dfx calibrate --json > FILE`"
    if not path.is_file():  # a folder or a device (/dev/zero) is not "no such file"
        what = "no such file" if not path.exists() else "a folder" if path.is_dir() else "not a regular file"
        raise DfxError(f"--calibration {path}: {what}; {fix}")
    if path.suffix in (".yaml", ".yml"):
        raise DfxError(
            f"--calibration {path} is a profile, not a calibration document; pass it as --hw {path}, or {fix}"
        )
    try:
        raw = load_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise DfxError(f"--calibration {path}: cannot read it as JSON ({type(exc).__name__}); {fix}") from None
    doc = read_calibration(raw, f"--calibration {path}")
    own = parse_profile(dict(doc.profile), str(path))
    profile = own
    if hw:
        profile = load_profile(hw)
        if profile.id != own.id:
            raise DfxError(
                f"--hw {hw} is {profile.id!r} but --calibration {path} measured {own.id!r}; drop --hw "
                f"(the calibration brings its profile), or drop --calibration to predict on {profile.id}"
            )
    try:
        machine = MachineModel.from_calibration(doc)
    except ValueError as exc:
        raise DfxError(f"--calibration {path}: its tables are malformed ({exc}); {fix}") from None
    missing = doc.missing()
    warnings = (
        [f"--calibration {path} has no {', '.join(missing)}: those nodes are predicted from the profile's figures"]
        if missing
        else []
    )
    return profile, machine, warnings
