"""The validation document (``dfx.validation/1``, ``dfx validate --json``) as frozen records.

:meth:`dfx.measure.comparison.Validation.to_record` writes it; ``dfx validate``'s summary and
scatter (:mod:`dfx.measure.console`, :mod:`dfx.viz.scatter`) and the report's "Predicted vs
measured" section (:mod:`dfx.viz.valdoc`) read it through :func:`read_validation`. Field by field:
``docs/validation.md`` ("Export"). ``model`` and ``run`` stay read-only objects: their keys depend on
the model given and on the calibration used; read them with :meth:`ValidationDoc.model_field` and
:meth:`ValidationDoc.run_field`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.fields import as_dict, as_float, as_int, as_opt_float, as_str, as_str_tuple
from dfx.schema.ids import VALIDATION_SCHEMA
from dfx.schema.record import Record, key, nested, nested_list, read_tagged

__all__ = [
    "ValCategoryRecord",
    "ValEndToEndRecord",
    "ValKernelRecord",
    "ValNodeRecord",
    "ValRooflineRecord",
    "ValUncountedRecord",
    "ValidationDoc",
    "example_validation",
    "read_validation",
]

_record = dataclass(frozen=True, kw_only=True)


def as_figure(v: Any) -> float:
    """An error figure: a number, NaN when no node is counted (``json`` writes ``NaN``; ``null`` reads as NaN)."""
    return math.nan if v is None else as_float(v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _frozen(v: Any) -> Mapping[str, Any]:
    return MappingProxyType(as_dict(v))


@_record
class ValNodeRecord(Record):
    """One timed node (``nodes[]``): seconds predicted and measured (median)."""

    name: str = key(as_str)  # the fx node name, as in dfx.analysis/1
    category: str = key(as_str)
    predicted_s: float = key(as_float)
    measured_s: float = key(as_float)
    ratio: float | None = key(as_opt_float)  # predicted / measured; null when nothing was measured
    abs_error: float | None = key(as_opt_float)
    roofline_s: float = key(as_float)  # the plain eager roofline's time
    counted: bool = key(_bool)  # dfx predicts work for it: a point of the scatter


@_record
class ValEndToEndRecord(Record):
    predicted_s: float = key(as_float)  # the nodes' predicted_s summed
    measured_s: float = key(as_float)  # the median whole-graph run
    error: float = key(as_figure)  # signed: (predicted - measured) / measured


@_record
class ValRooflineRecord(Record):
    """``roofline``: the same figures for the plain roofline (what ``dfx analyze`` predicts)."""

    median_abs_error: float = key(as_figure)
    p90_abs_error: float = key(as_figure)
    end_to_end_predicted_s: float = key(as_float)
    end_to_end_error: float = key(as_figure)


@_record
class ValCategoryRecord(Record):
    """One category of counted nodes (``categories[]``): its median ratio, and why it misses."""

    category: str = key(as_str)
    nodes: int = key(as_int)
    median_ratio: float = key(as_figure)
    predicted_s: float = key(as_float)
    measured_s: float = key(as_float)
    why: str = key(as_str)  # "" when the median ratio is inside 0.8..1.25


@_record
class ValUncountedRecord(Record):
    """``uncounted``: the nodes dfx gives no work, measured together."""

    nodes: int = key(as_int)
    measured_s: float = key(as_float)


@_record
class ValKernelRecord(Record):
    """One compared unit of a compiled run (``kernels[]``, ``dfx validate --compiled``): dfx's kernels and
    Inductor's generated calls that share its nodes (:mod:`dfx.measure.kernel_match`)."""

    name: str = key(as_str)
    dfx_kernels: tuple[str, ...] = key(as_str_tuple)
    compiler_kernels: tuple[str, ...] = key(as_str_tuple)
    nodes: tuple[str, ...] = key(as_str_tuple)
    category: str = key(as_str)


@_record
class ValidationDoc(Record):
    """The whole ``dfx.validation/1`` document."""

    schema: str = key(as_str)
    hardware: str = key(as_str)  # the profile id predicted with
    prediction: str = key(as_str)  # "roofline" or "cache-aware"
    execution: str = key(
        as_str, absent="eager"
    )  # "compiled" (--compiled: units of kernels) or "eager"; added 2026-12-01
    model: Mapping[str, Any] = key(_frozen)  # name, batch, seq, dtype (a file model has no seq)
    run: Mapping[str, Any] = key(_frozen)  # how it was measured (docs/validation.md)
    nodes: tuple[ValNodeRecord, ...] = nested_list(ValNodeRecord)
    median_abs_error: float = key(as_figure)  # over counted nodes; NaN when none is
    p90_abs_error: float = key(as_figure)
    end_to_end: ValEndToEndRecord = nested(ValEndToEndRecord)
    roofline: ValRooflineRecord = nested(ValRooflineRecord)
    categories: tuple[ValCategoryRecord, ...] = nested_list(ValCategoryRecord)
    uncounted: ValUncountedRecord = nested(ValUncountedRecord)
    kernels: tuple[ValKernelRecord, ...] = nested_list(ValKernelRecord, absent=())  # compiled runs; added 2026-12-01

    @property
    def counted(self) -> tuple[ValNodeRecord, ...]:
        """The nodes that are points of the scatter, in document order."""
        return tuple(n for n in self.nodes if n.counted)

    def model_field(self, name: str) -> Any:
        """A ``model`` field (``name``, ``batch``, ``seq``, ``dtype``): ``None`` when absent or null."""
        return self.model[name] if name in self.model else None

    def run_field(self, name: str) -> Any:
        """A ``run`` field (``device``, ``threads``, ``repeat``, ``drift``...): ``None`` when absent or null."""
        return self.run[name] if name in self.run else None


def read_validation(doc: Any, origin: str = "the validation document") -> ValidationDoc:
    """Read a ``dfx.validation/1`` document (``Validation.to_dict()`` or a loaded ``validation.json``).

    ``origin`` names the document in errors (``dfx report`` passes the file's path).

    Raises
    ------
    SchemaError
        If ``doc`` is not a validation document, or a key is missing or holds the wrong kind of value.

    Examples
    --------
    >>> v = read_validation(example_validation({"relu": ("elementwise", 1e-6, 2e-6)}))
    >>> v.counted[0].name, v.median_abs_error, v.end_to_end.error
    ('relu', 0.5, -0.5)
    """
    return read_tagged(
        ValidationDoc,
        doc,
        VALIDATION_SCHEMA,
        origin,
        fix=f"pass a document written by `dfx validate --json` (schema {VALIDATION_SCHEMA})",
    )


def example_validation(times: Mapping[str, tuple[str, float, float]], **fields: Any) -> dict[str, Any]:
    """A small valid ``dfx.validation/1`` document from ``name -> (category, predicted_s, measured_s)``.

    ``median_abs_error`` and ``end_to_end`` are computed as :mod:`dfx.measure.comparison` defines
    them; ``p90_abs_error`` is a stand-in (the largest error), ``categories`` is empty and the
    roofline's figures are the prediction's own. ``fields`` replace top-level keys.
    """
    nodes = [
        {
            "name": n,
            "category": c,
            "predicted_s": p,
            "measured_s": m,
            "ratio": p / m if m > 0 else None,
            "abs_error": abs(p - m) / m if m > 0 else None,
            "roofline_s": p,
            "counted": p > 0 and m > 0,
        }
        for n, (c, p, m) in times.items()
    ]
    errors = sorted(n["abs_error"] for n in nodes if n["counted"])
    median = (
        errors[len(errors) // 2]
        if len(errors) % 2
        else ((errors[len(errors) // 2 - 1] + errors[len(errors) // 2]) / 2 if errors else math.nan)
    )
    predicted, measured = sum(n["predicted_s"] for n in nodes), sum(n["measured_s"] for n in nodes)
    error = (predicted - measured) / measured if measured > 0 else math.nan
    doc = {
        "schema": VALIDATION_SCHEMA,
        "hardware": "host-cpu",
        "prediction": "roofline",
        "execution": "eager",
        "model": {"name": "m"},
        "run": {},
        "nodes": nodes,
        "median_abs_error": median,
        "p90_abs_error": errors[-1] if errors else math.nan,
        "end_to_end": {"predicted_s": predicted, "measured_s": measured, "error": error},
        "roofline": {
            "median_abs_error": median,
            "p90_abs_error": errors[-1] if errors else math.nan,
            "end_to_end_predicted_s": predicted,
            "end_to_end_error": error,
        },
        "categories": [],
        "uncounted": {
            "nodes": sum(not n["counted"] for n in nodes),
            "measured_s": sum(n["measured_s"] for n in nodes if not n["counted"]),
        },
        "kernels": [],
    }
    return {**doc, **fields}
