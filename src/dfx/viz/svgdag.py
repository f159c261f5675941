"""The DAG drawn by dfx itself: :mod:`dfx.viz.layout`'s layered layout as SVG (and PNG by matplotlib).

Used where Graphviz's ``dot`` is absent or too slow (``docs/pictures.md``). The SVG has the shape
of Graphviz's, so one reader serves both: one ``<g class="node ...">`` per box whose ``<title>`` is
the box id, with an ``<a xlink:title>`` tooltip holding all its numbers, and one
``<g class="edge ...">`` per link titled ``src->dst``; classes ``dfx-node``, ``bound-<bound>`` and
``critical`` as in :mod:`dfx.viz.dot`. Boxes are not clustered by module (Graphviz draws the
clusters); the module is in every tooltip.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from xml.sax.saxutils import escape

from dfx.viz.document import Doc
from dfx.viz.facts import BOUND_FILL, BOUND_LABEL, box_facts, box_label_lines
from dfx.viz.graph import Box, DisplayGraph, Kind
from dfx.viz.layout import Layout, layered_layout

__all__ = ["DagDrawing", "dag_png", "dag_svg", "draw_dag"]

_FONT_PX = 9.0
_CHAR_PX = 5.2  # mean advance of a 9 px Helvetica character (0.58 em), enough for digits and lower case
_LINE_PX = 11.5
_PAD_X, _PAD_Y = 10.0, 7.0
_TITLE_PX = 24.0  # the drawing's title line and legend row above the graph
_EDGE, _CRITICAL = "#888888", "#c0392b"
_FADED_FILL, _FADED_STROKE, _FADED_TEXT = "#fafafa", "#bbbbbb", "#888888"
# matplotlib refuses images over 2^16 px a side; a layout taller than this at 110 dpi is drawn at a lower dpi
_PNG_MAX_PX = 30_000
_PNG_DPI = 110  # as `dot -Tpng -Gdpi=110`


@dataclass(frozen=True)
class DagDrawing:
    """A laid-out DAG: the boxes, their label lines and fill, and the geometry."""

    title: str
    boxes: tuple[Box, ...]
    lines: dict[str, list[str]]
    layout: Layout
    hw_id: str | None
    critical_links: frozenset[tuple[str, str]]


def _size(lines: list[str]) -> tuple[float, float]:
    return (max(len(s) for s in lines) * _CHAR_PX + 2 * _PAD_X, len(lines) * _LINE_PX + 2 * _PAD_Y)


def draw_dag(doc: Doc, graph: DisplayGraph, color_by: str | None) -> DagDrawing:
    """Lay out ``graph`` (boxes in topological order) with its labels for profile ``color_by``."""
    title = f"{doc.model_name}: {len(doc.nodes)} nodes" + (f", coloured by bound on {color_by}" if color_by else "")
    if graph.folds:
        title += "; repeated layers drawn once: " + ", ".join(f.label for f in graph.folds)
    lines = {b.id: [s for s in box_label_lines(b, color_by) if s] or [b.id] for b in graph.boxes}
    sizes = {b.id: _size(lines[b.id]) for b in graph.boxes}
    layout = layered_layout([b.id for b in graph.boxes], sizes, [(k.src, k.dst) for k in graph.links])
    critical = frozenset((k.src, k.dst) for k in graph.links if color_by and k.critical.get(color_by))
    return DagDrawing(title, graph.boxes, lines, layout, color_by, critical)


def _style(box: Box, hw_id: str | None) -> tuple[str, str, str, float, str]:
    """fill, stroke, text colour, stroke width, dash array of a box."""
    h = box.hw.get(hw_id) if hw_id else None
    if box.kind in (Kind.VIEW, Kind.PARAM):
        return _FADED_FILL, _FADED_STROKE, _FADED_TEXT, 1.0, "4,2"
    return BOUND_FILL[h.bound if h else "none"], "#333333", "#000000", 2.5 if h and h.critical else 1.0, ""


def _attr(text: str) -> str:
    return escape(text, {'"': "&quot;", "\n": "&#10;"})


def _rect_path(cx: float, cy: float, w: float, h: float, r: float = 4.0) -> str:
    x0, y0, x1, y1 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
    return (
        f"M{x0 + r:.1f},{y0:.1f} L{x1 - r:.1f},{y0:.1f} Q{x1:.1f},{y0:.1f} {x1:.1f},{y0 + r:.1f} "
        f"L{x1:.1f},{y1 - r:.1f} Q{x1:.1f},{y1:.1f} {x1 - r:.1f},{y1:.1f} L{x0 + r:.1f},{y1:.1f} "
        f"Q{x0:.1f},{y1:.1f} {x0:.1f},{y1 - r:.1f} L{x0:.1f},{y0 + r:.1f} Q{x0:.1f},{y0:.1f} {x0 + r:.1f},{y0:.1f} Z"
    )


def _node_svg(k: int, box: Box, d: DagDrawing, dy: float) -> list[str]:
    h = box.hw.get(d.hw_id) if d.hw_id else None
    cls = f"node dfx-node bound-{h.bound if h else 'none'}" + (" critical" if h and h.critical else "")
    (cx, cy), (w, hh) = d.layout.centres[box.id], d.layout.sizes[box.id]
    cy += dy
    fill, stroke, ink, width, dash = _style(box, d.hw_id)
    tip = "\n".join(f"{a}: {b}" for a, b in box_facts(box))
    out = [
        f'<g id="node{k}" class="{cls}"><title>{escape(box.id)}</title><a xlink:title="{_attr(tip)}">',
        f'<path fill="{fill}" stroke="{stroke}" stroke-width="{width}"'
        + (f' stroke-dasharray="{dash}"' if dash else "")
        + f' d="{_rect_path(cx, cy, w, hh)}"/>',
    ]
    lines = d.lines[box.id]
    top = cy - (len(lines) - 1) * _LINE_PX / 2 + _FONT_PX / 3
    for i, line in enumerate(lines):
        weight = ' font-weight="bold"' if i == 0 and box.kind is Kind.WORK else ""
        out.append(
            f'<text text-anchor="middle" x="{cx:.1f}" y="{top + i * _LINE_PX:.1f}" fill="{ink}"{weight}>{escape(line)}</text>'
        )
    out.append("</a></g>")
    return out


def _edge_svg(k: int, a: str, b: str, d: DagDrawing, dy: float) -> list[str]:
    pts = [(x, y + dy) for x, y in d.layout.routes[(a, b)]]
    crit = (a, b) in d.critical_links
    colour, width = (_CRITICAL, 3.0) if crit else (_EDGE, 1.0)
    path = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        mid = (y0 + y1) / 2
        path += f" C{x0:.1f},{mid:.1f} {x1:.1f},{mid:.1f} {x1:.1f},{y1:.1f}"
    x, y = pts[-1]
    arrow = f"{x - 3.5:.1f},{y - 7:.1f} {x + 3.5:.1f},{y - 7:.1f} {x:.1f},{y:.1f}"
    return [
        f'<g id="edge{k}" class="edge{" critical" if crit else ""}"><title>{escape(a)}-&gt;{escape(b)}</title>',
        f'<path fill="none" stroke="{colour}" stroke-width="{width}" d="{path}"/>',
        f'<polygon fill="{colour}" stroke="{colour}" points="{arrow}"/></g>',
    ]


def _legend_svg(y: float) -> list[str]:
    out, x = [], 8.0
    items = [(f"legend_{b}", BOUND_LABEL[b], fill, 1.0) for b, fill in BOUND_FILL.items()]
    items.append(("legend_critical", "critical path", "#ffffff", 2.5))
    for name, label, fill, width in items:
        w = len(label) * _CHAR_PX + 2 * _PAD_X
        out.append(
            f'<g class="node legend"><title>{name}</title><path fill="{fill}" stroke="#333333" '
            f'stroke-width="{width}" d="{_rect_path(x + w / 2, y, w, 15)}"/>'
            f'<text text-anchor="middle" x="{x + w / 2:.1f}" y="{y + 3:.1f}">{escape(label)}</text></g>'
        )
        x += w + 8
    return out


def dag_svg(drawing: DagDrawing) -> str:
    """The drawing as a standalone SVG document (px units, a ``viewBox`` for zooming)."""
    lay = drawing.layout
    dy = 2 * _TITLE_PX
    width, height = max(lay.width, 560.0), lay.height + dy
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="{width:.0f}pt" height="{height:.0f}pt" viewBox="0 0 {width:.1f} {height:.1f}" class="dfx-dag-svg">',
        f'<g id="graph0" class="graph" font-family="Helvetica,Arial,sans-serif" font-size="{_FONT_PX:g}">',
        f'<rect fill="white" stroke="none" x="0" y="0" width="{width:.1f}" height="{height:.1f}"/>',
        f'<text x="8" y="16" font-size="12">{escape(drawing.title)}</text>',
        *_legend_svg(_TITLE_PX + 12),
    ]
    links = sorted(lay.routes)
    for k, (a, b) in enumerate(links):
        out += _edge_svg(k, a, b, drawing, dy)
    for k, box in enumerate(drawing.boxes):
        out += _node_svg(k, box, drawing, dy)
    out += ["</g>", "</svg>"]
    return "\n".join(out) + "\n"


def dag_png(drawing: DagDrawing) -> bytes:
    """The drawing as a PNG, by matplotlib (Agg): boxes, labels and edges as in :func:`dag_svg`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    lay = drawing.layout
    width, height = max(lay.width, 200.0), lay.height + _TITLE_PX
    dpi = min(_PNG_DPI, _PNG_MAX_PX * 72 / max(width, height))
    fig = plt.figure(figsize=(width / 72, height / 72), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    ax.text(8, 16, drawing.title, fontsize=12, va="baseline")
    for (a, b), pts in lay.routes.items():
        crit = (a, b) in drawing.critical_links
        xs, ys = [p[0] for p in pts], [p[1] + _TITLE_PX for p in pts]
        ax.annotate(
            "",
            xy=(xs[-1], ys[-1]),
            xytext=(xs[-2], ys[-2]),
            arrowprops={"arrowstyle": "-|>", "color": _CRITICAL if crit else _EDGE, "lw": 3 if crit else 1},
        )
        ax.plot(xs[:-1], ys[:-1], color=_CRITICAL if crit else _EDGE, lw=3 if crit else 1)
    for box in drawing.boxes:
        (cx, cy), (w, h) = lay.centres[box.id], lay.sizes[box.id]
        cy += _TITLE_PX
        fill, stroke, ink, lw, dash = _style(box, drawing.hw_id)
        patch = FancyBboxPatch(
            (cx - w / 2, cy - h / 2), w, h, boxstyle="round,pad=0,rounding_size=4", fc=fill, ec=stroke, lw=lw
        )
        if dash:
            patch.set_linestyle("--")
        ax.add_patch(patch)
        ax.text(cx, cy, "\n".join(drawing.lines[box.id]), ha="center", va="center", fontsize=_FONT_PX * 0.8, color=ink)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
