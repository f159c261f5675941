"""Energy: hand arithmetic on a two-node graph; dataflow never moves more off-chip bytes than eager."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfx.arch.memory.energy import energy_report, levels_for
from dfx.arch.memory.tables import DRAM_J_PER_BYTE, flop_energy_j, sram_energy_per_byte_j
from dfx.costs.record import Category, Cost, CostedGraph, CostedNode
from dfx.hardware import load_profile
from dfx.ir import Edge, Graph, Node, ParameterInfo, TensorSpec

from tests.arch.memory.conftest import chain, two_level_profile


def test_two_node_graph_by_hand(toy_profile):
    # x (1024 fp16 = 2048 B) -> n1 -> n2 -> output; each node reads 2048 B, writes 2048 B, 1024 FLOPs.
    report = energy_report(chain([1024, 1024, 1024]), toy_profile)
    eager, flow = report.eager, report.dataflow
    # eager: 2 nodes x 4096 B off chip at 100 pJ/B = 819.2 nJ; compute 2048 FLOPs x 0.75 pJ = 1.536 nJ
    assert eager.offchip_bytes == 8192 and eager.onchip_bytes == 0
    assert eager.compute_j == pytest.approx(2048 * 0.75e-12)
    assert eager.total_j == pytest.approx(819.2e-9 + 1.536e-9)
    # dataflow: n1 reads the graph input off chip (2048 B) and writes n1 on chip (2048 B);
    # n2 reads n1 on chip (2048 B) and writes the graph output off chip (2048 B).
    assert flow.offchip_bytes == 4096 and flow.onchip_bytes == 4096
    assert flow.total_j == pytest.approx(409.6e-9 + 4.096e-9 + 1.536e-9)
    assert report.ratio == pytest.approx(820.736 / 415.232)
    doc = report.to_dict()
    assert doc["eager"]["total_j"] == pytest.approx(eager.total_j) and doc["ratio"] == pytest.approx(report.ratio)
    assert doc["dataflow"]["movement_j"] == {"SRAM": pytest.approx(4.096e-9), "DRAM": pytest.approx(409.6e-9)}


def test_spilled_tensor_goes_off_chip():
    # a 1,000-byte scratchpad cannot hold n1 (2048 B): its write and its read go off chip too
    report = energy_report(chain([1024, 1024, 1024]), two_level_profile(onchip_bytes=1000))
    assert report.dataflow.offchip_bytes == report.eager.offchip_bytes == 8192


def test_table_values_match_horowitz():
    # hardware.md 13.1: fp16 mult 1.1 + add 0.4 -> 0.75 pJ per FLOP; 1 MB SRAM 100 pJ / 8 B; DRAM 1.3 nJ / 8 B
    assert flop_energy_j("float16") == pytest.approx(0.75e-12)
    assert flop_energy_j("float32") == pytest.approx(2.3e-12)
    assert sram_energy_per_byte_j(2 * 2**20) == pytest.approx(12.5e-12)
    assert sram_energy_per_byte_j(8 * 1024) == pytest.approx(1.25e-12)
    assert DRAM_J_PER_BYTE == pytest.approx(162.5e-12)
    spyre = levels_for(load_profile("ibm-spyre"))  # LX 2 MB per core -> the 1 MB row; LPDDR5 -> DRAM
    assert (spyre.onchip, spyre.offchip) == ("LX", "LPDDR5")
    assert spyre.onchip_j_per_byte == pytest.approx(12.5e-12) and spyre.offchip_j_per_byte == pytest.approx(162.5e-12)


@st.composite
def random_dag(draw):
    n = draw(st.integers(1, 8))
    nodes = [
        Node("x", "placeholder", "x", outputs=(TensorSpec((draw(st.integers(1, 64)),), "float16"),), input_kind="input")
    ]
    params, costed = [], [None]
    for i in range(n):
        srcs = sorted(set(draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=2))))
        out = TensorSpec((draw(st.integers(1, 64)),), "float16")
        weight = ()
        if draw(st.booleans()):
            params.append(ParameterInfo(f"w{i}", TensorSpec((draw(st.integers(1, 64)),), "float16")))
            weight = (f"w{i}",)
        node = Node(
            f"n{i}",
            "call_function",
            "aten.add.Tensor",
            inputs=tuple(Edge(nodes[s].name) for s in srcs),
            outputs=(out,),
            params=weight,
        )
        nodes.append(node)
    nodes.append(Node("output", "output", "output", inputs=(Edge(nodes[-1].name),)))
    graph = Graph(tuple(nodes), tuple(params))
    index = graph.parameter_index
    costed = []
    for node in graph.nodes:
        if node.op != "call_function":
            costed.append(CostedNode(node, Cost.zeros(), Category.NONE))
            continue
        read = sum(s.nbytes for s in graph.input_specs(node)) + sum(index[p].spec.nbytes for p in node.params)
        costed.append(CostedNode(node, Cost(node.outputs[0].numel, read, node.outputs[0].nbytes), Category.ELEMENTWISE))
    return CostedGraph(graph, tuple(costed)), draw(st.sampled_from([0, 16, 100, 500, 10_000]))


@settings(max_examples=60, deadline=None)
@given(random_dag())
def test_dataflow_never_moves_more_offchip_bytes_than_eager(case):
    costed, capacity = case
    report = energy_report(costed, two_level_profile(onchip_bytes=max(capacity, 1)))
    for e, d in zip(report.eager_nodes, report.dataflow_nodes):
        assert d.offchip_bytes <= e.offchip_bytes
        assert d.offchip_bytes + d.onchip_bytes == e.offchip_bytes  # same bytes, moved elsewhere
    assert report.dataflow.offchip_bytes <= report.eager.offchip_bytes
    assert report.dataflow.total_j <= report.eager.total_j + 1e-18  # on-chip bytes cost less here
    assert math.isfinite(report.ratio)


@pytest.mark.parametrize("hw", ["ibm-spyre", "nvidia-h100-sxm", "groq-lpu"])
def test_builtin_model_dataflow_moves_fewer_offchip_bytes(gpt2_small, hw):
    report = energy_report(gpt2_small, load_profile(hw))
    assert report.dataflow.offchip_bytes < report.eager.offchip_bytes
    assert report.ratio > 1
