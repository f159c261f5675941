"""Text in the pictures never overlaps: roofline point labels, and pareto.png's tick labels and title.

Overlap is read off matplotlib's own renderer (``get_window_extent``), the boxes it draws the text in.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402

from dfx.schema.analysis import example_analysis, example_hardware  # noqa: E402
from dfx.viz.document import read_document  # noqa: E402
from dfx.viz.labels import (  # noqa: E402
    drawn_tick_labels,
    overlapping_pairs,
    place_annotations,
    renderer_of,
    text_extent,
    thin_tick_labels,
)
from dfx.viz.roofline import roofline_figure  # noqa: E402


def _annotations(ax) -> list:
    return [t for t in ax.texts if isinstance(t, Annotation)]


def _check_clear(fig) -> int:
    """Assert that no two point labels of a panel overlap, nor a label and a ridge label, and that each
    label lies inside its panel; the number of labels checked."""
    renderer = renderer_of(fig)
    fig.draw(renderer)
    checked = 0
    for ax in fig.axes:
        labels = _annotations(ax)
        ridges = [t for t in ax.texts if not isinstance(t, Annotation)]
        assert overlapping_pairs(labels, renderer) == [], [t.get_text() for t in labels]
        frame = ax.get_window_extent(renderer)
        for label in labels:
            box = text_extent(label, renderer)  # the text, not its leader line
            assert not any(box.overlaps(r.get_window_extent(renderer)) for r in ridges), label.get_text()
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        checked += len(labels)
    return checked


def test_the_issues_h100_labels_no_longer_overlap():
    # the issue's case: on gpt2-block's H100 panel `linear_3 (15%)` sat over `scaled_dot_product_attention (23%)`
    from dfx.analysis import analyze

    doc = read_document(analyze("gpt2-block", hardware=["h100", "spyre"]).to_dict())
    fig = roofline_figure(doc)
    h100 = fig.axes[0]
    texts = " ".join(t.get_text() for t in _annotations(h100))
    assert "scaled_dot_product_attention" in texts and "linear_3" in texts
    assert _check_clear(fig) >= 4


def _crowded_doc():
    """Six nodes 0.3 decade apart on a diagonal (each its own label: labels merge within a quarter
    decade), with long names, on one profile: the labels must find room around each other."""
    nodes, hw_nodes = [], {}
    for i in range(6):
        name = f"a_rather_long_operator_name_{i}"
        intensity = 10.0 * 2.0**i  # 10, 20, ... 320 FLOP/B: 0.3 decade apart
        time_s = 1e-6
        flops = int(intensity * 1e-6 * 1e12 * 0.5)  # attained 0.5 TFLOP/s ... alike: one crowded row
        nodes.append({"name": name, "category": "matmul", "flops": flops})
        hw_nodes[name] = {
            "bound": "compute",
            "time_s": time_s,
            "flops": flops,
            "bytes": int(flops / intensity),
            "intensity_flop_per_byte": intensity,
        }
    return read_document(example_analysis("crowded", nodes, {"h": example_hardware(hw_nodes)}))


def test_crowded_labels_are_moved_apart_and_off_the_markers():
    doc = _crowded_doc()
    fig = roofline_figure(doc)
    assert _check_clear(fig) == 5  # the top five by time share are labelled
    ax, renderer = fig.axes[0], renderer_of(fig)
    centres = [
        ax.transData.transform((n.intensity_flop_per_byte, n.flops / n.time_s))
        for n in doc.hardware["h"].nodes.values()
    ]
    for label in _annotations(ax):
        box = text_extent(label, renderer)
        assert not any(box.contains(x, y) for x, y in centres), label.get_text()


def test_place_annotations_separates_labels_on_one_point():
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    anns = [ax.annotate(f"label number {i}", (5, 5), textcoords="offset points", xytext=(10, -14)) for i in range(6)]
    renderer = renderer_of(fig)
    assert len(overlapping_pairs(anns, renderer)) == 15  # all six at one place: every pair, 6 x 5 / 2
    assert place_annotations(ax, anns, renderer) == 0
    assert overlapping_pairs(anns, renderer) == []


def _narrow_log_axes():
    """A small log-log panel over less than a decade: matplotlib labels the minor ticks 2, 3, 4, 6 x 10^0."""
    fig = Figure(figsize=(3.2, 2.4))
    ax = fig.subplots()
    ax.scatter([1.2, 9.0], [1e5, 3e5])
    ax.set_xscale("log")
    ax.set_yscale("log")
    return fig, ax


def test_colliding_tick_labels_are_thinned_and_some_remain():
    fig, ax = _narrow_log_axes()
    renderer = renderer_of(fig)
    fig.draw(renderer)
    assert overlapping_pairs(drawn_tick_labels(ax.xaxis), renderer)  # the collision this fixes
    thin_tick_labels(ax, renderer)
    fig.draw(renderer)
    for axis in (ax.xaxis, ax.yaxis):
        labels = drawn_tick_labels(axis)
        assert len(labels) >= 2 and overlapping_pairs(labels, renderer) == []


@pytest.mark.parametrize("spread", [1.0, 30.0])  # latencies within a decade (minor labels), or over two
def test_pareto_has_a_title_and_no_colliding_tick_labels(spread):
    from dfx.sweep.report import pareto_figure

    rows = [
        {
            "model": "gpt2-block",
            "hardware": hw,
            "latency_s": (2e-3 + 0.5e-3 * b) * f * spread ** (b / 12),
            "tokens_per_s": 1024 * b / ((2e-3 + 0.5e-3 * b) * f),
        }
        for hw, f in (("nvidia-h100-sxm", 1.0), ("ibm-spyre", 1.6), ("google-tpu-v4", 1.25))
        for b in (1, 2, 4, 8, 12)
    ]
    fig = pareto_figure(rows)
    ax = fig.axes[0]
    assert ax.get_title() == "Pareto front: latency vs tokens/s (gpt2-block, 15 points)"
    renderer = renderer_of(fig)
    fig.draw(renderer)
    for axis in (ax.xaxis, ax.yaxis):
        labels = drawn_tick_labels(axis)
        assert labels and overlapping_pairs(labels, renderer) == []
    title = ax.title.get_window_extent(renderer)
    assert not any(title.overlaps(t.get_window_extent(renderer)) for t in drawn_tick_labels(ax.yaxis))
