"""The report's "Predicted vs measured" section, from a ``dfx.validation/1`` document.

The scatter is :func:`dfx.viz.scatter.scatter_svg` (the drawing ``dfx validate --out`` writes as
``scatter.png``), inlined as SVG with a tooltip per point; beside it the headline figures and the
per-category table. Reads only the two documents (:class:`~dfx.viz.document.Doc`,
:class:`~dfx.viz.valdoc.ValDoc`); importing :mod:`dfx.viz.scatter` imports no torch.
"""

from __future__ import annotations

import math

from dfx.viz.document import Doc
from dfx.viz.facts import format_seconds
from dfx.viz.valdoc import NodeMismatch, ValDoc, node_mismatch

__all__ = ["format_percent", "mismatch_note", "validation_context"]

_NAMES_SHOWN = 5  # a mismatch note names this many nodes per side, then "..."


def format_percent(x: float, signed: bool = False) -> str:
    """``0.3`` -> ``"30.0%"``; ``signed`` gives ``"+30.0%"``; NaN (no counted node) -> ``"-"``.

    Examples
    --------
    >>> format_percent(0.3), format_percent(-0.125, signed=True), format_percent(float("nan"))
    ('30.0%', '-12.5%', '-')
    """
    if math.isnan(x):
        return "-"
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names[:_NAMES_SHOWN]) + (" ..." if len(names) > _NAMES_SHOWN else "")


def mismatch_note(m: NodeMismatch) -> str | None:
    """One line saying how many node names did not match, naming a few; ``None`` when all match.

    Examples
    --------
    >>> from dfx.viz.valdoc import NodeMismatch
    >>> mismatch_note(NodeMismatch(stray=(), untimed=("contiguous",)))  # doctest: +NORMALIZE_WHITESPACE
    "1 node did not match the analysis' node names: 1 node of the analysis was not timed (contiguous).
    dfx validate captures the model that really runs, which can lack a node the meta capture has."
    >>> mismatch_note(NodeMismatch((), ())) is None
    True
    """
    if not m.count:
        return None
    parts = []
    if m.stray:
        parts.append(
            f"{len(m.stray)} timed node{'s are' if len(m.stray) > 1 else ' is'} not in the analysis ({_names(m.stray)})"
        )
    if m.untimed:
        was = "s of the analysis were" if len(m.untimed) > 1 else " of the analysis was"
        parts.append(f"{len(m.untimed)} node{was} not timed ({_names(m.untimed)})")
    return (
        f"{m.count} node{'s' if m.count > 1 else ''} did not match the analysis' node names: "
        + "; ".join(parts)
        + ". dfx validate captures the model that really runs, which can lack a node the meta capture has."
    )


def _heading(val: ValDoc) -> str:
    m, r = val.model_field, val.run_field
    model = (m("name") or "the model") + "".join(f", {k} {m(k)}" for k in ("batch", "seq", "dtype") if m(k) is not None)
    how = []
    if r("device"):
        how.append(f"on {r('device')}" + (f" with {r('threads')} thread(s)" if r("threads") else ""))
    if r("repeat"):
        how.append(f"median of {r('runs') or r('repeat')} runs after {r('warmup') or 0} warm-up")
    measured = f"measured {', '.join(how)}" if how else "measured"
    return f"{model}: {measured}; predicted on {val.hardware} ({val.prediction})."


def _spread_row(val: ValDoc) -> list[tuple[str, str]]:
    """The whole graph's runs from their 10th to 90th percentile (documents since 2026-12-02)."""
    w = val.run_field("whole_runs")
    if not w:
        return []
    return [("end to end: runs p10 to p90", f"{format_seconds(w['p10_s'])} to {format_seconds(w['p90_s'])}")]


def _headline(val: ValDoc) -> list[tuple[str, str]]:
    return [
        ("hardware", val.hardware),
        ("prediction", val.prediction),
        ("counted nodes (points)", f"{len(val.counted)} of {len(val.nodes)} timed"),
        ("median |error| per node", format_percent(val.median_abs_error)),
        ("p90 |error| per node", format_percent(val.p90_abs_error)),
        ("end to end: predicted", format_seconds(val.end_to_end.predicted_s)),
        ("end to end: measured", format_seconds(val.end_to_end.measured_s)),
        *_spread_row(val),
        ("end to end: error", format_percent(val.end_to_end.error, signed=True)),
    ]


def _roofline_line(val: ValDoc) -> str | None:
    """The plain roofline's figures, when the prediction shown is another one."""
    r = val.roofline
    if val.prediction == "roofline":
        return None
    return (
        f"The plain roofline (what dfx analyze predicts) on the same profile: median |error| "
        f"{format_percent(r.median_abs_error)}, p90 {format_percent(r.p90_abs_error)}, "
        f"end to end {format_percent(r.end_to_end_error, signed=True)}."
    )


def _uncounted_line(val: ValDoc) -> str | None:
    if not val.uncounted.nodes:
        return None
    return (
        f"{val.uncounted.nodes} node(s) dfx gives no work (views, getitem) are not points: "
        f"{format_seconds(val.uncounted.measured_s)} measured together, kept in the end-to-end figure."
    )


def validation_context(val: ValDoc, doc: Doc) -> dict[str, object]:
    """Everything the report's "Predicted vs measured" section shows, ready for the template.

    ``svg`` is the scatter as SVG text (namespaces still declared; the report inlines it), one
    ``g.point`` per counted node; ``mismatch`` is a one-line note, or ``None`` when every node
    name matches ``doc``'s; ``drift`` the notes ``dfx validate`` prints when the machine moved
    since its calibration (``run.drift``, ``run.overhead_drift`` over 10%).
    """
    from dfx.report.notes import drift_notes
    from dfx.viz.scatter import scatter_svg

    return {
        "heading": _heading(val),
        "headline": _headline(val),
        "roofline": _roofline_line(val),
        "drift": [
            note.strip().removeprefix("note: ")
            for note in drift_notes(val.run_field("drift"), val.run_field("overhead_drift"))
        ],
        "uncounted": _uncounted_line(val),
        "mismatch": mismatch_note(node_mismatch(val, doc)),
        "svg": scatter_svg(val),
        "points": len(val.counted),
        "category_columns": ["category", "nodes", "median ratio (predicted / measured)", "why it misses"],
        "categories": [
            [c.category, str(c.nodes), "-" if math.isnan(c.median_ratio) else f"{c.median_ratio:.2f}", c.why or "-"]
            for c in val.categories
        ],
    }
