"""Predicted beside measured: per-node ratios and the error figures of ``dfx validate``.

Pure arithmetic on two ``name -> seconds`` mappings, so it is tested with hand-computed values.

Definitions (``docs/validation.md``)::

    ratio      = predicted_s / measured_s                     (> 1: dfx too slow, < 1: too fast)
    abs_error  = |predicted_s - measured_s| / measured_s
    median_abs_error, p90_abs_error   over the nodes that do work (predicted_s > 0, not a view)
    end_to_end.error = (predicted_s - measured_s) / measured_s   (signed)

A node dfx gives no work (views, ``getitem``: 0 FLOPs and 0 bytes) is predicted 0 s; it is listed
with ``counted: false`` and left out of the per-node figures, but its measured time stays in the
measured end-to-end time, so that figure shows what ignoring it costs. The calibrated eager
prediction charges a view its dispatch (``dfx.measure.cache_model``); a view is still not
counted (category ``view``): the per-node figures stay those of the nodes that do work, and the
views' time shows in the end-to-end figure.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.ids import VALIDATION_SCHEMA
from dfx.schema.validation import (
    ValCategoryRecord,
    ValEndToEndRecord,
    ValidationDoc,
    ValKernelRecord,
    ValNodeRecord,
    ValRooflineRecord,
    ValUncountedRecord,
)
from dfx.stats import percentile as _percentile

__all__ = ["CategoryError", "EndToEnd", "NodeComparison", "Validation", "compare", "percentile"]

SCHEMA = VALIDATION_SCHEMA
_GOOD_LOW, _GOOD_HIGH = 0.8, 1.25  # a category whose median ratio is inside this band is "right"
_P90 = 90.0

# Why a category misses, by direction: the mechanisms the roofline leaves out (see docs/validation.md).
_WHY_TOO_FAST = {
    "matmul": "small GEMMs (few rows, thin K/N) run well below the large-GEMM peak, and convolutions pay im2col/layout work",
    "elementwise": "transcendentals and strided/broadcast access run below the GEMM peak dfx charges every FLOP at",
    "normalization": "reductions and exp run below the GEMM peak, and the kernel makes several passes over its input",
    "memory": "copies of strided or non-contiguous tensors run below streaming bandwidth",
}
_WHY_TOO_SLOW = {
    "matmul": "the working set sits in cache, faster than the bandwidth charged",
    "elementwise": "the working set sits in cache, faster than the bandwidth charged",
    "normalization": "the working set sits in cache, faster than the bandwidth charged",
    "memory": "the working set sits in cache, faster than the bandwidth charged",
}
# With a calibration (docs/validation.md, "the calibrated machine model"), those mechanisms are
# measured; what is left when a category still misses:
_WHY_CALIBRATED = {
    "too fast": (
        "these nodes ran slower in the graph than their calibrated rates and overheads: fixed costs after "
        "other work beyond the overhead curve, data evicted by the nodes around them, or a machine slower "
        "than at calibration (run.drift, run.overhead_drift)"
    ),
    "too slow": (
        "these nodes ran faster in the graph than their calibrated rates and overheads, or the machine ran "
        "faster than at calibration (run.drift, run.overhead_drift)"
    ),
}
_OVERHEAD_NOTE = (
    "overhead-dominated: per-op cost varies by op (argument parsing, allocation, threading) around the tiny-op figure"
)


def percentile(values: list[float], q: float) -> float:
    """:func:`dfx.stats.percentile`, or NaN when there are no values (no node was counted).

    Examples
    --------
    >>> percentile([1.0, 2.0, 3.0, 4.0, 5.0], 90)
    4.6
    """
    return _percentile(values, q) if values else float("nan")


@dataclass(frozen=True)
class NodeComparison:
    """One node: predicted and measured seconds."""

    name: str
    category: str
    predicted_s: float
    measured_s: float
    roofline_s: float  # the plain eager roofline's time (equal to predicted_s with prediction "roofline")
    overhead_s: float = 0.0  # the per-op overhead inside predicted_s

    @property
    def counted(self) -> bool:
        """Whether the node enters the per-node error figures: dfx predicts work for it."""
        return self.predicted_s > 0 and self.measured_s > 0 and self.category != "view"

    @property
    def ratio(self) -> float | None:
        return self.predicted_s / self.measured_s if self.measured_s > 0 else None

    @property
    def abs_error(self) -> float | None:
        return abs(self.predicted_s - self.measured_s) / self.measured_s if self.measured_s > 0 else None

    def to_record(self) -> ValNodeRecord:
        return ValNodeRecord(
            name=self.name,
            category=self.category,
            predicted_s=self.predicted_s,
            measured_s=self.measured_s,
            ratio=self.ratio,
            abs_error=self.abs_error,
            roofline_s=self.roofline_s,
            counted=self.counted,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


@dataclass(frozen=True)
class EndToEnd:
    predicted_s: float
    measured_s: float

    @property
    def error(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s

    def to_record(self) -> ValEndToEndRecord:
        return ValEndToEndRecord(predicted_s=self.predicted_s, measured_s=self.measured_s, error=self.error)

    def to_dict(self) -> dict[str, float]:
        return self.to_record().to_dict()


@dataclass(frozen=True)
class CategoryError:
    """How one category of node fares: its median ratio, and why it misses when it does."""

    category: str
    nodes: int
    median_ratio: float
    predicted_s: float
    measured_s: float
    why: str  # "" when the median ratio is inside 0.8..1.25

    def to_record(self) -> ValCategoryRecord:
        return ValCategoryRecord(
            category=self.category,
            nodes=self.nodes,
            median_ratio=self.median_ratio,
            predicted_s=self.predicted_s,
            measured_s=self.measured_s,
            why=self.why,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


@dataclass(frozen=True)
class Validation:
    """Predicted versus measured for one model on one profile (``dfx validate``)."""

    hardware: str
    nodes: tuple[NodeComparison, ...]
    end_to_end: EndToEnd
    prediction: str = "roofline"  # which model predicted_s comes from: "roofline" or "cache-aware"
    model: Mapping[str, Any] = field(default_factory=dict)
    run: Mapping[str, Any] = field(default_factory=dict)  # how it was measured: device, threads, repeat...
    units: tuple[Any, ...] = ()  # compiled runs: the dfx.measure.kernel_match.KernelUnit of each compared name

    @property
    def execution(self) -> str:
        """``"compiled"`` (units of kernels, ``dfx validate --compiled``) or ``"eager"`` (nodes)."""
        return "compiled" if self.units else "eager"

    def _errors(self, attr: str = "predicted_s") -> list[float]:
        return [abs(getattr(n, attr) - n.measured_s) / n.measured_s for n in self.nodes if n.counted]

    @property
    def median_abs_error(self) -> float:
        errors = self._errors()
        return statistics.median(errors) if errors else float("nan")

    @property
    def p90_abs_error(self) -> float:
        return percentile(self._errors(), _P90)

    def roofline_figures(self) -> dict[str, float]:
        """The same figures for the plain eager roofline (what ``dfx analyze`` predicts)."""
        errors = self._errors("roofline_s")
        total = sum(n.roofline_s for n in self.nodes)
        return {
            "median_abs_error": statistics.median(errors) if errors else float("nan"),
            "p90_abs_error": percentile(errors, _P90),
            "end_to_end_predicted_s": total,
            "end_to_end_error": (total - self.end_to_end.measured_s) / self.end_to_end.measured_s,
        }

    def categories(self) -> tuple[CategoryError, ...]:
        out = []
        for cat in sorted({n.category for n in self.nodes if n.counted}):
            members = [n for n in self.nodes if n.counted and n.category == cat]
            med = statistics.median(n.ratio for n in members)
            why = ""
            calibrated = bool(self.run.get("calibration"))
            if med < _GOOD_LOW:
                why = "dfx too fast: " + (
                    _WHY_CALIBRATED["too fast"]
                    if calibrated
                    else _WHY_TOO_FAST.get(cat, "work the cost model does not count")
                )
            elif med > _GOOD_HIGH:
                why = "dfx too slow: " + (
                    _WHY_CALIBRATED["too slow"]
                    if calibrated
                    else _WHY_TOO_SLOW.get(cat, "the bandwidth charged is lower than the real one")
                )
            if why and sum(n.overhead_s for n in members) > 0.5 * sum(n.predicted_s for n in members):
                why += "; " + _OVERHEAD_NOTE
            out.append(
                CategoryError(
                    cat, len(members), med, sum(n.predicted_s for n in members), sum(n.measured_s for n in members), why
                )
            )
        return tuple(out)

    def to_record(self) -> ValidationDoc:
        """The ``dfx.validation/1`` document as its record (``dfx.schema.validation``)."""
        uncounted = [n for n in self.nodes if not n.counted]
        return ValidationDoc(
            schema=SCHEMA,
            hardware=self.hardware,
            prediction=self.prediction,
            execution=self.execution,
            model=MappingProxyType(dict(self.model)),
            run=MappingProxyType(dict(self.run)),
            nodes=tuple(n.to_record() for n in self.nodes),
            median_abs_error=self.median_abs_error,
            p90_abs_error=self.p90_abs_error,
            end_to_end=self.end_to_end.to_record(),
            roofline=ValRooflineRecord(**self.roofline_figures()),
            categories=tuple(c.to_record() for c in self.categories()),
            uncounted=ValUncountedRecord(nodes=len(uncounted), measured_s=sum(n.measured_s for n in uncounted)),
            kernels=tuple(
                ValKernelRecord(
                    name=u.name,
                    dfx_kernels=tuple(u.dfx_kernels),
                    compiler_kernels=tuple(u.compiler_calls),
                    nodes=tuple(u.nodes),
                    category=u.category,
                )
                for u in self.units
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``dfx.validation/1`` document (``docs/validation.md``)."""
        return self.to_record().to_dict()


def compare(
    predicted: Mapping[str, float],
    measured: Mapping[str, float],
    measured_end_to_end_s: float,
    *,
    categories: Mapping[str, str] | None = None,
    roofline: Mapping[str, float] | None = None,
    overheads: Mapping[str, float] | None = None,
    hardware: str = "",
    prediction: str = "roofline",
    model: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
    units: tuple[Any, ...] = (),
) -> Validation:
    """Pair each measured node with its prediction (by name) and compute the error figures.

    Parameters
    ----------
    predicted, measured : mapping of node name -> seconds
        Every measured node must have a prediction; predicted nodes that never ran (placeholders,
        output) are ignored.
    measured_end_to_end_s : float
        The whole graph's measured time, run without per-node instrumentation.
    categories, roofline, overheads : mapping, optional
        Per node: its cost category, the plain roofline time, and the overhead inside its prediction.
    units : tuple of KernelUnit, optional
        A compiled run: the names are kernel units (:func:`dfx.measure.kernel_match.match_kernels`),
        exported under ``kernels``.

    Examples
    --------
    >>> v = compare({"a": 2.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, 2.5)
    >>> v.median_abs_error, v.end_to_end.error
    (0.5, 0.2)
    """
    missing = [name for name in measured if name not in predicted]
    if missing:
        raise KeyError(f"no prediction for measured node(s) {missing[:3]}")
    cats, roof, over = categories or {}, roofline or predicted, overheads or {}
    nodes = tuple(
        NodeComparison(
            name, cats.get(name, "none"), predicted[name], t, roof.get(name, predicted[name]), over.get(name, 0.0)
        )
        for name, t in measured.items()
    )
    total = sum(predicted[name] for name in measured)
    return Validation(
        hardware,
        nodes,
        EndToEnd(total, measured_end_to_end_s),
        prediction,
        dict(model or {}),
        dict(run or {}),
        tuple(units),
    )
