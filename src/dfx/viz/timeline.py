"""The report's timeline: a Gantt chart per policy as inline SVG, and the makespan and utilization tables.

Reads only the two documents (:class:`~dfx.viz.document.Doc`, :class:`~dfx.viz.simdoc.SimDoc`). Bars
are filled like the DAG's boxes, by the node's bound on one profile (:data:`~dfx.viz.facts.BOUND_FILL`),
so a node has one colour everywhere in the report. The SVG has no namespace declaration (HTML needs
none), hence no URL.
"""

from __future__ import annotations

import math
from html import escape

from dfx.viz.document import Doc
from dfx.viz.facts import BOUND_FILL, format_bytes, format_seconds
from dfx.viz.simdoc import SimDoc, SimPolicy, SimRun

__all__ = ["bar_fills", "nice_ticks", "timeline_context", "timeline_svg"]

_WIDTH_PX = 960
_LEFT_PX = 56  # room for the row labels ("PE 12")
_RIGHT_PX = 24
_TOP_PX = 6
_ROW_PX = 18  # one row per PE; the bar is _BAR_PX tall inside it
_BAR_PX = 14
_AXIS_PX = 30  # tick marks and their labels under the rows
_MIN_BAR_PX = 1.0  # a zero-time node (placeholder, view) stays visible and hoverable as a hairline
_TICKS_WANTED = 6
_PE_ROWS = 32  # beyond this many PEs the utilization table shows the first rows and a summary row


def nice_ticks(span: float, wanted: int = _TICKS_WANTED) -> list[float]:
    """Ticks at 1, 2 or 5 times a power of ten, from 0 to at most ``span``.

    Examples
    --------
    >>> nice_ticks(5e-6)
    [0.0, 1e-06, 2e-06, 3e-06, 4e-06, 5e-06]
    >>> nice_ticks(0.0)
    [0.0]
    """
    if not span > 0:
        return [0.0]
    raw = span / wanted
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(math.floor(span / step * (1 + 1e-9)))
    return [float(f"{i * step:.12g}") for i in range(count + 1)]


def bar_fills(doc: Doc, hw_id: str | None) -> dict[str, str]:
    """Node name -> fill: its bound on ``hw_id``, as the DAG colours it (``none`` without that profile)."""
    nodes = doc.hardware[hw_id].nodes if hw_id in doc.hardware else {}
    fills = {n.name: BOUND_FILL[nodes[n.name].bound if n.name in nodes else "none"] for n in doc.nodes}
    program = doc.hardware[hw_id].program if hw_id in doc.hardware else None
    for k in program.kernels if program is not None else ():  # a compiled program's tasks: k#i and k:done
        fills[k.name] = fills[f"{k.name}:done"] = BOUND_FILL[k.bound]
    return fills


def _fill(fills: dict[str, str], name: str) -> str:
    """The fill of node ``name``, or of the kernel whose tile ``name`` (``kernel#i``) is."""
    return fills.get(name) or fills.get(name.split("#")[0], BOUND_FILL["none"])


def _bar(run: SimRun, fill: str, x_of, y: float) -> str:
    x0 = x_of(run.start_s)
    w = max(x_of(run.end_s) - x0, _MIN_BAR_PX)
    tip = (
        f"{run.name} \u00b7 PE {run.pe} \u00b7 start {format_seconds(run.start_s)} "
        f"\u00b7 end {format_seconds(run.end_s)} ({format_seconds(run.end_s - run.start_s)})"
    )
    return (
        f'<rect class="bar" data-node="{escape(run.name)}" data-pe="{run.pe}" data-start-s="{run.start_s!r}" '
        f'data-end-s="{run.end_s!r}" x="{x0:.2f}" y="{y:.1f}" width="{w:.2f}" height="{_BAR_PX}" '
        f'fill="{fill}" stroke="#333" stroke-width="0.4"><title>{escape(tip)}</title></rect>'
    )


def _axis(span_s: float, x_of, y: float) -> list[str]:
    out = [f'<line x1="{_LEFT_PX}" y1="{y}" x2="{_WIDTH_PX - _RIGHT_PX}" y2="{y}" stroke="#333"/>']
    for t in nice_ticks(span_s):
        x = x_of(t)
        label = format_seconds(t) if t else "0"
        out.append(
            f'<line x1="{x:.2f}" y1="{y}" x2="{x:.2f}" y2="{y + 4}" stroke="#333"/>'
            f'<text x="{x:.2f}" y="{y + 16}" text-anchor="middle">{label}</text>'
        )
    return out


def timeline_svg(policy: SimPolicy, pes: int, span_s: float, bound_s: float, fills: dict[str, str]) -> str:
    """One policy's run 0 as a Gantt chart: one row per PE, one ``rect.bar`` (with a tooltip) per node.

    ``span_s`` is the time axis' extent, shared by every policy so their charts compare by eye; the
    dashed line marks the lower bound ``bound_s``.
    """
    plot_w = _WIDTH_PX - _LEFT_PX - _RIGHT_PX
    scale = plot_w / span_s if span_s > 0 else 0.0

    def x_of(t: float) -> float:
        return _LEFT_PX + t * scale

    rows_h = pes * _ROW_PX
    height = _TOP_PX + rows_h + _AXIS_PX
    parts = [
        f'<svg class="gantt" data-policy="{escape(policy.name)}" width="{_WIDTH_PX}" height="{height}" '
        f'viewBox="0 0 {_WIDTH_PX} {height}" font-size="11" font-family="sans-serif" role="img" '
        f'aria-label="{escape(policy.name)} schedule, run 0">'
    ]
    for p in range(pes):
        y = _TOP_PX + p * _ROW_PX
        shade = "#f7f7f7" if p % 2 else "#ffffff"
        parts.append(
            f'<rect class="row" x="{_LEFT_PX}" y="{y}" width="{plot_w}" height="{_ROW_PX}" fill="{shade}"/>'
            f'<text x="{_LEFT_PX - 6}" y="{y + _ROW_PX - 5}" text-anchor="end">PE {p}</text>'
        )
    pad = (_ROW_PX - _BAR_PX) / 2
    parts += [_bar(r, _fill(fills, r.name), x_of, _TOP_PX + r.pe * _ROW_PX + pad) for r in policy.schedule]
    if bound_s > 0:
        xb = x_of(bound_s)
        parts.append(
            f'<line class="bound" x1="{xb:.2f}" y1="{_TOP_PX}" x2="{xb:.2f}" y2="{_TOP_PX + rows_h}" '
            f'stroke="#c0392b" stroke-dasharray="4 3"><title>lower bound {format_seconds(bound_s)}</title></line>'
        )
    parts += _axis(span_s, x_of, _TOP_PX + rows_h)
    return "".join(parts) + "</svg>"


def _ratio(x: float, bound: float) -> str:
    return f"{x / bound:.3f}" if bound > 0 else "-"


def _makespan_rows(sim: SimDoc) -> list[list[str]]:
    bound = sim.lower_bound_s
    return [
        [
            p.name,
            format_seconds(p.makespan_mean_s),
            format_seconds(p.makespan_p50_s),
            format_seconds(p.makespan_p95_s),
            format_seconds(p.predicted_makespan_s),
            _ratio(p.makespan_mean_s, bound),
            f"{p.mean_utilization:.1%}",
        ]
        for p in sim.policies
    ]


def _utilization_rows(sim: SimDoc) -> list[list[str]]:
    rows = [[str(pe)] + [f"{p.utilization[pe]:.1%}" for p in sim.policies] for pe in range(min(sim.pes, _PE_ROWS))]
    if sim.pes > _PE_ROWS:
        rows.append([f"{_PE_ROWS}..{sim.pes - 1}"] + ["..." for _ in sim.policies])
    return rows


def _memory_line(p: SimPolicy) -> str:
    line = f"{p.name}: peak live bytes {format_bytes(p.peak_bytes)}"
    if p.capacity_bytes is not None:
        verdict = "fits" if p.peak_bytes <= p.capacity_bytes else "exceeds it"
        line += f" against {format_bytes(p.capacity_bytes)} on chip: {verdict}"
    return line


def _heading(sim: SimDoc) -> str:
    jitter = f"jitter CV {sim.jitter_cv:g} (seed {sim.seed})" if sim.jitter_cv else "no jitter"
    on = f" on {sim.hardware}" if sim.hardware else ""
    return f"{sim.pes} PE(s){on}, {sim.runs} run(s), {jitter}."


def timeline_context(sim: SimDoc, doc: Doc, hw_id: str | None) -> dict[str, object]:
    """Everything the report's Timeline section shows, ready for the template."""
    span = max([sim.lower_bound_s] + [r.end_s for p in sim.policies for r in p.schedule])
    fills = bar_fills(doc, hw_id)
    comparison = (
        f"static / dynamic mean makespan = {sim.static_over_dynamic:.3f}"
        if sim.static_over_dynamic is not None
        else None
    )
    return {
        "heading": _heading(sim),
        "colour_note": f"Bars coloured by bound on {hw_id}, as in the graph."
        if hw_id in doc.hardware
        else "No profile of this analysis: bars are not coloured by bound.",
        "bounds": (
            f"Lower bounds: critical path {format_seconds(sim.critical_path_s)}, work / {sim.pes} PE(s) "
            f"{format_seconds(sim.work_over_pes_s)} (dashed line: the larger)."
        ),
        "makespan_columns": ["policy", "mean", "p50", "p95", "predicted", "\u00f7 bound", "utilization"],
        "makespan_rows": _makespan_rows(sim),
        "comparison": comparison,
        "utilization_columns": ["PE"] + [p.name for p in sim.policies],
        "utilization_rows": _utilization_rows(sim),
        "memory": [_memory_line(p) for p in sim.policies],
        "charts": [
            {
                "policy": p.name,
                "title": f"{p.name}: makespan {format_seconds(p.run0_makespan_s)} (run 0)",
                "svg": timeline_svg(p, sim.pes, span, sim.lower_bound_s, fills),
            }
            for p in sim.policies
        ],
    }
