"""A typed, read-only view of a validation document (``dfx.validation/1``) for the report.

Like :mod:`dfx.viz.simdoc` for a simulation, this is the only module of ``dfx.viz`` that reads the
validation document's keys (the scatter itself is drawn by :mod:`dfx.measure.plot` from the same
document). The document is described in ``docs/validation.md``; reading it imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from dfx.errors import DfxError
from dfx.schema.ids import VALIDATION_SCHEMA
from dfx.viz.document import Doc

__all__ = ["VAL_SCHEMA", "NodeMismatch", "ValCategory", "ValDoc", "ValNode", "node_mismatch", "read_validation"]

VAL_SCHEMA = VALIDATION_SCHEMA
_UNTIMED_OPS = ("placeholder", "get_attr", "output")  # validate times only the nodes that run


@dataclass(frozen=True)
class ValNode:
    """One timed node (``nodes[]``): seconds predicted and measured (median)."""

    name: str
    category: str
    predicted_s: float
    measured_s: float
    ratio: float | None  # predicted / measured; None when nothing was measured
    counted: bool  # dfx predicts work for it: it is a point of the scatter


@dataclass(frozen=True)
class ValCategory:
    """One category of counted nodes (``categories[]``): its median ratio, and why it misses."""

    category: str
    nodes: int
    median_ratio: float
    why: str  # "" when the median ratio is inside 0.8..1.25


@dataclass(frozen=True)
class ValDoc:
    """The validation document, typed; ``raw`` is the document itself, for the scatter."""

    hardware: str
    prediction: str  # "roofline" or "cache-aware"
    model: Mapping[str, Any]
    run: Mapping[str, Any]
    nodes: tuple[ValNode, ...]
    median_abs_error: float  # NaN when no node is counted
    p90_abs_error: float
    end_to_end_predicted_s: float
    end_to_end_measured_s: float
    end_to_end_error: float  # signed: (predicted - measured) / measured
    categories: tuple[ValCategory, ...]
    uncounted_nodes: int
    uncounted_measured_s: float
    roofline: Mapping[str, Any]  # the plain roofline's figures; empty if absent
    raw: Mapping[str, Any]

    @property
    def counted(self) -> tuple[ValNode, ...]:
        """The nodes that are points of the scatter, in document order."""
        return tuple(n for n in self.nodes if n.counted)


@dataclass(frozen=True)
class NodeMismatch:
    """Node names on one side only: ``stray`` in the validation, ``untimed`` in the analysis."""

    stray: tuple[str, ...]  # validated nodes the analysis lacks
    untimed: tuple[str, ...]  # analysis nodes that run but were not timed (e.g. a copy the real run drops)

    @property
    def count(self) -> int:
        return len(self.stray) + len(self.untimed)


def _number(value: Any) -> float:
    """A JSON number, or NaN for ``null`` (``json`` writes a NaN figure as ``NaN``; a hand-made one may be null)."""
    return math.nan if value is None else float(value)


def _node(d: Mapping[str, Any]) -> ValNode:
    ratio = d.get("ratio")
    return ValNode(str(d["name"]), str(d.get("category", "none")), float(d["predicted_s"]), float(d["measured_s"]),
                   None if ratio is None else float(ratio), bool(d["counted"]))  # fmt: skip


def _category(d: Mapping[str, Any]) -> ValCategory:
    return ValCategory(str(d["category"]), int(d["nodes"]), _number(d["median_ratio"]), str(d.get("why") or ""))


def read_validation(doc: Mapping[str, Any], source: str = "the validation document") -> ValDoc:
    """Read a validation document (``Validation.to_dict()`` or a loaded ``validation.json``).

    ``source`` names the document in errors (``dfx report`` passes the file's path).

    Raises
    ------
    DfxError
        If the document is not ``dfx.validation/1`` or lacks a field the report needs.

    Examples
    --------
    >>> v = read_validation({"schema": "dfx.validation/1", "hardware": "host-cpu", "prediction": "roofline",
    ...     "nodes": [{"name": "relu", "category": "elementwise", "predicted_s": 1e-6, "measured_s": 2e-6,
    ...                "ratio": 0.5, "counted": True}], "median_abs_error": 0.5, "p90_abs_error": 0.5,
    ...     "end_to_end": {"predicted_s": 1e-6, "measured_s": 2e-6, "error": -0.5}, "categories": []})
    >>> v.counted[0].name, v.median_abs_error, v.end_to_end_error
    ('relu', 0.5, -0.5)
    """
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema != VAL_SCHEMA:
        raise DfxError(f"{source} is not a dfx validation document: schema is {schema!r}, expected {VAL_SCHEMA!r}")
    try:
        e2e, uncounted = doc["end_to_end"], doc.get("uncounted") or {}
        return ValDoc(
            hardware=str(doc["hardware"]), prediction=str(doc["prediction"]), model=doc.get("model") or {},
            run=doc.get("run") or {}, nodes=tuple(_node(n) for n in doc["nodes"]),
            median_abs_error=_number(doc["median_abs_error"]), p90_abs_error=_number(doc["p90_abs_error"]),
            end_to_end_predicted_s=float(e2e["predicted_s"]), end_to_end_measured_s=float(e2e["measured_s"]),
            end_to_end_error=_number(e2e["error"]), categories=tuple(_category(c) for c in doc.get("categories", ())),
            uncounted_nodes=int(uncounted.get("nodes", 0)), uncounted_measured_s=float(uncounted.get("measured_s", 0.0)),
            roofline=doc.get("roofline") or {}, raw=doc,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DfxError(f"{source}: malformed dfx.validation/1 document: missing or bad field {exc}") from None


_SAME_MODEL_FIELDS = ("name", "batch", "seq", "dtype")  # what must agree for a validation to belong in a report


def check_same_model(val: ValDoc, doc: Doc, source: str = "the validation document") -> None:
    """Refuse a validation of another model, size or dtype than the analysis (``DfxError``, one line).

    Compares ``model.name``, ``batch``, ``seq`` and ``dtype`` wherever both documents give them
    (a file model has no ``seq``); a validation without ``model`` is refused, since nothing says
    what it measured.

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis
    >>> from dfx.viz.document import read_document
    >>> d = read_document(example_analysis("gpt2-block", model={"batch": 1, "seq": 1024, "dtype": "float32"}))
    >>> v = read_validation({"schema": "dfx.validation/1", "hardware": "h", "prediction": "roofline", "nodes": [],
    ...     "model": {"name": "gpt2-block", "batch": 1, "seq": 64, "dtype": "float32"}, "median_abs_error": 0.0,
    ...     "p90_abs_error": 0.0, "end_to_end": {"predicted_s": 1.0, "measured_s": 1.0, "error": 0.0}})
    >>> check_same_model(v, d)
    Traceback (most recent call last):
    ...
    dfx.errors.DfxError: the validation document measured gpt2-block at seq 64, the analysis is at seq 1024; run `dfx analyze gpt2-block --seq 64 --batch 1 --dtype float32` (or validate at the analysis' size)
    """
    if not val.model:
        raise DfxError(f"{source} does not say which model it measured (no model field); write it again with `dfx validate --out`")
    ours = doc.model
    differ = [f for f in _SAME_MODEL_FIELDS if f in val.model and f in ours and val.model[f] != ours[f]]
    if not differ:
        return
    name = val.model.get("name", "MODEL")
    size = " ".join(f"--{f} {val.model[f]}" for f in ("seq", "batch", "dtype") if f in val.model)
    fix = f"run `dfx analyze {name} {size}` (or validate at the analysis' size)"
    if "name" in differ:
        raise DfxError(f"{source} measured {name}, the analysis is of {ours['name']}; {fix}")
    theirs = ", ".join(f"{f} {val.model[f]}" for f in differ)
    mine = ", ".join(f"{f} {ours[f]}" for f in differ)
    raise DfxError(f"{source} measured {name} at {theirs}, the analysis is at {mine}; {fix}")


def node_mismatch(val: ValDoc, doc: Doc) -> NodeMismatch:
    """Compare node names: validated nodes the analysis lacks, and analysis nodes that run but were not timed.

    Placeholders, ``get_attr`` and the output are never timed, so they are not a mismatch. ``dfx
    validate`` captures the model that really runs, which can lack a node the meta capture has
    (the GPT-2 block's ``contiguous``, see ``docs/validation.md``).

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis
    >>> from dfx.viz.document import read_document
    >>> d = read_document(example_analysis(nodes=[{"name": "x", "op": "placeholder"},
    ...     {"name": "relu", "op": "call_function"}, {"name": "contiguous", "op": "call_function"}]))
    >>> v = read_validation({"schema": "dfx.validation/1", "hardware": "h", "prediction": "roofline",
    ...     "nodes": [{"name": "relu", "predicted_s": 1.0, "measured_s": 1.0, "counted": True}],
    ...     "median_abs_error": 0.0, "p90_abs_error": 0.0, "end_to_end": {"predicted_s": 1.0, "measured_s": 1.0, "error": 0.0}})
    >>> node_mismatch(v, d)
    NodeMismatch(stray=(), untimed=('contiguous',))
    """
    timed = {n.name for n in val.nodes}
    known = {n.name for n in doc.nodes}
    stray = tuple(n.name for n in val.nodes if n.name not in known)
    untimed = tuple(n.name for n in doc.nodes if n.op not in _UNTIMED_OPS and n.name not in timed)
    return NodeMismatch(stray, untimed)
