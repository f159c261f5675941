"""Energy of a costed graph: compute plus data movement, eager versus dataflow.

``E = sum_nodes FLOPs * e_flop(dtype) + sum_levels bytes(level) * e_byte(level)``
(concepts.md (i), "generic model for the tool"). Two execution models move a node's bytes
(its cost's ``bytes_read + bytes_written``) through different levels:

* **eager** (a GPU running one kernel per op): every byte goes through the off-chip level.
* **dataflow** (tensors forwarded on chip): an activation stays in the on-chip level when the
  lifetime placement (:func:`dfx.arch.memory.lifetime.lifetime`) keeps it there; spilled
  activations, the graph's inputs and outputs, and weights (unless every weight fits on chip
  beside the activations' peak, as on Groq or Cerebras) go off chip. A node's off-chip bytes are
  capped at its eager bytes, so dataflow never moves more off-chip bytes than eager.

Per-byte energy of a level: the profile's ``energy_per_byte_j`` where it gives one, else
:mod:`.tables` (Horowitz 2014, 45 nm: DRAM 162.5 pJ/B; SRAM by one instance's size). Per-FLOP
energy: :func:`.tables.flop_energy_j` at the node's dtype. On-chip accesses to registers and the
array are not counted (both models pay them alike).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dfx.arch.memory.capacity import offchip_memory, onchip_memory
from dfx.arch.memory.lifetime import Lifetime, lifetime, storage_roots
from dfx.arch.memory.tables import (
    DEVICE_PROCESS,
    DRAM_J_PER_BYTE,
    ENERGY_PROCESS,
    flop_energy_j,
    sram_energy_per_byte_j,
)
from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile
from dfx.schema.ids import ENERGY_SCHEMA

__all__ = ["EnergyBreakdown", "EnergyReport", "Levels", "NodeBytes", "energy_report", "levels_for", "split_bytes"]


@dataclass(frozen=True)
class Levels:
    """The two levels the energy model moves bytes through, with their J per byte."""

    onchip: str
    onchip_j_per_byte: float
    onchip_capacity_bytes: float
    offchip: str
    offchip_j_per_byte: float


def levels_for(profile: HardwareProfile) -> Levels:
    """On- and off-chip levels of ``profile`` and their energy per byte (profile first, else table)."""
    on, off = onchip_memory(profile), offchip_memory(profile) or profile.off_chip_level()
    on_j = (on.energy_per_byte_j or sram_energy_per_byte_j(on.capacity_per_instance_bytes)) if on else 0.0
    off_j = (off.energy_per_byte_j or DRAM_J_PER_BYTE) if off else DRAM_J_PER_BYTE
    return Levels(
        on.name if on else "on-chip", on_j, on.capacity_bytes if on else 0.0, off.name if off else "off-chip", off_j
    )


@dataclass(frozen=True)
class NodeBytes:
    """One node's bytes split between on-chip and off-chip, and its FLOPs."""

    name: str
    flops: int
    dtype: str
    onchip_bytes: int
    offchip_bytes: int


@dataclass(frozen=True)
class EnergyBreakdown:
    """Totals of one execution model: joules of compute and per level, and the bytes per level."""

    compute_j: float
    onchip_j: float
    offchip_j: float
    onchip_bytes: int
    offchip_bytes: int

    @property
    def total_j(self) -> float:
        return self.compute_j + self.onchip_j + self.offchip_j

    def to_dict(self, levels: Levels) -> dict[str, Any]:
        return {
            "total_j": self.total_j,
            "compute_j": self.compute_j,
            "movement_j": {levels.onchip: self.onchip_j, levels.offchip: self.offchip_j},
            "bytes": {levels.onchip: self.onchip_bytes, levels.offchip: self.offchip_bytes},
        }


def _eager(cn: CostedNode) -> NodeBytes:
    return NodeBytes(cn.name, cn.cost.flops, cn.dtype or "float32", 0, cn.cost.bytes)


def split_bytes(costed: CostedGraph, placement: Lifetime, weights_on_chip: bool) -> tuple[NodeBytes, ...]:
    """Each node's bytes in the dataflow model: off chip for weights (unless resident), spilled
    activations, graph inputs and outputs; on chip for everything else."""
    graph = costed.graph
    categories = {cn.name: cn.category.value for cn in costed.nodes}
    roots = storage_roots(graph, categories)
    where = {r.tensor: r for r in placement.ranges}
    params = graph.parameter_index
    out = []
    for cn in costed.nodes:
        node = cn.node
        weight = 0 if weights_on_chip else sum(params[p].spec.nbytes for p in node.params if p in params)
        reads = 0
        for spec, edge in zip(graph.input_specs(node), node.inputs):
            r = where.get(roots[edge.src])
            if r is not None and (not r.on_chip or r.graph_input):
                reads += spec.nbytes
        mine = where.get(node.name)
        writes = cn.cost.bytes_written if mine is not None and (not mine.on_chip or mine.graph_output) else 0
        off = min(cn.cost.bytes, weight + reads + writes)
        out.append(NodeBytes(cn.name, cn.cost.flops, cn.dtype or "float32", cn.cost.bytes - off, off))
    return tuple(out)


def _total(nodes: tuple[NodeBytes, ...], levels: Levels) -> EnergyBreakdown:
    on = sum(n.onchip_bytes for n in nodes)
    off = sum(n.offchip_bytes for n in nodes)
    compute = sum(n.flops * flop_energy_j(n.dtype) for n in nodes)
    return EnergyBreakdown(compute, on * levels.onchip_j_per_byte, off * levels.offchip_j_per_byte, on, off)


@dataclass(frozen=True)
class EnergyReport:
    """Eager and dataflow energy of one graph on one device, per node and in total."""

    hardware: str
    levels: Levels
    eager_nodes: tuple[NodeBytes, ...]
    dataflow_nodes: tuple[NodeBytes, ...]
    weights_on_chip: bool
    placement: Lifetime | None = None

    @property
    def eager(self) -> EnergyBreakdown:
        return _total(self.eager_nodes, self.levels)

    @property
    def dataflow(self) -> EnergyBreakdown:
        return _total(self.dataflow_nodes, self.levels)

    @property
    def ratio(self) -> float:
        """Eager energy over dataflow energy (> 1: forwarding on chip saves energy)."""
        d = self.dataflow.total_j
        return self.eager.total_j / d if d else 1.0

    def _node_j(self, n: NodeBytes) -> float:
        lv = self.levels
        return (
            n.flops * flop_energy_j(n.dtype)
            + n.onchip_bytes * lv.onchip_j_per_byte
            + n.offchip_bytes * lv.offchip_j_per_byte
        )

    def to_dict(self) -> dict[str, Any]:
        lv = self.levels
        nodes = [
            {
                "name": e.name,
                "flops": e.flops,
                "dtype": e.dtype,
                "eager_j": self._node_j(e),
                "dataflow_j": self._node_j(d),
                "eager_offchip_bytes": e.offchip_bytes,
                "dataflow_offchip_bytes": d.offchip_bytes,
                "dataflow_onchip_bytes": d.onchip_bytes,
            }
            for e, d in zip(self.eager_nodes, self.dataflow_nodes)
            if e.flops or e.offchip_bytes
        ]
        return {
            "schema": ENERGY_SCHEMA,
            "hardware": self.hardware,
            "process": ENERGY_PROCESS,
            "device_process": DEVICE_PROCESS.get(self.hardware),
            "energy_per_byte_j": {lv.onchip: lv.onchip_j_per_byte, lv.offchip: lv.offchip_j_per_byte},
            "weights_on_chip": self.weights_on_chip,
            "eager": self.eager.to_dict(lv),
            "dataflow": self.dataflow.to_dict(lv),
            "ratio": self.ratio,
            "nodes": nodes,
            "lifetime": self.placement.to_dict() if self.placement is not None else None,
        }


def energy_report(costed: CostedGraph, profile: HardwareProfile) -> EnergyReport:
    """Energy of ``costed`` on ``profile`` in the eager and the dataflow execution models.

    Weights are resident on chip in the dataflow model when the unique weight footprint plus the
    activations' peak fits the on-chip capacity; activations then get what the weights leave.
    """
    levels = levels_for(profile)
    categories = {cn.name: cn.category.value for cn in costed.nodes}
    free = levels.onchip_capacity_bytes
    first = lifetime(costed.graph, free, categories)
    weights_on_chip = costed.unique_parameter_bytes() + first.peak_bytes <= free
    placement = lifetime(costed.graph, free - costed.unique_parameter_bytes(), categories) if weights_on_chip else first
    eager = tuple(_eager(cn) for cn in costed.nodes)
    flow = split_bytes(costed, placement, weights_on_chip)
    return EnergyReport(profile.id, levels, eager, flow, weights_on_chip, placement)
