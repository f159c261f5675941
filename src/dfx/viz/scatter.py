"""The predicted-versus-measured scatter of ``dfx validate``: log-log, one point per counted node.

Reads only the ``dfx.validation/1`` document, through its records (:mod:`dfx.schema.validation`);
it lives in ``dfx.viz`` so that the report draws it without importing ``dfx.measure``. Points on the diagonal are exact; the shaded band is
the ±25% per-node goal of ``docs/validation.md``. One drawing, two formats: :func:`scatter_png` is
what ``dfx validate --out`` writes; :func:`scatter_svg` is the same figure as SVG text with a
tooltip on every point, which ``dfx report --validation`` puts inline into ``report.html``.
"""

from __future__ import annotations

import io
import re
from html import escape

from typing import Any, Mapping

from dfx.schema.validation import ValidationDoc, ValNodeRecord, read_validation

__all__ = ["counted_nodes", "point_tooltip", "scatter_png", "scatter_svg"]

_COLOURS = {
    "matmul": "tab:blue",
    "elementwise": "tab:orange",
    "normalization": "tab:green",
    "memory": "tab:red",
    "view": "tab:gray",
    "none": "tab:gray",
}
_BAND = 0.25  # the per-node goal: within 25%
_POINT_GID = "dfx-point-{}"  # one SVG group per point, in counted_nodes order; scatter_svg gives it a <title>
_POINT_GROUP = re.compile(r'<g id="dfx-point-(\d+)">')


def _record(doc: ValidationDoc | Mapping[str, Any]) -> ValidationDoc:
    return doc if isinstance(doc, ValidationDoc) else read_validation(doc)


def counted_nodes(doc: ValidationDoc) -> list[ValNodeRecord]:
    """The ``nodes[]`` records the scatter draws (``counted: true``), in document order.

    Examples
    --------
    >>> from dfx.schema.validation import example_validation, read_validation
    >>> [n.name for n in counted_nodes(read_validation(example_validation({"a": ("matmul", 1.0, 2.0), "v": ("view", 0.0, 1.0)})))]
    ['a']
    """
    return list(doc.counted)


def point_tooltip(node: ValNodeRecord) -> str:
    """A point's tooltip: node, category, predicted and measured time, ratio predicted / measured.

    Examples
    --------
    >>> from dfx.schema.validation import ValNodeRecord
    >>> point_tooltip(ValNodeRecord(name="linear", category="matmul", predicted_s=1e-5, measured_s=2e-5, ratio=0.5,
    ...                             abs_error=0.5, roofline_s=1e-5, counted=True))
    'linear (matmul): predicted 10.0 us, measured 20.0 us, ratio 0.50'
    """
    from dfx.report.console import format_seconds

    shown = f"{node.ratio:.2f}" if node.ratio is not None else "-"
    return (
        f"{node.name} ({node.category}): predicted {format_seconds(node.predicted_s)}, "
        f"measured {format_seconds(node.measured_s)}, ratio {shown}"
    )


def _figure(doc: ValidationDoc, nodes: list[ValNodeRecord]):
    """The matplotlib figure: each node its own artist (SVG group ``dfx-point-I``), legend once per category."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 5), dpi=110)
    ax = fig.subplots()
    counts = {cat: sum(n.category == cat for n in nodes) for cat in {n.category for n in nodes}}
    labelled: set[str] = set()
    for i, n in enumerate(nodes):
        cat = n.category
        label = f"{cat} ({counts[cat]})" if cat not in labelled else "_nolegend_"
        labelled.add(cat)
        ax.scatter(
            [n.predicted_s],
            [n.measured_s],
            label=label,
            color=_COLOURS.get(cat, "black"),
            s=28,
            alpha=0.85,
            gid=_POINT_GID.format(i),
        )
    values = [v for n in nodes for v in (n.predicted_s, n.measured_s)] or [1e-6, 1e-3]
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="black", lw=1, label="measured = predicted")
    # |p - m| <= 25% of m  <=>  p / 1.25 <= m <= p / 0.75
    ax.fill_between(
        [lo, hi],
        [lo / (1 + _BAND), hi / (1 + _BAND)],
        [lo / (1 - _BAND), hi / (1 - _BAND)],
        color="black",
        alpha=0.08,
        label="within 25%",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"predicted time per node (s), {doc.prediction}")
    ax.set_ylabel("measured time per node (s), median")
    name = doc.model_field("name") or "model"
    ax.set_title(
        f"{name} on {doc.hardware}: median |err| {doc.median_abs_error:.0%}, end-to-end {doc.end_to_end.error:+.0%}",
        fontsize=9,
    )
    handles, labels = ax.get_legend_handles_labels()  # categories sorted, then the diagonal and the band
    order = sorted(range(len(labels)), key=lambda k: (labels[k] in ("measured = predicted", "within 25%"), labels[k]))
    ax.legend([handles[k] for k in order], [labels[k] for k in order], fontsize=7, loc="upper left")
    ax.grid(True, which="both", alpha=0.2)
    return fig


def scatter_png(doc: ValidationDoc | Mapping[str, Any]) -> bytes:
    """PNG bytes of predicted (x) against measured (y) seconds for every counted node, coloured by category.

    ``doc`` is a ``dfx.validation/1`` document's record (``Validation.to_record()``), or the
    document itself (read through :func:`dfx.schema.validation.read_validation`).
    """
    doc = _record(doc)
    buf = io.BytesIO()
    _figure(doc, counted_nodes(doc)).savefig(buf, format="png", bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def scatter_svg(doc: ValidationDoc | Mapping[str, Any]) -> str:
    """The :func:`scatter_png` figure as SVG text, with a tooltip on every point.

    Point ``I`` (the ``I``-th of :func:`counted_nodes`) is a group
    ``<g id="dfx-point-I" class="point" data-node="NAME" data-predicted-s=".." data-measured-s="..">``
    whose first child is a ``<title>`` (:func:`point_tooltip`). Text is SVG ``<text>`` (no
    embedded glyphs) and the date is left out, so the same document gives the same SVG.
    """
    doc = _record(doc)
    import matplotlib

    nodes = counted_nodes(doc)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dfx-scatter"}):
        _figure(doc, nodes).savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})

    def titled(m: re.Match) -> str:
        n = nodes[int(m.group(1))]
        return (
            f'<g id="{_POINT_GID.format(m.group(1))}" class="point" data-node="{escape(n.name)}" '
            f'data-predicted-s="{n.predicted_s!r}" data-measured-s="{n.measured_s!r}">'
            f"<title>{escape(point_tooltip(n))}</title>"
        )

    return _POINT_GROUP.sub(titled, buf.getvalue())
