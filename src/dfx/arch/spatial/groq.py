"""Groq TSP across chips: how many chips the weights need, where each node runs, what a token costs.

A TSP has no DRAM: a model runs from the SRAM of as many chips as its weights need
(``reference/hardware.md`` section 8; ISCA 2022 abstract: global memory is the chips' SRAM)::

    chips_needed = ceil(weight_bytes / sram_bytes_per_chip)

dfx fills the chips in graph order (a pipeline: chip k holds the k-th slice of the weights) and
charges each chip-to-chip crossing ``hops * link_latency + bytes / c2c_bandwidth`` to the node that
receives the data. One node's time on its chip is :func:`dfx.arch.spatial.tsp.node_cycles`; a node
too big for one chip's SRAM is split over ``ceil(working_set / sram)`` chips, each doing its share,
and its output gathered over C2C (:func:`split_ways`).

For a decoder, one token passes every chip once::

    stage_s   = cycles(weights_per_chip, batch) / clock           # each chip's slice of the model
    hop_s     = link_latency + batch * hidden * act_bytes / c2c_bandwidth
    latency_s = chips * stage_s + (chips - 1) * hop_s
    tokens/s  = in_flight * batch / max(latency_s, in_flight * (stage_s + hop_s))

``in_flight`` batches share the pipeline (each batch's next token needs its previous one); with one
batch in flight it is ``batch / latency_s``; with enough, the slowest stage sets the rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from dfx.arch.spatial.tsp import NodeCycles, TspOrganisation, node_cycles
from dfx.costs.record import CostedGraph, CostedNode
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.roofline.bound import Bound
from dfx.roofline.latency import NodeTiming

__all__ = [
    "DecoderThroughput",
    "chip_assignment",
    "chips_needed",
    "decoder_throughput",
    "input_crossings",
    "split_ways",
    "tsp_cycles",
    "working_set",
]


def chips_needed(weight_bytes: float, sram_bytes_per_chip: float) -> int:
    """Chips whose SRAM together holds ``weight_bytes``; at least 1.

    Examples
    --------
    70 B parameters in bf16 on TSPs of 220 MiB: 2 * 70e9 / (220 * 2**20) = 606.9 -> 607.

    >>> chips_needed(2 * 70e9, 220 * 2**20)
    607
    """
    if weight_bytes < 0 or sram_bytes_per_chip <= 0:
        raise DfxError(
            f"chips_needed: weight bytes must be >= 0 and SRAM per chip > 0, got {weight_bytes}, {sram_bytes_per_chip}"
        )
    return max(1, math.ceil(weight_bytes / sram_bytes_per_chip))


def chip_assignment(costed: CostedGraph, sram_bytes_per_chip: float) -> dict[str, int]:
    """The chip each node runs on: chips filled with weights in graph order.

    A node runs on the chip holding the last byte of the new weights it reads; a node that reads no
    new weights stays on the chip of the node before it. A weight read twice is placed once.
    """
    index = costed.graph.parameter_index
    placed: set[str] = set()
    filled, chip, out = 0, 0, {}
    for cn in costed.nodes:
        params = cn.node.params
        new = [p for p in dict.fromkeys(params) if p not in placed] if params else None
        if new:
            placed.update(new)
            filled += sum(index[p].spec.nbytes for p in new)
            chip = max(chip, math.ceil(filled / sram_bytes_per_chip) - 1)
        out[cn.name] = chip
    return out


_STATE_KINDS = ("parameter", "buffer", "constant")


def _is_state(node) -> bool:
    """A parameter, buffer or constant: placed with its user, never sent between chips."""
    return node.op == "get_attr" or (node.op == "placeholder" and node.input_kind in _STATE_KINDS)


def input_crossings(
    costed: CostedNode, chips: dict[str, int], costed_graph: CostedGraph, org: TspOrganisation
) -> dict[str, float]:
    """Producer -> seconds to bring its tensors to ``costed``'s chip: hops x latency + bytes / C2C bandwidth.

    Only producers on another chip appear; weights (parameter placeholders) never cross.
    """
    graph, here = costed_graph.graph, chips[costed.name]
    out: dict[str, float] = {}
    for src, index in dict.fromkeys((e.src, e.index) for e in costed.node.inputs):
        if _is_state(graph.node(src)):
            continue  # a weight lives in the SRAM of the chip that uses it
        hops = abs(here - chips[src])
        if hops:
            outs = graph.node(src).outputs
            nbytes = outs[index].nbytes if index < len(outs) else 0
            out[src] = out.get(src, 0.0) + hops * org.chip_link_latency_s + nbytes / org.c2c_bytes_per_s
    return out


def _timing(
    cycles: NodeCycles,
    link_s: float,
    org: TspOrganisation,
    base: NodeTiming,
    bytes_by_level: dict[str, int] | None = None,
) -> NodeTiming:
    """``base`` re-timed: cycles / clock, plus the chip-to-chip crossings (in ``overhead_s`` with the fill);
    its bytes by level replaced by ``bytes_by_level`` if given."""
    if cycles.slice is None:
        return base
    time_s, compute_s, memory_s, overhead_s = _seconds(cycles, link_s, org)
    levels = {} if bytes_by_level is None else {"bytes_by_level": MappingProxyType(bytes_by_level)}
    return base.with_(
        bound=Bound.COMPUTE if cycles.compute_bound else Bound.MEMORY,
        time_s=time_s,
        compute_time_s=compute_s,
        memory_time_s=memory_s,
        overhead_s=overhead_s,
        **levels,
    )


def _seconds(cycles: NodeCycles, link_s: float, org: TspOrganisation) -> tuple[float, float, float, float]:
    """A node's ``(time_s, compute_time_s, memory_time_s, overhead_s)`` from its cycles and crossings."""
    clock = org.clock_hz
    return (
        cycles.total / clock + link_s,
        max(cycles.mxm, cycles.vxm) / clock,
        max(cycles.mem, cycles.c2c) / clock,
        cycles.fill / clock + link_s,
    )


def working_set(costed: CostedNode, costed_graph: CostedGraph) -> int:
    """Bytes a node needs in SRAM at once: its distinct activation inputs, its outputs, its weights.

    A weight that also arrives as an input edge (a parameter placeholder) is counted once.
    """
    graph, node = costed_graph.graph, costed.node
    inputs = 0
    for src, index in {(e.src, e.index): None for e in node.inputs}:  # each tensor once, in order
        producer = graph.node(src)
        if not _is_state(producer) and index < len(producer.outputs):
            inputs += producer.outputs[index].nbytes
    outputs = sum(spec.nbytes for spec in node.outputs)
    if not node.params:
        return inputs + outputs
    params = graph.parameter_index
    return inputs + outputs + sum(params[p].spec.nbytes for p in dict.fromkeys(node.params))


def split_ways(costed: CostedNode, costed_graph: CostedGraph, org: TspOrganisation) -> int:
    """Chips one node spreads over: ``ceil(working set / SRAM per chip)``, at least 1.

    A node whose inputs, outputs and weights do not fit one chip's SRAM (a large embedding or LM
    head) runs split over the chips holding its weights, as the chips' SRAM is the only memory.
    A weight itself (a parameter placeholder) is 1: it stays in the SRAM of the chips that hold it,
    and its users read it there; it is never gathered (a 262 MB embedding table's placeholder was
    charged a 276 us gather over C2C per token, ahead of the first layer).
    """
    if _is_state(costed.node):
        return 1
    return max(1, math.ceil(working_set(costed, costed_graph) / org.sram_bytes))


def gather_s(costed: CostedNode, ways: int, org: TspOrganisation) -> float:
    """Seconds to gather a split node's output: ``(ways - 1) / ways`` of it over C2C, plus one crossing."""
    if ways == 1:
        return 0.0
    out_bytes = sum(spec.nbytes for spec in costed.node.outputs)
    return org.chip_link_latency_s + out_bytes * (ways - 1) / ways / org.c2c_bytes_per_s


def tsp_cycles(costed: CostedNode, costed_graph: CostedGraph, org: TspOrganisation) -> tuple[NodeCycles, float]:
    """A node's cycles and the seconds of its split's gather.

    Every byte a node touches is in SRAM: its own chip's when its working set fits, else that of the
    ``ways`` chips it is split over (:func:`split_ways`). So no byte spills to the C2C links here;
    they carry only crossings between chips (:func:`input_crossings`) and a split's gather.
    """
    ways = split_ways(costed, costed_graph, org)
    return node_cycles(costed, org, costed.cost.bytes, ways=ways), gather_s(costed, ways, org)


@dataclass(frozen=True)
class DecoderThroughput:
    """Tokens per second of a decoder spread over TSPs (formulas in the module docstring)."""

    chips: int
    batch: int
    in_flight: int
    stage_s: float
    hop_s: float
    latency_s: float
    tokens_per_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "chips": self.chips,
            "batch": self.batch,
            "in_flight": self.in_flight,
            "stage_s": self.stage_s,
            "hop_s": self.hop_s,
            "token_latency_s": self.latency_s,
            "tokens_per_s": self.tokens_per_s,
        }


# The largest published decoders have about 2e12 parameters; 1e15 leaves room and keeps chip
# counts within int64.
MAX_PARAMETERS = 1e15


def decoder_throughput(
    profile: HardwareProfile,
    parameters: float,
    hidden_size: int,
    *,
    batch: int = 1,
    bytes_per_parameter: float = 2.0,
    in_flight: int = 1,
    dtype: str = "float16",
) -> DecoderThroughput:
    """Tokens per second of a decoder of ``parameters`` weights on as many TSPs as they need.

    Each chip holds an equal slice of the weights and, per token, reads all of it from SRAM and does
    ``batch * parameters / chips`` MACs on the MXM; the activation passed on is ``batch * hidden``
    values of ``bytes_per_parameter`` bytes. Attention over the KV cache is not counted (NB: it
    adds SRAM reads that grow with context length). ``dtype`` sets the MXM's rate
    (:meth:`TspOrganisation.mxm_passes`: fp16 runs at a quarter of the int8 MACs per cycle).

    Raises
    ------
    DfxError
        On a non-positive size, batch or ``in_flight``, more batches in flight than the pipeline has
        chips (stages), or a profile without the TSP figures.
    """
    if not math.isfinite(parameters) or parameters > MAX_PARAMETERS:
        raise DfxError(
            f"decoder_throughput: parameters must be a finite count up to {MAX_PARAMETERS:.0e}, got {parameters!r}"
        )
    if parameters <= 0 or hidden_size < 1 or batch < 1 or in_flight < 1 or bytes_per_parameter <= 0:
        raise DfxError(
            "decoder_throughput: parameters, hidden size, batch, in_flight and bytes per parameter must be positive"
        )
    org = TspOrganisation.from_profile(profile)
    chips = chips_needed(parameters * bytes_per_parameter, org.sram_bytes)
    if in_flight > chips:  # one batch per chip fills the pipeline; more have no stage to be in
        raise DfxError(
            f"--in-flight {in_flight:,} is more batches than the {chips:,}-chip pipeline holds (one per "
            f"chip); give at most {chips:,}"
        )
    per_chip = parameters / chips
    busy = max(
        org.cycles_for_bytes(per_chip * bytes_per_parameter, org.sram_bytes_per_s),  # read the slice
        math.ceil(batch * per_chip / org.macs_per_cycle * org.mxm_passes(dtype)),  # batch x weights MACs
    )
    stage = (busy + org.fill_cycles) / org.clock_hz
    hop = org.chip_link_latency_s + batch * hidden_size * bytes_per_parameter / org.c2c_bytes_per_s
    latency = chips * stage + (chips - 1) * hop
    rate = in_flight * batch / max(latency, in_flight * (stage + hop))
    return DecoderThroughput(chips, batch, in_flight, stage, hop, latency, rate)
