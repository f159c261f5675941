"""Text that never overlaps in matplotlib pictures: annotation labels placed around their points, tick labels thinned.

Both measure what matplotlib will draw (``Artist.get_window_extent`` with the figure's renderer)
rather than guess text sizes, so they hold for any font, dpi and label length. Offsets are in
points, which scale with the dpi like the text does, so a placement found once holds for the PNG
(110 dpi) and the SVG (72) alike.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

__all__ = [
    "LABEL_OFFSETS_PT",
    "drawn_tick_labels",
    "overlapping_pairs",
    "place_annotations",
    "renderer_of",
    "text_extent",
    "thin_tick_labels",
]

# Where a label may sit relative to its point, in points (dx, dy), tried in order: below then above,
# to the side that points into the panel first, each at growing distance; 11 pt is one 7-pt text line.
_STEP_PT = 11.0
_DISTANCES = 16  # up to 14 + 15 x 11 = 179 pt away: a crowded panel's labels fan out that far
LABEL_OFFSETS_PT = tuple(
    (dx, sign * (14.0 + _STEP_PT * k)) for k in range(_DISTANCES) for sign in (-1.0, 1.0) for dx in (10.0, -10.0)
)
_PAD_PX = 1.0  # two labels closer than this (pixels) count as touching


def renderer_of(fig) -> Any:
    """An Agg renderer for ``fig`` (attached to an Agg canvas first if it has none that can render)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    return canvas.get_renderer()


def text_extent(artist, renderer):
    """Where ``artist`` draws; for text, its text alone (an ``Annotation``'s extent also spans its leader line)."""
    from matplotlib.text import Annotation, Text

    if isinstance(artist, Annotation):
        artist.update_positions(renderer)  # where its offset puts the text now (as its own extent does first)
    return Text.get_window_extent(artist, renderer) if isinstance(artist, Text) else artist.get_window_extent(renderer)


def _box(artist, renderer):
    return text_extent(artist, renderer).padded(_PAD_PX)


def _hits(box, boxes: Iterable) -> bool:
    return any(box.overlaps(b) for b in boxes)


def place_annotations(
    ax, annotations: Sequence, renderer=None, obstacles: Sequence = (), marks: Sequence[tuple[float, float, float]] = ()
) -> int:
    """Move each annotation's text to the first offset of :data:`LABEL_OFFSETS_PT` where it overlaps no
    label placed before it and no artist of ``obstacles``, inside the axes; earlier labels (the larger
    points) choose first. The side pointing into the panel is tried first.

    Parameters
    ----------
    ax : matplotlib Axes
    annotations : sequence of matplotlib.text.Annotation
        Drawn with ``textcoords="offset points"``.
    renderer : optional
        The figure's renderer (:func:`renderer_of` by default).
    obstacles : sequence of Artist
        Other text to keep clear of (ridge labels, a title inside the axes).
    marks : sequence of (x, y, radius_pt)
        Markers to keep clear of: their centre in data coordinates and radius in points.

    Returns
    -------
    int
        How many labels found no free offset (each is left where it covers the fewest pixels of the
        others and of the outside of the axes).
    """
    renderer = renderer or renderer_of(ax.figure)
    frame = ax.get_window_extent(renderer)
    placed = [_box(o, renderer) for o in obstacles] + [_mark_box(ax, m, renderer) for m in marks]
    crowded = 0
    for ann in annotations:
        x_px = ax.transData.transform(ann.xy)[0]
        into_panel = 1.0 if x_px < (frame.x0 + frame.x1) / 2 else -1.0  # a label right of centre goes left
        best, best_cost = None, None
        for dx, dy in LABEL_OFFSETS_PT:
            _move(ann, dx * into_panel, dy)
            box = _box(ann, renderer)
            cost = _cost(box, frame, placed)
            if cost == 0:
                best = (dx * into_panel, dy)
                break
            if best_cost is None or cost < best_cost:
                best, best_cost = (dx * into_panel, dy), cost
        else:
            crowded += 1  # no free place: the least covered one
        _move(ann, *best)
        placed.append(_box(ann, renderer))
    return crowded


def _mark_box(ax, mark: tuple[float, float, float], renderer):
    """The pixel box of a marker at data ``(x, y)`` with radius ``r`` points."""
    from matplotlib.transforms import Bbox

    x, y, radius_pt = mark
    cx, cy = ax.transData.transform((x, y))
    r = renderer.points_to_pixels(radius_pt)
    return Bbox([[cx - r, cy - r], [cx + r, cy + r]])


def _move(ann, dx: float, dy: float) -> None:
    ann.set_position((dx, dy))
    ann.set_horizontalalignment("left" if dx > 0 else "right")
    ann.set_verticalalignment("top" if dy < 0 else "bottom")


def _cost(box, frame, placed) -> float:
    """Pixels^2 of ``box`` over placed labels, plus outside the axes: 0 for a free place."""

    def overlap(a, b) -> float:
        w, h = min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)
        return w * h if w > 0 and h > 0 else 0.0

    return sum(overlap(box, b) for b in placed) + (box.width * box.height - overlap(box, frame))


def overlapping_pairs(artists: Sequence, renderer) -> list[tuple[int, int]]:
    """Index pairs of ``artists`` whose drawn extents intersect (tests and :func:`thin_tick_labels`)."""
    boxes = [text_extent(a, renderer) for a in artists]
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def _drawn_ticks(axis) -> list[tuple[float, Any, bool]]:
    """``(location, label, is_major)`` of every tick ``axis`` draws with a visible, non-empty label."""
    lo, hi = sorted(axis.get_view_interval())
    slack = (hi - lo) * 1e-9
    out = []
    for major, locs, ticks in (
        (True, axis.get_majorticklocs(), axis.get_major_ticks),
        (False, axis.get_minorticklocs(), axis.get_minor_ticks),
    ):
        for loc, tick in zip(locs, ticks(len(locs))):
            label = tick.label1
            if lo - slack <= loc <= hi + slack and label.get_visible() and label.get_text():
                out.append((float(loc), label, major))
    return out


def drawn_tick_labels(axis) -> list:
    """The tick labels ``axis`` draws (after a draw): inside the view interval, visible and non-empty."""
    return [label for _, label, _ in _drawn_ticks(axis)]


def _only(formatter, keep: set[float]):
    """``formatter`` with every location outside ``keep`` given an empty label (the tick stays)."""
    from matplotlib.ticker import Formatter

    class Only(Formatter):
        def set_locs(self, locs):
            super().set_locs(locs)
            formatter.set_locs(locs)

        def set_axis(self, axis):
            super().set_axis(axis)
            formatter.set_axis(axis)

        def __call__(self, x, pos=None):
            return formatter(x, pos) if any(abs(x - k) <= 1e-9 * max(abs(k), 1e-300) for k in keep) else ""

    return Only()


def thin_tick_labels(ax, renderer=None) -> None:
    """Blank tick labels, on each axis whose labels collide, until none does: major labels are kept first,
    then every minor one that fits between the kept ones; the ticks themselves stay.

    A log axis over less than a decade or two gets minor labels (``2x10^0 3x10^0 ...``) from
    matplotlib's ``LogFormatterSciNotation``, which run into each other on a small figure.
    """
    renderer = renderer or renderer_of(ax.figure)
    for axis in (ax.xaxis, ax.yaxis):
        ax.figure.draw(renderer)  # tick labels get their text and place at draw time
        ticks = _drawn_ticks(axis)
        if not overlapping_pairs([label for _, label, _ in ticks], renderer):
            continue
        kept: dict[bool, set[float]] = {True: set(), False: set()}
        boxes: list = []
        for loc, label, major in sorted(ticks, key=lambda t: not t[2]):  # majors first, in order
            box = label.get_window_extent(renderer).padded(_PAD_PX)
            if not _hits(box, boxes):
                boxes.append(box)
                kept[major].add(loc)
        axis.set_major_formatter(_only(axis.get_major_formatter(), kept[True]))
        axis.set_minor_formatter(_only(axis.get_minor_formatter(), kept[False]))
