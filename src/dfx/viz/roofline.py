"""The roofline picture: one log-log panel per profile, side by side, with matplotlib (Agg).

Each panel draws the compute roof (peak FLOP/s at the ridge dtype, or at the dtype the profile fell
back to, which its legend names) and one bandwidth roof per memory level, marks each ridge point,
and places every node with FLOPs at (arithmetic intensity, attained FLOP/s = flops / time_s), sized
by its share of the serial time and coloured by its bound.
Nodes whose bound moves between the off-chip and on-chip ridge (``partition_shift``) get a black
ring, so the same graph on a GPU and on a dataflow accelerator shows where the partition shifts.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

from dfx.viz.document import Doc, HwSummary
from dfx.viz.facts import BOUND_FILL, BOUND_LABEL, format_seconds
from dfx.viz.labels import place_annotations, renderer_of
from dfx.viz.roofs import Roofs, roofs_for

__all__ = ["RooflinePoint", "RooflineImages", "peak_label", "roofline_figure", "roofline_points", "render_roofline"]

_TOP_LABELLED = 5  # the nodes with the largest time share get a text label
_MARKER_AREA_PT2 = (12.0, 900.0)  # smallest and largest marker area (points^2) for 0% and 100% time share
_LEVEL_STYLES = ("-", "--", "-.", ":")


@dataclass(frozen=True)
class RooflinePoint:
    node: str
    intensity_flop_per_byte: float
    attained_flop_per_s: float
    time_share: float  # of the profile's serial time
    bound: str
    shifted: bool  # in partition_shift


@dataclass(frozen=True)
class RooflineImages:
    png: bytes
    svg: str


def roofline_points(hw: HwSummary) -> tuple[list[RooflinePoint], int]:
    """The points of one panel, and how many nodes with work could not be placed (0 FLOPs)."""
    serial = hw.serial_time_s or 1.0
    shifted = {s.node for s in hw.partition_shift}
    points, unplaced = [], 0
    for name, n in hw.nodes.items():
        if n.flops <= 0 or n.time_s <= 0 or n.bytes <= 0:
            unplaced += n.time_s > 0
            continue
        points.append(
            RooflinePoint(
                name, n.intensity_flop_per_byte, n.flops / n.time_s, n.time_s / serial, n.bound, name in shifted
            )
        )
    return points, unplaced


def peak_label(peak_flop_per_s: float, hw: HwSummary) -> str:
    """The compute roof's legend entry, naming the dtype whose peak it is.

    The roof is the peak at ``hw.ridge_dtype`` after any dtype fallback (``dtype_fallbacks``): a
    profile that lists no peak for that dtype is timed at another dtype's, and the label says so.

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis, example_hardware
    >>> from dfx.viz.document import read_document
    >>> spyre = example_hardware(ridge_dtype="float32", dtype_fallbacks={"float32": "float16"})
    >>> hw = read_document(example_analysis(hardware={"ibm-spyre": spyre})).hardware["ibm-spyre"]
    >>> peak_label(75e12, hw)
    'peak 75 TFLOP/s (float16, float32 not listed)'
    """
    used = hw.dtype_fallbacks.get(hw.ridge_dtype, hw.ridge_dtype)
    dtype = used if used == hw.ridge_dtype else f"{used}, {hw.ridge_dtype} not listed"
    return f"peak {peak_flop_per_s / 1e12:.3g} TFLOP/s ({dtype})"


def _draw_roofs(ax, roofs: Roofs, hw: HwSummary, x_range: tuple[float, float], y_floor: float) -> list:
    """The compute roof, a bandwidth roof per level, and each ridge as a dotted line labelled at the bottom
    (those labels are returned: the point labels keep clear of them)."""
    import numpy as np

    texts = []

    xs = np.logspace(np.log10(x_range[0]), np.log10(x_range[1]), 200)
    ax.axhline(roofs.peak_flop_per_s, color="#333333", lw=1.5, label=peak_label(roofs.peak_flop_per_s, hw))
    for style, (level, bw) in zip(_LEVEL_STYLES * 4, roofs.bandwidth_bytes_per_s.items()):
        where = "on-chip" if level == hw.on_chip_level else "off-chip" if level == hw.off_chip_level else ""
        ax.plot(
            xs,
            np.minimum(bw * xs, roofs.peak_flop_per_s),
            color="#555555",
            ls=style,
            lw=1.2,
            label=f"{level} {bw / 1e12:.3g} TB/s {where}".strip(),
        )
        ridge = roofs.ridge_flop_per_byte[level]
        ax.plot([ridge], [roofs.peak_flop_per_s], marker="D", color="#333333", ms=5)
        ax.axvline(ridge, color="#999999", ls=":", lw=0.8)
        text = ax.text(
            ridge,
            y_floor * 1.4,
            f" ridge {level} {ridge:.3g} FLOP/B",
            rotation=90,
            fontsize=7,
            color="#555555",
            ha="right",
            va="bottom",
        )
        text.set_in_layout(False)
        texts.append(text)
    return texts


def _draw_points(ax, points: list[RooflinePoint]) -> list:
    """The points, and a label for each of the top ones by time share (returned, largest first, to be placed
    by :func:`dfx.viz.labels.place_annotations` once the axes' limits are set)."""
    lo, hi = _MARKER_AREA_PT2
    for bound in ("compute", "memory"):
        pts = [p for p in points if p.bound == bound]
        if pts:
            ax.scatter(
                [p.intensity_flop_per_byte for p in pts],
                [p.attained_flop_per_s for p in pts],
                s=[lo + (hi - lo) * p.time_share for p in pts],
                c=BOUND_FILL[bound],
                alpha=0.85,
                edgecolors=["black" if p.shifted else "white" for p in pts],
                linewidths=[1.8 if p.shifted else 0.6 for p in pts],
                label=BOUND_LABEL[bound],
                zorder=3,
            )
    annotations = []
    for (x, y), names in _labels(points).items():
        text = ", ".join(names[:2]) + (f" +{len(names) - 2} more" if len(names) > 2 else "")
        ann = ax.annotate(
            text,
            (x, y),
            textcoords="offset points",
            xytext=(10, -14),  # moved by place_annotations
            fontsize=7,
            arrowprops={"arrowstyle": "-", "color": "#aaaaaa", "lw": 0.6},
        )
        ann.set_in_layout(False)
        annotations.append(ann)
    return annotations


def _labels(points: list[RooflinePoint]) -> dict[tuple[float, float], list[str]]:
    """The top nodes by time share; nodes within a quarter of a decade of each other share one label."""

    labels: dict[tuple[float, float], list[str]] = {}
    for p in sorted(points, key=lambda p: -p.time_share)[:_TOP_LABELLED]:
        x, y = p.intensity_flop_per_byte, p.attained_flop_per_s
        near = next((k for k in labels if abs(math.log10(k[0] / x)) < 0.25 and abs(math.log10(k[1] / y)) < 0.2), None)
        labels.setdefault(near or (x, y), []).append(f"{p.node} ({p.time_share:.0%})")
    return labels


def _axis_ranges(
    all_points: list[RooflinePoint], roofs: list[Roofs]
) -> tuple[tuple[float, float], tuple[float, float]]:
    xs = [p.intensity_flop_per_byte for p in all_points] + [r for rf in roofs for r in rf.ridge_flop_per_byte.values()]
    ys = [p.attained_flop_per_s for p in all_points] + [rf.peak_flop_per_s for rf in roofs if rf.peak_flop_per_s > 0]
    xs, ys = [x for x in xs if x > 0] or [1.0], [y for y in ys if y > 0] or [1.0]
    return (min(xs) / 4, max(xs) * 4), (min(ys) / 4, max(ys) * 3)


def _panel(ax, hw: HwSummary, roofs: Roofs, points, unplaced: int, x_range, y_range) -> tuple[list, list, list]:
    """Draw one profile's panel; its point labels, and the texts and markers they must keep clear of."""
    ridge_texts = _draw_roofs(ax, roofs, hw, x_range, y_range[0]) if roofs.peak_flop_per_s > 0 else []
    annotations = _draw_points(ax, points)
    from matplotlib.ticker import LogLocator, NullLocator

    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # decades only: minor tick labels cost seconds of text layout
        axis.set_major_locator(LogLocator(base=10, numticks=8))
        axis.set_minor_locator(NullLocator())
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.grid(True, which="major", color="#e5e5e5", lw=0.6)
    notes = [hw.execution_model, f"serial {format_seconds(hw.serial_time_s)}"]
    if hw.partition_shift:
        notes.append(f"{len(hw.partition_shift)} shift bound on chip (ringed)")
    if unplaced:
        notes.append(f"{unplaced} zero-FLOP not shown")
    ax.set_title(f"{hw.id}\n" + " \u00b7 ".join(notes), fontsize=8.5)
    if ax.get_legend_handles_labels()[0]:  # a document with no roof and no FLOPs has nothing to name
        # Two columns fit a panel's width, so no entry runs into the next panel or off the figure.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    return annotations, ridge_texts, marks(points)


def marks(points: list[RooflinePoint]) -> list[tuple[float, float, float]]:
    """Each point's centre and marker radius in points (area ``s`` pt^2 is a disc of radius sqrt(s / pi))."""
    lo, hi = _MARKER_AREA_PT2
    return [
        (p.intensity_flop_per_byte, p.attained_flop_per_s, math.sqrt((lo + (hi - lo) * p.time_share) / math.pi))
        for p in points
    ]


def roofline_figure(doc: Doc):
    """The roofline as a matplotlib ``Figure``, one panel per profile, point labels placed clear of each
    other and of the ridge labels (:func:`dfx.viz.labels.place_annotations`); ``None`` without profiles."""
    if not doc.hardware:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    hws = list(doc.hardware.values())
    roofs = [roofs_for(h) for h in hws]
    panels = [roofline_points(h) for h in hws]
    x_range, y_range = _axis_ranges([p for pts, _ in panels for p in pts], roofs)
    fig = Figure(figsize=(5.6 * len(hws), 5.6))
    fig.subplots_adjust(left=0.7 / (5.6 * len(hws)) + 0.02, right=0.98, bottom=0.27, top=0.86, wspace=0.1)
    axes = fig.subplots(1, len(hws), sharex=True, sharey=True, squeeze=False)[0]
    drawn = []
    for ax, hw, rf, (pts, unplaced) in zip(axes, hws, roofs, panels):
        drawn.append(_panel(ax, hw, rf, pts, unplaced, x_range, y_range))
        ax.set_xlim(*x_range)
        ax.set_ylim(*y_range)
    axes[0].set_ylabel("attained FLOP/s (flops / time)")
    fig.suptitle(f"{doc.model_name}: roofline per profile (marker area = share of serial time)", fontsize=10)
    renderer = renderer_of(fig)
    for ax, (labels, ridge_texts, points_at) in zip(axes, drawn):
        place_annotations(ax, labels, renderer, obstacles=ridge_texts, marks=points_at)
    return fig


def render_roofline(doc: Doc) -> RooflineImages | None:
    """PNG and SVG of the roofline (:func:`roofline_figure`); ``None`` when the document has no profile."""
    fig = roofline_figure(doc)
    if fig is None:
        return None
    png, svg = io.BytesIO(), io.StringIO()
    # "tight" grows the canvas to every artist (legends, rotated ridge labels), so nothing is cut off.
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None}, bbox_inches="tight", pad_inches=0.15)
    fig.savefig(svg, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.15)
    return RooflineImages(png.getvalue(), svg.getvalue())
