"""Pictures a learner reads (issue 18): the roofline's legends whole, the report's long text folded
away, the DAG scaled to its box, unread buffers left out, Gantt labels inside their bars."""

from __future__ import annotations

import copy
import io
import re

import pytest


def test_roofline_keeps_every_legend_inside_the_image(mlp_pictures):
    from PIL import Image

    img = Image.open(io.BytesIO(mlp_pictures.files["roofline.png"])).convert("L")
    w, h = img.size
    # Nothing drawn touches the edges: the last columns and rows are background (white), so no
    # legend ("memory-bound") or label is cut off at the border.
    for box in ((0, 0, 3, h), (w - 3, 0, w, h), (0, h - 3, w, h)):
        assert img.crop(box).getextrema()[0] == 255, box


def test_critical_path_is_folded_and_pictures_follow_the_summary(mlp_doc, mlp_pictures):
    html = mlp_pictures.files["report.html"]
    assert html.count('<details class="critical">') == len(mlp_doc["hardware"])
    assert "<details open" not in html
    assert html.index('id="dfx-dag"') < html.index('id="dfx-nodes"')
    assert html.index("Summary per profile") < html.index("<svg") < html.index('src="data:image/png')


def test_short_path_shows_head_tail_and_count():
    from dfx.viz.html import _short_path

    path = [f"n{i}" for i in range(20)]
    # 20 nodes: the first 6, "... 11 more ...", the last 3 (6 + 11 + 3 = 20)
    assert _short_path(path) == " \u2192 ".join(
        ["n0", "n1", "n2", "n3", "n4", "n5", "\u2026 11 more \u2026", "n17", "n18", "n19"]
    )
    assert _short_path(["a", "b"]) == "a \u2192 b"


def test_dag_is_scaled_to_its_box(mlp_pictures):
    html = mlp_pictures.files["report.html"]
    assert re.search(r"\.dfx-report \.dag svg \{[^}]*max-width: 100%", html)
    assert 'id="dfx-zoom"' in html  # the "actual size" toggle


def _doc_with_unread_buffer(mlp_doc):
    doc = copy.deepcopy(mlp_doc)
    from dfx.schema.analysis import example_analysis

    buffer = {
        "name": "b_bn_num_batches_tracked",
        "op": "placeholder",
        "input_kind": "buffer",
        "outputs": [{"shape": [], "dtype": "int64", "stride": []}],
    }
    doc["nodes"].insert(0, example_analysis(nodes=[buffer])["nodes"][0])
    return doc


def test_unread_buffer_is_not_drawn(mlp_doc):
    from dfx.viz.document import read_document
    from dfx.viz.graph import build_display_graph

    graph = build_display_graph(read_document(_doc_with_unread_buffer(mlp_doc)))
    assert "b_bn_num_batches_tracked" not in {b.id for b in graph.boxes}
    assert graph.unused_inputs == ("b_bn_num_batches_tracked",)
    # every node the MLP's own document has is still drawn (nothing read is dropped)
    assert {n["name"] for n in mlp_doc["nodes"]} <= {m for b in graph.boxes for m in b.members}


def test_unread_buffer_is_named_in_the_note(mlp_doc):
    from dfx.viz import render_pictures

    html = render_pictures(_doc_with_unread_buffer(mlp_doc)).files["report.html"]
    assert "1 buffer(s) or parameter(s) no node reads are not drawn (b_bn_num_batches_tracked)" in html


def test_gantt_labels_fit_their_bars():
    pytest.importorskip("matplotlib")
    import dfx.sim

    # Two long names side by side on one PE: each bar is 1/2 of the chart, far narrower than the
    # 145-character name, so each label is shortened with an ellipsis (never run into the next).
    long_a, long_b = "scaled_dot_product_attention_" * 5, "linear_projection_of_the_output_" * 5
    r = dfx.sim.simulate(({long_a: 1.0, long_b: 1.0}, [(long_a, long_b)]), pes=1, policy="static")
    svg = dfx.sim.render_gantt(r, "svg").decode()
    labels = re.findall(r"<!-- (.*?) -->", svg)
    assert long_a not in labels and long_b not in labels
    assert any(t.endswith("\u2026") and long_a.startswith(t[:-1]) for t in labels)
