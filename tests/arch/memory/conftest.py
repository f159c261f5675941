"""Shared fixtures: small hand-built graphs and a synthetic two-level profile with round energies."""

from __future__ import annotations

import pytest

from dfx.costs.record import Category, Cost, CostedGraph, CostedNode
from dfx.hardware import parse_profile
from dfx.ir import Edge, Graph, Node, TensorSpec


def two_level_profile(onchip_bytes: float = 1e6, onchip_pj: float = 1.0, offchip_pj: float = 100.0):
    """A device with an SRAM of ``onchip_bytes`` (one instance) and a DRAM, at round pJ per byte."""
    return parse_profile(
        {
            "id": "toy",
            "name": "toy",
            "vendor": "test",
            "kind": "dataflow",
            "peak_flop_per_s": {"float16": 1e12},
            "memory": [
                {
                    "name": "SRAM",
                    "capacity_bytes": onchip_bytes,
                    "bandwidth_bytes_per_s": 1e12,
                    "managed": "software",
                    "on_chip": True,
                    "energy_per_byte_j": onchip_pj * 1e-12,
                },
                {
                    "name": "DRAM",
                    "capacity_bytes": 1e9,
                    "bandwidth_bytes_per_s": 1e11,
                    "managed": "software",
                    "on_chip": False,
                    "energy_per_byte_j": offchip_pj * 1e-12,
                },
            ],
            "compute": {"cores": 1},
            "scheduling": {"commitment": "static", "description": "test"},
            "memory_model": "scratchpad",
            "op_overhead_s": 0,
            "sources": {"memory": "test values", "peak_flop_per_s": "test", "compute": "test", "op_overhead_s": "test"},
        }
    )


def chain(sizes: list[int], dtype: str = "float16") -> CostedGraph:
    """x -> n1 -> n2 -> ... -> output; node i reads its input and writes ``sizes[i]`` elements.

    Each node's cost is read + write of its tensors and one FLOP per output element.
    """
    specs = [TensorSpec((s,), dtype) for s in sizes]
    nodes = [Node("x", "placeholder", "x", outputs=(specs[0],), input_kind="input")]
    costed = [CostedNode(nodes[0], Cost.zeros(), Category.NONE)]
    for i in range(1, len(sizes)):
        n = Node(f"n{i}", "call_function", "aten.relu.default", inputs=(Edge(nodes[-1].name),), outputs=(specs[i],))
        nodes.append(n)
        costed.append(CostedNode(n, Cost(sizes[i], specs[i - 1].nbytes, specs[i].nbytes), Category.ELEMENTWISE))
    out = Node("output", "output", "output", inputs=(Edge(nodes[-1].name),))
    nodes.append(out)
    costed.append(CostedNode(out, Cost.zeros(), Category.NONE))
    return CostedGraph(Graph(tuple(nodes)), tuple(costed))


@pytest.fixture
def toy_profile():
    return two_level_profile()


@pytest.fixture(scope="session")
def gpt2_small():
    """gpt2-block at seq 64 in bf16, captured once for the session."""
    from dfx.arch.memory.api import capture_costed

    return capture_costed("gpt2-block", dtype="bf16", seq=64)
