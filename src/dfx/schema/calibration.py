"""The calibration document (``dfx.calibration/1``, ``dfx calibrate --json``) as frozen records.

:meth:`dfx.measure.calibration.Calibration.to_record` writes it; ``dfx validate --calibration``
reads it through :func:`read_calibration` (the command's checks live in
:func:`dfx.measure.machine.load_calibration`), and :class:`dfx.measure.machine.MachineModel` is
built from its :class:`CalibrationTables` (the same keys as a profile's ``calibrated`` section).
Field by field: ``docs/validation.md`` ("Export").

The tables were added to ``dfx.calibration/1`` one by one, never renamed or removed; a document
written before a table existed reads it as empty (``absent=`` below: the one place that says so),
and ``dfx validate`` warns that those nodes are predicted from the profile's figures.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.fields import as_dict, as_float, as_int, as_opt_float, as_str, as_str_tuple
from dfx.schema.ids import CALIBRATION_SCHEMA
from dfx.schema.errors import SchemaError
from dfx.schema.record import Record, key, nested, nested_list, nested_map, read_tagged

__all__ = [
    "AttentionPointRecord",
    "CalibrationDoc",
    "CalibrationTables",
    "GemmCurvePointRecord",
    "GemmBiasPointRecord",
    "AfterGemmChainPointRecord",
    "GemmPointRecord",
    "KindOverheadPointRecord",
    "MeasurementRecord",
    "OverheadPointRecord",
    "TABLE_NAMES",
    "VerdictRecord",
    "read_calibration",
    "read_calibration_tables",
]

_record = dataclass(frozen=True, kw_only=True)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _float_map(v: Any) -> Mapping[str, float]:
    return MappingProxyType({str(k): as_float(x) for k, x in as_dict(v).items()})


def _ints(v: Any) -> tuple[int, ...]:
    if not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of integers")
    return tuple(as_int(x) for x in v)


def _opt_int(v: Any) -> int | None:
    return None if v is None else as_int(v)


@_record
class OverheadPointRecord(Record):
    """``overhead_curve[]``: a tiny op's fixed cost ``overhead_s`` when ``gap_s`` passed since its kind last ran."""

    gap_s: float = key(as_float)
    overhead_s: float = key(as_float)


@_record
class KindOverheadPointRecord(Record):
    """``overhead_curve_by_kind[]`` and ``overhead_curve_each[]``: one kind's own fixed cost ``overhead_s`` when ``gap_s``
    passed since it last ran."""

    kind: str = key(as_str)
    gap_s: float = key(as_float)
    overhead_s: float = key(as_float)


@_record
class GemmBiasPointRecord(Record):
    """``gemm_bias[]``: ``[rows, k] x [k, n]`` timed as ``mm`` (``mm_s``) and as ``addmm`` with a bias (``addmm_s``)."""

    rows: int = key(as_int)
    k: int = key(as_int)
    n: int = key(as_int)
    mm_s: float = key(as_float)
    addmm_s: float = key(as_float)


@_record
class GemmPointRecord(Record):
    """``gemm_table[]`` and ``conv_points[]``: one GEMM ``[rows, k] x [k, n]`` (a convolution's implicit one)."""

    rows: int = key(as_int)
    k: int = key(as_int)
    n: int = key(as_int)
    flops: int | None = key(as_int, absent=None, omit=None)  # gemm_table of the document only
    flop_per_s: float = key(as_float)


@_record
class AttentionPointRecord(Record):
    """``attention_rates[]``: fused attention's FLOP/s at one query length, causal or not."""

    causal: bool = key(_bool)
    seq: int = key(as_int)
    flop_per_s: float = key(as_float)


@_record
class ColdGemmPointRecord(Record):
    """``gemm_cold[]``: a GEMM ``[rows, k] x [k, n]`` timed with its weight in cache and read from DRAM, seconds."""

    rows: int = key(as_int)
    k: int = key(as_int)
    n: int = key(as_int)
    hot_s: float = key(as_float)
    cold_s: float = key(as_float)


@_record
class AfterGemmPointRecord(Record):
    """``after_gemm[]``: an element-wise op moving ``bytes`` timed hot and right after a GEMM that moved ``streamed_bytes``, seconds."""

    bytes: int = key(as_int)
    streamed_bytes: int = key(as_int)
    hot_s: float = key(as_float)
    after_s: float = key(as_float)


@_record
class AfterGemmChainPointRecord(Record):
    """``after_gemm_chain[]``: the ``position``-th tiny element-wise call after a GEMM that moved ``streamed_bytes``, its median ``time_s``."""

    position: int = key(as_int)
    streamed_bytes: int = key(as_int)
    time_s: float = key(as_float)


@_record
class ColdWritePointRecord(Record):
    """``cold_write[]``: an element-wise op writing ``bytes`` of output, into one buffer (``hot_s``) and cycling through buffers that left the cache (``cold_s``), seconds."""

    bytes: int = key(as_int)
    hot_s: float = key(as_float)
    cold_s: float = key(as_float)


@_record
class LayoutCopyPointRecord(Record):
    """``layout_copy[]``: Inductor's generated NCHW -> channels-last copy moving ``bytes`` (read + written) in ``time_s`` seconds."""

    bytes: int = key(as_int)
    time_s: float = key(as_float)


@_record
class GemmCurvePointRecord(Record):
    """``gemm_curve[]`` (the first version's single curve): FLOP/s against a GEMM's FLOPs."""

    flops: float = key(as_float)
    flop_per_s: float = key(as_float)


@_record
class MeasurementRecord(Record):
    """``measurements.<path>``: one measured figure, the median seconds behind it and how it was taken."""

    value: float = key(as_float)
    median_s: float = key(as_float)
    reps: int = key(as_int)
    how: str = key(as_str)


@_record
class VerdictRecord(Record):
    """``verdict``: whether the machine was busy while it was measured (CPU; ``dfx.measure.busy``).

    ``before`` and ``after`` are the load probes around the measuring, kept as read-only objects
    (``dfx.measure.busy.LoadProbe.to_dict``), null when not taken.
    """

    busy: bool = key(_bool)
    line: str = key(as_str)  # the one line dfx calibrate prints
    reasons: tuple[str, ...] = key(as_str_tuple)
    before: Mapping[str, Any] | None = key(lambda v: None if v is None else MappingProxyType(as_dict(v)))
    after: Mapping[str, Any] | None = key(lambda v: None if v is None else MappingProxyType(as_dict(v)))


@_record
class CalibrationTables(Record):
    """The calibrated machine model's tables: in the document, and as a profile's ``calibrated`` section."""

    overhead_curve: tuple[OverheadPointRecord, ...] = nested_list(OverheadPointRecord, absent=())
    overhead_by_kind: Mapping[str, float] = key(_float_map, absent=MappingProxyType({}))
    # each tiny call's seconds when the calls run in turn (a node after other kinds); added 2026-12-01
    overhead_mixed: Mapping[str, float] = key(_float_map, absent=MappingProxyType({}))
    # added 2026-12-01: the curve of each kind kept out of the curve's median (mean, cat), by kind and gap
    overhead_curve_by_kind: tuple[KindOverheadPointRecord, ...] = nested_list(KindOverheadPointRecord, absent=())
    # added 2026-12-02: each of the median curve's kinds (add, relu, ...) at the same gaps, its own curve
    overhead_curve_each: tuple[KindOverheadPointRecord, ...] = nested_list(KindOverheadPointRecord, absent=())
    vector_rates: Mapping[str, float] = key(_float_map, absent=MappingProxyType({}))
    gemm_dtype: str = key(as_str, absent="float32")  # the dtype of the GEMM, attention and convolution tables
    gemm_table: tuple[GemmPointRecord, ...] = nested_list(GemmPointRecord, absent=())
    attention_rates: tuple[AttentionPointRecord, ...] = nested_list(AttentionPointRecord, absent=())
    conv_points: tuple[GemmPointRecord, ...] = nested_list(GemmPointRecord, absent=())
    resident_bytes: int | None = key(_opt_int, absent=None)
    reference_flop_per_s: float | None = key(as_opt_float, absent=None)
    gemm_cold: tuple[ColdGemmPointRecord, ...] = nested_list(ColdGemmPointRecord, absent=())  # added 2026-12-01
    after_gemm: tuple[AfterGemmPointRecord, ...] = nested_list(AfterGemmPointRecord, absent=())  # added 2026-12-01
    cold_write: tuple[ColdWritePointRecord, ...] = nested_list(ColdWritePointRecord, absent=())  # added 2026-12-01
    # added 2026-12-01: the same convolutions in channels-last, the layout Inductor runs them in on a CPU
    conv_points_channels_last: tuple[GemmPointRecord, ...] = nested_list(GemmPointRecord, absent=())
    layout_copy: tuple[LayoutCopyPointRecord, ...] = nested_list(LayoutCopyPointRecord, absent=())  # added 2026-12-01
    gemm_bias: tuple[GemmBiasPointRecord, ...] = nested_list(GemmBiasPointRecord, absent=())  # added 2026-12-01
    # added 2026-12-02: tiny element-wise calls one after another after a 64 MiB GEMM, by position
    after_gemm_chain: tuple[AfterGemmChainPointRecord, ...] = nested_list(AfterGemmChainPointRecord, absent=())
    # added 2026-12-02: the fixed cost of a call in Inductor's compiled code, by kind (generated, addmm, mm, entry)
    compiled_overhead: Mapping[str, float] = key(_float_map, absent=MappingProxyType({}))

    def missing(self) -> tuple[str, ...]:
        """The tables this document lacks or holds empty (their nodes are predicted from the profile's figures)."""
        return tuple(t for t in TABLE_NAMES if _empty(getattr(self, t)))


def _empty(value: Any) -> bool:
    return value is None or (not isinstance(value, (int, float)) and len(value) == 0)


TABLE_NAMES = (
    "overhead_curve",
    "overhead_by_kind",
    "overhead_mixed",
    "overhead_curve_by_kind",
    "overhead_curve_each",
    "vector_rates",
    "gemm_table",
    "attention_rates",
    "conv_points",
    "resident_bytes",
    "reference_flop_per_s",
    "gemm_cold",
    "after_gemm",
    "cold_write",
    "conv_points_channels_last",
    "layout_copy",
    "gemm_bias",
    "after_gemm_chain",
    "compiled_overhead",
)
_HEADER = ("schema", "device", "threads", "torch_version", "date", "profile")


@_record
class CalibrationDoc(CalibrationTables):
    """The whole ``dfx.calibration/1`` document: how it was measured, the profile, the tables, the raw medians.

    ``profile`` stays a plain read-only mapping: it is a hardware profile, validated by
    :func:`dfx.hardware.parse_profile` (``docs/hardware.md``).
    """

    schema: str = key(as_str)
    device: str = key(as_str)
    threads: int = key(as_int)
    torch_version: str = key(as_str)
    date: str = key(as_str)
    profile: Mapping[str, Any] = key(lambda v: MappingProxyType(as_dict(v)))
    vector_flop_per_s: float | None = key(as_opt_float, absent=None)  # the first version's single figures
    gemm_curve: tuple[GemmCurvePointRecord, ...] = nested_list(GemmCurvePointRecord, absent=())
    measurements: Mapping[str, MeasurementRecord] = nested_map(MeasurementRecord)
    warnings: tuple[str, ...] = key(as_str_tuple)
    affinity: tuple[int, ...] = key(_ints, absent=())  # the CPUs the process could run on; added 2026-12-01
    verdict: VerdictRecord | None = nested(VerdictRecord, absent=None)  # null on a GPU; added 2026-12-01

    @property
    def tables(self) -> CalibrationTables:
        """The machine model's tables alone."""
        return CalibrationTables(**{f.name: getattr(self, f.name) for f in fields(CalibrationTables)})

    def to_dict(self) -> dict[str, Any]:
        """The document, its header (schema, device, threads, torch_version, date, profile) first."""
        d = super().to_dict()
        return {**{k: d[k] for k in _HEADER}, **{k: v for k, v in d.items() if k not in _HEADER}}


def read_calibration(doc: Any, origin: str = "the calibration document") -> CalibrationDoc:
    """Read a ``dfx.calibration/1`` document (``Calibration.to_dict()`` or a loaded ``dfx calibrate --json`` file).

    Raises
    ------
    SchemaError
        If ``doc`` is not a calibration document, or a key is missing or holds the wrong kind of value.
    """
    if isinstance(doc, Mapping) and doc.get("schema") == CALIBRATION_SCHEMA:
        missing = [k for k in _HEADER if k not in doc]
        if missing:  # a header key a later dfx began to record: the document is older than this dfx
            raise SchemaError(
                CALIBRATION_SCHEMA,
                ", ".join(missing),
                f"{'is' if len(missing) == 1 else 'are'} missing from {origin}",
                fix="it was written by an older dfx, which did not record "
                + ("it" if len(missing) == 1 else "them")
                + " (or it was edited); calibrate this machine again with this dfx (`dfx calibrate --json > calibration.json`, or "
                "`dfx calibrate --out host.yaml --json-out calibration.json`) and pass the new calibration.json",
            )
    return read_tagged(
        CalibrationDoc,
        doc,
        CALIBRATION_SCHEMA,
        origin,
        fix=f"pass a document written by `dfx calibrate --json > FILE` (schema {CALIBRATION_SCHEMA})",
    )


def read_calibration_tables(tables: Mapping[str, Any], origin: str = "profile.calibrated") -> CalibrationTables:
    """The tables of a profile's ``calibrated`` section (``HardwareProfile.calibrated.model_dump()``).

    Examples
    --------
    >>> t = read_calibration_tables({"gemm_table": [{"rows": 1, "k": 2, "n": 3, "flop_per_s": 1e9}]})
    >>> t.gemm_table[0].n, t.missing()[:2]
    (3, ('overhead_curve', 'overhead_by_kind'))
    """
    return CalibrationTables.from_dict(tables, CALIBRATION_SCHEMA, origin)
