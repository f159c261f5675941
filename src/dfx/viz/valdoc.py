"""The validation document (``dfx.validation/1``) as the report reads it: ``dfx.schema``'s records.

Like :mod:`dfx.viz.simdoc` for a simulation, the report never reads a document key itself:
:func:`read_validation` is :func:`dfx.schema.validation.read_validation`, and the names below are
its records under the names ``dfx.viz`` has always used (the scatter is drawn by
:mod:`dfx.viz.scatter` from the same record). The document is described in
``docs/validation.md``; reading it imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dfx.errors import DfxError
from dfx.schema.ids import VALIDATION_SCHEMA
from dfx.schema.validation import ValCategoryRecord, ValidationDoc, ValNodeRecord
from dfx.schema.validation import read_validation as _read
from dfx.viz.document import Doc

__all__ = ["VAL_SCHEMA", "NodeMismatch", "ValCategory", "ValDoc", "ValNode", "node_mismatch", "read_validation"]

VAL_SCHEMA = VALIDATION_SCHEMA
_UNTIMED_OPS = ("placeholder", "get_attr", "output")  # validate times only the nodes that run

ValDoc = ValidationDoc
ValNode = ValNodeRecord
ValCategory = ValCategoryRecord


@dataclass(frozen=True)
class NodeMismatch:
    """Node names on one side only: ``stray`` in the validation, ``untimed`` in the analysis."""

    stray: tuple[str, ...]  # validated nodes the analysis lacks
    untimed: tuple[str, ...]  # analysis nodes that run but were not timed (e.g. a copy the real run drops)

    @property
    def count(self) -> int:
        return len(self.stray) + len(self.untimed)


def read_validation(doc: Any, source: str = "the validation document") -> ValDoc:
    """Read a validation document (``Validation.to_dict()`` or a loaded ``validation.json``).

    ``source`` names the document in errors (``dfx report`` passes the file's path).

    Raises
    ------
    SchemaError
        If the document is not ``dfx.validation/1`` or lacks a key (the message names it).

    Examples
    --------
    >>> from dfx.schema.validation import example_validation
    >>> v = read_validation(example_validation({"relu": ("elementwise", 1e-6, 2e-6)}))
    >>> v.counted[0].name, v.median_abs_error, v.end_to_end.error
    ('relu', 0.5, -0.5)
    """
    return _read(doc, source)


_SAME_MODEL_FIELDS = ("name", "batch", "seq", "dtype")  # what must agree for a validation to belong in a report


def check_same_model(val: ValDoc, doc: Doc, source: str = "the validation document") -> None:
    """Refuse a validation of another model, size or dtype than the analysis (``DfxError``, one line).

    Compares ``model.name``, ``batch``, ``seq`` and ``dtype`` wherever both documents give them
    (a file model has no ``seq``); a validation whose ``model`` is empty is refused, since nothing
    says what it measured (one without ``model`` is a :class:`~dfx.schema.SchemaError` on reading).

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis
    >>> from dfx.viz.document import read_document
    >>> d = read_document(example_analysis("gpt2-block", model={"batch": 1, "seq": 1024, "dtype": "float32"}))
    >>> from dfx.schema.validation import example_validation
    >>> v = read_validation(example_validation({}, model={"name": "gpt2-block", "batch": 1, "seq": 64, "dtype": "float32"}))
    >>> check_same_model(v, d)
    Traceback (most recent call last):
    ...
    dfx.errors.DfxError: the validation document measured gpt2-block at seq 64, the analysis is at seq 1024; run `dfx analyze gpt2-block --seq 64 --batch 1 --dtype float32` (or validate at the analysis' size)
    """
    if not val.model:
        raise DfxError(
            f"{source} does not say which model it measured (its model field is empty); write it again with `dfx validate --out`"
        )
    ours = doc.model
    differ = [f for f in _SAME_MODEL_FIELDS if f in val.model and f in ours and val.model[f] != ours[f]]
    if not differ:
        return
    name = val.model_field("name") or "MODEL"
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
    >>> from dfx.schema.validation import example_validation
    >>> v = read_validation(example_validation({"relu": ("elementwise", 1.0, 1.0)}))
    >>> node_mismatch(v, d)
    NodeMismatch(stray=(), untimed=('contiguous',))
    """
    timed = {n.name for n in val.nodes}
    known = {n.name for n in doc.nodes}
    stray = tuple(n.name for n in val.nodes if n.name not in known)
    untimed = tuple(n.name for n in doc.nodes if n.op not in _UNTIMED_OPS and n.name not in timed)
    return NodeMismatch(stray, untimed)
