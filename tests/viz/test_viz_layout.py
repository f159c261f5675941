"""dfx's own layered layout, and the DAG it draws where Graphviz's `dot` is absent."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from dfx.viz.layout import _crossings, layered_layout

from ._svg import SVG, groups


def _sizes(ids, w=40.0, h=20.0):
    return {i: (w, h) for i in ids}


def test_every_edge_points_down_and_boxes_in_a_layer_do_not_overlap():
    # a diamond with a long edge: a -> b -> c -> d and a -> d (spans three layers)
    ids = ["a", "b", "c", "d", "e"]
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a", "e")]
    lay = layered_layout(ids, _sizes(ids), edges)
    for a, b in edges:
        assert lay.centres[a][1] < lay.centres[b][1], (a, b)
    by_row: dict[float, list[str]] = {}
    for i, (_x, y) in lay.centres.items():
        by_row.setdefault(y, []).append(i)
    for row in by_row.values():
        xs = sorted(lay.centres[i][0] for i in row)
        assert all(b - a >= 40.0 for a, b in zip(xs, xs[1:])), row  # box width 40
    # the long edge a -> d is routed through one point per layer it crosses (b's and c's): 2 dummies
    assert len(lay.routes[("a", "d")]) == 2 + 2
    assert all(0 <= x <= lay.width and 0 <= y <= lay.height for x, y in lay.centres.values())


def test_a_source_sits_just_above_its_first_consumer():
    # w feeds only the last node of a chain of four: longest-path layering would put it at the top
    ids = ["x", "m1", "m2", "w", "m3"]
    lay = layered_layout(ids, _sizes(ids), [("x", "m1"), ("m1", "m2"), ("m2", "m3"), ("w", "m3")])
    assert lay.centres["w"][1] == lay.centres["m2"][1]


def test_crossings_are_counted_as_inversions():
    upper, lower = {"a": 0, "b": 1}, {"c": 0, "d": 1}
    assert _crossings(upper, [("a", "c"), ("b", "d")], lower) == 0
    assert _crossings(upper, [("a", "d"), ("b", "c")], lower) == 1  # the X
    # K(2,2): a-c, a-d, b-c, b-d cross once, whatever the order
    assert _crossings(upper, [("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")], lower) == 1


def test_a_crossing_that_can_be_undone_is_undone():
    # top row a, b; bottom row listed d, c with a -> c, b -> d: the barycenter sweep swaps them
    ids = ["a", "b", "d", "c"]
    lay = layered_layout(ids, _sizes(ids), [("a", "c"), ("b", "d")])
    ax, bx = lay.centres["a"][0], lay.centres["b"][0]
    cx, dx = lay.centres["c"][0], lay.centres["d"][0]
    assert (ax < bx) == (cx < dx)


def test_an_edge_against_the_order_is_laid_out_reversed_and_an_unknown_box_refused():
    lay = layered_layout(["a", "b"], _sizes("ab"), [("b", "a")])
    assert lay.routes[("b", "a")][0][1] > lay.routes[("b", "a")][-1][1]  # from b (below) up to a
    with pytest.raises(ValueError, match="'z'"):
        layered_layout(["a"], _sizes("a"), [("a", "z")])


@pytest.fixture
def no_dot(monkeypatch):
    monkeypatch.setattr("dfx.viz.dot.shutil.which", lambda name: None)


def test_without_dot_the_dag_is_drawn_by_dfx(mlp_doc, no_dot):
    from dfx.viz import render_pictures

    pictures = render_pictures(mlp_doc)
    assert set(pictures.files) == {"dag.dot", "dag.svg", "dag.png", "roofline.png", "roofline.svg", "report.html"}
    assert pictures.notes == ()
    assert pictures.files["dag.png"].startswith(b"\x89PNG")
    nodes = groups(pictures.files["dag.svg"], "node")
    assert {t for t in nodes if not t.startswith("legend_")} == {n["name"] for n in mlp_doc["nodes"]}
    # linear: 784 x 512 matmul on 1 row = 2 * 784 * 512 = 802,816 FLOPs, plus 512 bias adds = 803,328
    assert "FLOPs: 803,328" in pictures.files["dag.svg"]
    html = pictures.files["report.html"]
    assert "digraph" not in html.split('id="dfx-dag"')[1].split("</div>")[0]


def test_analyze_out_without_dot_writes_a_report_whose_dag_is_svg(tmp_path, monkeypatch):
    from tests.hostile._runner import run_main

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` anywhere on the PATH
    result = run_main(["analyze", "gpt2-block", "--hw", "h100", "--out", "out"], tmp_path)
    assert result.rc == 0, result.err
    out = tmp_path / "out"
    assert {"dag.svg", "dag.png", "report.html"} <= {p.name for p in out.iterdir()}
    import json

    doc = json.loads((out / "analysis.json").read_text())
    html = (out / "report.html").read_text()
    dag = re.search(r'<div class="dag" id="dfx-dag">\s*(<svg.*?</svg>)', html, re.S)
    assert dag, "the report's DAG is not an <svg>"
    root = ET.fromstring(dag.group(1).replace("<svg", f'<svg xmlns="{SVG[1:-1]}" xmlns:xlink="x"', 1))
    titles = {g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g") if "node" in (g.get("class") or "").split()}
    work = {n["name"] for n in doc["nodes"] if n["category"] != "view"}
    # a GPT-2 block: 4 linears, attention, 2 layer norms, gelu, 2 residual adds, at least
    assert {"linear", "linear_1", "linear_2", "linear_3", "scaled_dot_product_attention", "gelu"} <= work
    assert work <= titles
