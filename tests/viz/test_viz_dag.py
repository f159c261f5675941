"""The DAG: every node drawn, colours from the document's bounds, the critical path marked.

Each test reads the SVG as drawn here: by Graphviz where `dot` is installed, else by dfx's own
layered layout (both write the same node and edge groups).
"""

from __future__ import annotations

import pytest

from dfx.viz import render_pictures
from dfx.viz.document import read_document
from dfx.viz.dot import graphviz_available, render_dot, to_dot
from dfx.viz.graph import build_display_graph
from dfx.viz.svgdag import dag_svg, draw_dag

from ._docs import layered_doc
from ._svg import groups

ENGINES = ["dfx", pytest.param("graphviz", marks=pytest.mark.skipif(not graphviz_available(), reason="no `dot`"))]


def _dag_svg(doc: dict, color_by: str, engine: str = "dfx") -> str:
    """Only the DAG (the roofline and report are not needed here, and take seconds)."""
    d = read_document(doc)
    graph = build_display_graph(d)
    if engine == "graphviz":
        return render_dot(to_dot(d, graph, color_by), "svg").decode()
    return dag_svg(draw_dag(d, graph, color_by))


def _legend_fill(nodes: dict[str, dict]) -> dict[str, str]:
    """bound -> the fill the legend shows for it (read from the picture, not from dfx's constants)."""
    return {title.removeprefix("legend_"): g["fill"] for title, g in nodes.items() if title.startswith("legend_")}


def test_every_graph_node_is_drawn(mlp_doc, mlp_pictures):
    nodes = groups(mlp_pictures.files["dag.svg"], "node")
    names = {n["name"] for n in mlp_doc["nodes"]}
    assert names <= set(nodes)
    assert {t for t in nodes if not t.startswith("legend_")} == names


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("hw_id", ["nvidia-h100-sxm", "ibm-spyre"])
def test_fill_colours_match_the_bounds(mlp_doc, hw_id, engine):
    svg = _dag_svg(mlp_doc, hw_id, engine)
    nodes = groups(svg, "node")
    legend = _legend_fill(nodes)
    assert len({legend["compute"], legend["memory"]}) == 2
    per = mlp_doc["hardware"][hw_id]["nodes"]
    worked = [n["name"] for n in mlp_doc["nodes"] if per[n["name"]]["bound"] != "none"]
    # the MLP's three linears and two relus do work; flatten is a view
    assert sorted(worked) == ["linear", "linear_1", "linear_2", "relu", "relu_1"]
    for name in worked:
        assert nodes[name]["fill"] == legend[per[name]["bound"]], name
        assert f"bound-{per[name]['bound']}" in nodes[name]["classes"]


def test_critical_path_edges_are_marked(mlp_doc, mlp_pictures):
    edges = groups(mlp_pictures.files["dag.svg"], "edge")
    path = mlp_doc["hardware"]["nvidia-h100-sxm"]["critical_path"]["nodes"]
    on_path = {f"{a}->{b}" for a, b in zip(path, path[1:])}
    assert on_path and on_path <= set(edges)
    assert {t for t, g in edges.items() if "critical" in g["classes"]} == on_path
    # a parameter feeding a linear is not on the path
    assert "critical" not in edges["p_net_1_weight->linear"]["classes"]


def test_every_node_has_a_tooltip_with_its_numbers(mlp_pictures):
    svg = mlp_pictures.files["dag.svg"]
    # linear: 784 x 512 matmul on 1 row = 2 * 784 * 512 = 802,816 FLOPs, plus 512 bias adds = 803,328
    assert "FLOPs: 803,328" in svg
    assert svg.count("xlink:title=") >= 14


def test_without_graphviz_the_dot_file_and_everything_else_are_written(mlp_doc, monkeypatch):
    monkeypatch.setattr("dfx.viz.dot.shutil.which", lambda name: None)
    pictures = render_pictures(mlp_doc)
    assert set(pictures.files) == {"dag.dot", "dag.svg", "dag.png", "roofline.png", "roofline.svg", "report.html"}
    assert pictures.files["dag.dot"].startswith("digraph")


@pytest.mark.parametrize("engine", ENGINES)
def test_repeated_layers_are_drawn_once(engine):
    svg = _dag_svg(layered_doc(32), "toy", engine)
    nodes = groups(svg, "node")
    # x, one linear and one relu for layer 0, output; the 31 other layers are folded
    assert {t for t in nodes if not t.startswith("legend_")} == {"x", "linear_0", "relu_0", "output"}
    assert "layers.0..31 \u00d732" in svg


def test_picture_names_are_known_before_drawing(mlp_doc, mlp_pictures):
    from dfx.viz.render import picture_names

    assert picture_names(mlp_doc) == list(mlp_pictures.files)
