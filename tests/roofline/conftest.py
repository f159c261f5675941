"""Builders for small hand-costed graphs and profiles, so the roofline tests need no cost rules."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest

from dfx.costs.record import Category, Cost, CostedGraph, CostedNode
from dfx.hardware import HardwareProfile, parse_profile
from dfx.ir import Edge, Graph, Node, ParameterInfo, TensorSpec

# One node of a hand-built graph: (name, input node names, output specs, cost, parameter names)
NodeSpec = tuple[str, Sequence[str], Sequence[TensorSpec], Cost, Sequence[str]]


def build_costed(specs: Sequence[NodeSpec], parameters: Sequence[ParameterInfo] = ()) -> CostedGraph:
    """A CostedGraph from node specs; a node with no inputs and no cost is a placeholder."""
    nodes, costed = [], []
    for name, inputs, outputs, cost, params in specs:
        op = "placeholder" if not inputs and cost == Cost() else "call_function"
        node = Node(name, op, name, inputs=tuple(Edge(i) for i in inputs), outputs=tuple(outputs), params=tuple(params))
        nodes.append(node)
        costed.append(CostedNode(node, cost, Category.NONE if op == "placeholder" else Category.ELEMENTWISE))
    return CostedGraph(Graph(tuple(nodes), tuple(parameters)), tuple(costed))


def one_node(cost: Cost, dtype: str = "bfloat16", shape: tuple[int, ...] = (1,)) -> CostedGraph:
    """A placeholder ``x`` feeding one costed node ``op`` (output of ``shape`` and ``dtype``)."""
    spec = TensorSpec(shape, dtype)
    return build_costed([("x", (), (spec,), Cost(), ()), ("op", ("x",), (spec,), cost, ())])


def tiny_profile(**overrides: Any) -> HardwareProfile:
    """A made-up profile with round numbers: 1 TFLOP/s; 10 GB/s off chip; 100 GB/s, 1 MB on chip."""
    data: dict[str, Any] = {
        "id": "tiny",
        "name": "tiny test device",
        "vendor": "test",
        "kind": "dataflow",
        "peak_flop_per_s": {"bfloat16": "1 TFLOP/s"},
        "memory": [
            {
                "name": "SRAM",
                "capacity_bytes": "1 MB",
                "bandwidth_bytes_per_s": "100 GB/s",
                "managed": "software",
                "on_chip": True,
            },
            {
                "name": "DRAM",
                "capacity_bytes": "1 GB",
                "bandwidth_bytes_per_s": "10 GB/s",
                "managed": "software",
                "on_chip": False,
            },
        ],
        "compute": {},
        "scheduling": {"commitment": "static", "description": "test"},
        "memory_model": "scratchpad",
        "op_overhead_s": "1 us",
        "sources": {"peak_flop_per_s": "test", "memory": "test", "op_overhead_s": "test"},
    }
    data.update(overrides)
    return parse_profile(data, "tiny")


@pytest.fixture
def build() -> Callable[..., CostedGraph]:
    return build_costed


@pytest.fixture
def single() -> Callable[..., CostedGraph]:
    return one_node


@pytest.fixture
def tiny() -> Callable[..., HardwareProfile]:
    return tiny_profile
