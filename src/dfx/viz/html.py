"""``report.html``: one self-contained, offline file (inline SVG, PNG as data, inline CSS and JS)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from dfx.schema.analysis import EagerRecord, ProgramRecord
from dfx.viz.document import Doc, DocNode
from dfx.viz.facts import (
    BOUND_FILL,
    BOUND_LABEL,
    box_facts,
    format_bytes,
    format_flops,
    format_intensity,
    format_seconds,
    format_shape,
)
from dfx.viz.graph import DisplayGraph

__all__ = ["render_html"]

_TEMPLATES = Path(__file__).parent / "templates"
_SUMMARY_ROWS = [
    ("execution model", "execution_model"),
    ("ridge (FLOP/byte)", "ridges"),
    ("bound counts", "counts"),
    ("serial time (one stream)", "serial"),
    ("critical path (infinite-resource lower bound)", "critical"),
    ("makespan (the latency to quote)", "makespan"),
    ("kernels, cores, schedule", "program"),
    ("eager: serial / makespan", "eager"),
    ("parallelism (work / span)", "parallelism"),
    ("nodes whose bound shifts on chip", "shift"),
]
# Inline SVG needs no namespace declarations in HTML; dropping them (and the XML prolog) leaves no URL.
_SVG_PROLOG = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->|<metadata>.*?</metadata>", re.S)
_SVG_XMLNS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')


def _inline_svg(svg: str) -> str:
    return _SVG_XMLNS.sub("", _SVG_PROLOG.sub("", svg)).strip()


_PATH_HEAD, _PATH_TAIL = 6, 3  # nodes of a long critical path shown before it is expanded


def _short_path(path: tuple[str, ...] | list[str]) -> str:
    """The first and last nodes of a long path, the middle counted: ``a → b → … 12 more … → z``."""
    if len(path) <= _PATH_HEAD + _PATH_TAIL + 1:
        return " \u2192 ".join(path)
    hidden = len(path) - _PATH_HEAD - _PATH_TAIL
    return " \u2192 ".join([*path[:_PATH_HEAD], f"\u2026 {hidden} more \u2026", *path[-_PATH_TAIL:]])


def _program_cell(program: ProgramRecord | None, chips: int | None = None) -> str:
    """A compiled program in one cell: kernels on how many cores, the schedule's policy and busy share.

    The program is compiled for one chip; where the result is spread over ``chips`` > 1 the cell says
    its cores are one chip's, as the console does.
    """
    if program is None:
        return "-"
    one_chip = " of 1 chip" if (chips or 1) > 1 else ""
    return (
        f"{program.kernel_count} kernels on {program.cores} cores{one_chip}, {program.schedule_policy}, "
        f"{100 * program.core_utilization:.0f}% busy"
    )


def _eager_cell(eager: EagerRecord | None) -> str:
    """A GPU's eager numbers beside its compiled ones (``hardware.<id>.eager``)."""
    if eager is None:
        return "-"
    return f"{format_seconds(eager.serial_time_s)} / {format_seconds(eager.makespan_s)}"


def _summaries(doc: Doc) -> list[dict[str, str]]:
    out = []
    for h in doc.hardware.values():
        out.append(
            {
                "id": h.id,
                "execution_model": h.execution_model,
                "ridges": ", ".join(f"{k} {v:.3g}" for k, v in h.ridge_flop_per_byte.items()) + f" ({h.ridge_dtype})",
                "counts": ", ".join(f"{k} {v}" for k, v in h.bound_counts.items()),
                "serial": format_seconds(h.serial_time_s),
                "critical": format_seconds(h.critical_time_s),
                "makespan": format_seconds(h.makespan_s),
                "program": _program_cell(h.program, h.chips),
                "eager": _eager_cell(h.eager),
                "parallelism": f"{h.parallelism.parallelism:.2f}",
                "shift": str(len(h.partition_shift)),
                "path": " \u2192 ".join(h.critical_path.nodes),
                "path_length": len(h.critical_path.nodes),
                "path_short": _short_path(h.critical_path.nodes),
            }
        )
    return out


def _cell(text: str, sort: object, cls: str = "") -> dict[str, object]:
    return {"text": text, "sort": sort, "cls": cls}


def _row(doc: Doc, n: DocNode) -> list[dict[str, object]]:
    row = [
        _cell(n.name, n.name, "l"),
        _cell(n.op_label, n.op_label, "l"),
        _cell(n.module_path, n.module_path, "l"),
        _cell(n.category, n.category, "l"),
        _cell(format_shape(n.shapes[0] if n.shapes else None), len(n.shapes), "l"),
        _cell(format_flops(n.flops), n.flops),
        _cell(format_bytes(n.bytes), n.bytes),
        _cell(format_intensity(n.intensity_flop_per_byte), n.intensity_flop_per_byte),
    ]
    for h in doc.hardware.values():
        per = h.nodes.get(n.name)
        bound = per.bound if per else "none"
        row += [
            _cell(bound, bound, f"l b-{bound}"),
            _cell(format_seconds(per.time_s) if per else "", per.time_s if per else 0),
        ]
    return row


def _columns(doc: Doc) -> list[dict[str, object]]:
    cols = [
        ("name", True),
        ("op", True),
        ("module", True),
        ("category", True),
        ("output shape", True),
        ("FLOPs", False),
        ("bytes", False),
        ("intensity", False),
    ]
    for h in doc.hardware:
        cols += [(f"{h} bound", True), (f"{h} time", False)]
    return [{"label": c, "text": t} for c, t in cols]


def _lines(doc: Doc) -> tuple[str, str]:
    t = doc.totals
    shown = ("batch", "seq", "dtype", "capture_method", "torch_version")  # optional model fields
    model_line = ", ".join(f"{k} {doc.model_field(k)}" for k in shown if doc.model_field(k) is not None)
    totals_line = (
        f"{len(doc.nodes)} nodes; {format_flops(t.flops)}; "
        f"traffic {format_bytes(t.bytes_read + t.bytes_written)}; "
        f"parameters {format_bytes(t.unique_parameter_bytes)} unique"
    )
    return model_line, totals_line


def render_html(
    doc: Doc,
    graph: DisplayGraph,
    dag_svg: str | None,
    dag_dot: str,
    roofline_png: bytes | None,
    dag_note: str,
    timeline: dict[str, object] | None = None,
    validation: dict[str, object] | None = None,
) -> str:
    """The report page; ``dag_svg`` (Graphviz's or dfx's own layout) is inlined, with zoom, pan and search.

    ``timeline`` (:func:`dfx.viz.timeline.timeline_context`) adds the Timeline section, and
    ``validation`` (:func:`dfx.viz.validation.validation_context`) the "Predicted vs measured"
    section with its scatter inlined; without them those sections are absent.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined
    )
    model_line, totals_line = _lines(doc)
    return env.get_template("report.html.j2").render(
        model_name=doc.model_name,
        model_line=model_line,
        totals_line=totals_line,
        fill=BOUND_FILL,
        bound_label=BOUND_LABEL,
        summaries=_summaries(doc),
        summary_rows=_SUMMARY_ROWS,
        dag_svg=_inline_svg(dag_svg) if dag_svg else None,
        dag_dot=dag_dot,
        dag_note=dag_note,
        roofline_png=base64.b64encode(roofline_png).decode("ascii") if roofline_png else None,
        columns=_columns(doc),
        rows=[_row(doc, n) for n in doc.nodes],
        facts={b.id: box_facts(b) for b in graph.boxes},
        timeline=timeline,
        validation=dict(validation, svg=_inline_svg(str(validation["svg"]))) if validation else None,
    )
