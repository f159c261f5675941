"""Folding repeated layers and collapsing to module level, on hand-built documents."""

from __future__ import annotations

from dfx.viz.document import read_document
from dfx.viz.graph import Level, build_display_graph
from dfx.viz.layers import Fold, find_folds

from ._docs import layered_doc


def test_identical_layers_fold_onto_layer_zero():
    doc = read_document(layered_doc(3))
    folding = find_folds(doc)
    assert folding.folds == (Fold("layers", 0, 2, 3),)
    assert folding.representative["linear_2"] == "linear_0"
    assert folding.representative["relu_1"] == "relu_0"
    assert folding.representative["x"] == "x"


def test_a_layer_with_another_shape_is_not_a_repeat():
    assert find_folds(read_document(layered_doc(3, odd_shape_in=1))).folds == ()


def test_folded_op_graph_links_layer_zero_once_and_drops_the_repeat_edges():
    graph = build_display_graph(read_document(layered_doc(3)), Level.OP)
    assert [b.id for b in graph.boxes] == ["x", "linear_0", "relu_0", "output"]
    # x -> linear_0, linear_0 -> relu_0, relu_2 -> output (drawn from relu_0); relu_0 -> linear_1 is the repeat
    assert {(link.src, link.dst) for link in graph.links} == {
        ("x", "linear_0"),
        ("linear_0", "relu_0"),
        ("relu_0", "output"),
    }
    # numbers are per instance: one linear is 100 FLOPs
    assert next(b for b in graph.boxes if b.id == "linear_0").flops == 100


def test_unfolded_graph_keeps_every_node():
    graph = build_display_graph(read_document(layered_doc(3)), Level.OP, fold=False)
    assert len(graph.boxes) == 1 + 2 * 3 + 1


def test_module_level_one_box_per_module_run():
    doc = layered_doc(2)
    for n in doc["nodes"]:
        if n["name"].startswith("relu"):
            n["module_path"] = n["module_path"].replace(".act", ".fc")  # relu inside the fc module
    graph = build_display_graph(read_document(doc), Level.MODULE, fold=False)
    boxes = {b.title: b for b in graph.boxes}
    assert set(boxes) == {"x", "layers.0.fc", "layers.1.fc", "output"}
    assert boxes["layers.0.fc"].members == ("linear_0", "relu_0")
    assert boxes["layers.0.fc"].flops == 100 + 1
    # on the toy profile the linear takes 100 ns and the relu 10 ns: the box is compute-bound
    assert boxes["layers.0.fc"].hw["toy"].bound == "compute"
    assert abs(boxes["layers.0.fc"].hw["toy"].time_s - 110e-9) < 1e-15


def test_critical_links_follow_the_path():
    graph = build_display_graph(read_document(layered_doc(1)), Level.OP)
    assert all(link.critical["toy"] for link in graph.links)
