"""Gantt chart of a simulation: one row per PE, one panel per policy, bars coloured by category.

Drawn on a bare ``matplotlib.figure.Figure`` (no pyplot, no global backend change), saved by
matplotlib's Agg/SVG writers. matplotlib is imported only here, and only when a chart is drawn.
"""

from __future__ import annotations

import io
from pathlib import Path

from typing import TYPE_CHECKING

from dfx.sim.errors import SimulationError

if TYPE_CHECKING:  # annotations only: importing the package (every `dfx` command does) stays light
    from dfx.sim.result import PolicyResult, SimulationResult

__all__ = ["gantt", "render_gantt"]

# (seconds per unit, label): the largest unit in which the makespan is at least 1
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_LABELS_UP_TO = 40  # nodes; beyond this, names overlap and are left off
_LABEL_MIN_FRACTION = 0.04  # of the makespan: narrower bars (and zero-time nodes) get no name
_OTHER_COLOUR = "0.6"


def _unit(makespan_s: float) -> tuple[float, str]:
    return next(((scale, label) for scale, label in _TIME_UNITS if makespan_s >= scale), _TIME_UNITS[-1])


def _fit_labels(fig, labels: list) -> None:
    """Shorten each bar's name (``…``) to the bar's drawn width, or drop it if under 3 characters fit.

    The layout is run first, so widths are measured in the final pixels: a label never runs into
    its neighbour's (``scaled_dot_product_attentiolinear_1``).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    renderer = canvas.get_renderer()
    for text, ax, x0, x1 in labels:
        room = abs(ax.transData.transform((x1, 0))[0] - ax.transData.transform((x0, 0))[0]) - 4
        name = text.get_text()
        keep = len(name)
        while keep >= 3 and text.get_window_extent(renderer).width > room:
            keep -= 1
            text.set_text(name[:keep] + "\u2026")
        if keep < 3:
            text.remove()


def _draw(ax, result: SimulationResult, pr: PolicyResult, unit: tuple[float, str], colours: dict[str, str]) -> list:
    scale, label = unit
    dag, sched = result.dag, pr.schedule
    rows: list[list[tuple[float, float]]] = [[] for _ in range(result.pes)]
    faces: list[list[str]] = [[] for _ in range(result.pes)]
    for v in range(len(dag)):
        p = sched.pe[v]
        rows[p].append((sched.start_s[v] / scale, (sched.end_s[v] - sched.start_s[v]) / scale))
        faces[p].append(colours.get(dag.category[v], _OTHER_COLOUR if colours else "C0"))
    for p in range(result.pes):
        ax.broken_barh(rows[p], (p - 0.4, 0.8), facecolors=faces[p], edgecolor="black", linewidth=0.3)
    labels = []
    if len(dag) <= _LABELS_UP_TO:
        wide = _LABEL_MIN_FRACTION * sched.makespan_s
        for v, name in enumerate(dag.names):
            if sched.end_s[v] - sched.start_s[v] >= wide > 0:
                x0, x1 = sched.start_s[v] / scale, sched.end_s[v] / scale
                text = ax.text((x0 + x1) / 2, sched.pe[v], name, ha="center", va="center", fontsize=7, clip_on=True)
                labels.append((text, ax, x0, x1))
    ax.set_yticks(range(result.pes), [f"PE {p}" for p in range(result.pes)])
    ax.set_ylim(result.pes - 0.5, -0.5)
    m = pr.makespan
    ax.set_title(f"{pr.policy.value}: makespan {m.samples_s[0] / scale:.4g} {label} (run 0)", fontsize=9, loc="left")
    return labels


def render_gantt(result: SimulationResult, fmt: str = "png") -> bytes:
    """The Gantt chart of run 0 of each policy as ``png`` or ``svg`` bytes.

    Raises
    ------
    SimulationError
        If matplotlib is not installed or ``fmt`` is neither png nor svg.
    """
    if fmt not in ("png", "svg"):
        raise SimulationError(f"Gantt format {fmt!r} is not supported; use png or svg")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SimulationError("the Gantt chart needs matplotlib; pip install matplotlib") from None
    policies = result.policies
    unit = _unit(max(pr.schedule.makespan_s for pr in policies))
    cats = sorted({c for c in result.dag.category if c})
    colours = {c: f"C{i % 10}" for i, c in enumerate(cats)}
    height = sum(1.0 + 0.3 * result.pes for _ in policies) + 0.6
    fig = Figure(figsize=(10, height), layout="constrained")
    axes = fig.subplots(len(policies), 1, sharex=True, squeeze=False)[:, 0]
    labels = [label for ax, pr in zip(axes, policies) for label in _draw(ax, result, pr, unit, colours)]
    axes[-1].set_xlabel(f"time ({unit[1]})")
    if colours:
        from matplotlib.patches import Patch

        handles = [Patch(facecolor=col, label=c) for c, col in colours.items()]
        fig.legend(handles=handles, loc="outside right upper", fontsize=7)
    if labels:
        _fit_labels(fig, labels)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=120)
    return buf.getvalue()


def gantt(result: SimulationResult, path: str | Path) -> Path:
    """Write the Gantt chart to ``path``; the format (png or svg) follows the suffix."""
    path = Path(path)
    path.write_bytes(render_gantt(result, path.suffix.lstrip(".").lower()))
    return path
