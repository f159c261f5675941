"""How each target lowers a mixture-of-experts layer: commitment (a fixed capacity) versus dynamism.

Routing is data the compiler cannot see: how many of a layer's T*k routed slots each of its E
experts receives is known only at run time. A machine decides what to do about it by how much of
its schedule it fixes ahead of time (:attr:`dfx.targets.Target.static_shapes`):

**Compile-time machines** (``xla``: TPUs; ``dataflow``: Groq, Cerebras, Spyre) need static shapes,
so each expert gets a buffer of a fixed capacity (GShard, Lepikhin et al. 2020, arXiv 2006.16668,
section 2.2 "expert capacity"; Switch Transformer, Fedus et al. 2021, arXiv 2101.03961, section
2.2 "capacity factor")::

    C        = ceil(capacity_factor * T * k / E)       slots per expert
    computed = E * C                                   every expert computes all its slots
    kept     = sum_e min(count_e, C)                   count_e: slots routed to expert e
    padding  = computed - kept                          wasted slots (FLOPs spent on nothing)
    dropped  = sum_e max(0, count_e - C)  = T*k - kept  tokens past a full buffer: not computed

The expert GEMMs then run ``computed`` rows instead of T*k (their FLOPs, activation reads and
outputs scale by ``computed / (T*k)``) and read every expert's weights (each buffer runs, full or
empty). ``padding_s``: the padded slots' share of the expert kernels' time
(``padding / computed`` of it; NB: exact where a kernel's time is proportional to its rows, an
upper bound where its weight reads dominate).

**Run-time machines** (``inductor``: GPUs, CPUs) size each expert's GEMM at run time: one grouped
GEMM per projection over exactly the routed rows, no padding and nothing dropped. What that costs is
the launch and scheduling of kernels sized on the device: each grouped GEMM, and each kernel that
computes its offsets (``histc``, ``cumsum``), pays the profile's per-kernel overhead
(``op_overhead_s``, sourced in the profile)::

    overhead_s = (grouped GEMMs + offset kernels) * op_overhead_s

Per-expert counts come from the request's routing (:class:`dfx.costs.moe.Routing`): uniform routing
at capacity factor >= 1 drops nothing; ``zipf:S`` overflows the busiest experts' buffers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Protocol

from dfx.costs.moe import MoeLayer, Routing, apply_routing, find_moe_layers, parse_routing, reprice_experts
from dfx.costs.record import CostedGraph
from dfx.errors import DfxError
from dfx.frozen import copy_with

__all__ = [
    "DEFAULT_CAPACITY_FACTOR",
    "LayerLowering",
    "MoeLowering",
    "attach_moe",
    "check_capacity_factor",
    "expert_capacity",
    "lower_layer",
    "lower_moe",
]

# The training default of the MoE layers GShard and Switch Transformer were built on
# (mesh_tensorflow/transformer/moe.py: capacity_factor_train=1.25, capacity_factor_eval=2.0); Switch's
# Table 1 compares 1.0, 1.25 and 2.0, and GShard's own capacity 2N/E is a factor of 2. dfx's default.
DEFAULT_CAPACITY_FACTOR = 1.25
_OFFSET_OPS = ("aten.histc", "aten.cumsum", "aten.bincount")  # kernels that size a grouped GEMM at run time


def expert_capacity(capacity_factor: float, tokens: int, top_k: int, experts: int) -> int:
    """Slots per expert, ``ceil(capacity_factor * T * k / E)`` (GShard section 2.2; Switch section 2.2).

    Examples
    --------
    >>> expert_capacity(1.5, 512, 2, 8)  # 1.5 * 1024 / 8
    192
    >>> expert_capacity(1.25, 1, 2, 8)  # one decode token: ceil(0.3125)
    1
    """
    return math.ceil(capacity_factor * tokens * top_k / experts - 1e-9)


@dataclass(frozen=True)
class LayerLowering:
    """One MoE layer as a target runs it (module docstring): slots, padding, drops, overhead kernels."""

    router: str
    experts: int
    top_k: int
    tokens: int
    capacity: int | None  # slots per expert; None where sized at run time
    computed_slots: int
    padding_slots: int
    dropped_slots: int
    overhead_kernels: int  # grouped GEMMs + offset kernels, each paying op_overhead_s (run time only)

    @property
    def routed_slots(self) -> int:
        return self.tokens * self.top_k

    @property
    def padding_fraction(self) -> float:
        """Padded slots over computed slots (the share of the expert FLOPs wasted)."""
        return self.padding_slots / self.computed_slots if self.computed_slots else 0.0

    @property
    def dropped_fraction(self) -> float:
        """Dropped slots over routed slots."""
        return self.dropped_slots / self.routed_slots if self.routed_slots else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "router": self.router,
            "experts": self.experts,
            "top_k": self.top_k,
            "tokens": self.tokens,
            "routed_slots": self.routed_slots,
            "capacity": self.capacity,
            "computed_slots": self.computed_slots,
            "padding_slots": self.padding_slots,
            "dropped_slots": self.dropped_slots,
            "padding_fraction": self.padding_fraction,
            "dropped_fraction": self.dropped_fraction,
            "overhead_kernels": self.overhead_kernels,
        }


@dataclass(frozen=True)
class MoeLowering:
    """Every MoE layer of a graph on one target, and what commitment or dynamism costs there."""

    target: str
    strategy: str  # "capacity" (fixed buffers) or "grouped-gemm" (sized at run time)
    routing: str
    capacity_factor: float
    layers: tuple[LayerLowering, ...]
    padding_s: float = 0.0  # the padded slots' share of the expert kernels' time
    overhead_s: float = 0.0  # run-time sizing: overhead kernels x op_overhead_s
    expert_s: float = 0.0  # the expert GEMM kernels' time, padding included

    @property
    def computed_slots(self) -> int:
        return sum(x.computed_slots for x in self.layers)

    @property
    def routed_slots(self) -> int:
        return sum(x.routed_slots for x in self.layers)

    @property
    def padding_fraction(self) -> float:
        computed = self.computed_slots
        return sum(x.padding_slots for x in self.layers) / computed if computed else 0.0

    @property
    def dropped_fraction(self) -> float:
        routed = self.routed_slots
        return sum(x.dropped_slots for x in self.layers) / routed if routed else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "strategy": self.strategy,
            "routing": self.routing,
            "capacity_factor": self.capacity_factor,
            "padding_fraction": self.padding_fraction,
            "dropped_fraction": self.dropped_fraction,
            "padding_s": self.padding_s,
            "overhead_s": self.overhead_s,
            "expert_s": self.expert_s,
            "layers": [x.to_dict() for x in self.layers],
        }


def check_capacity_factor(capacity_factor: float | None) -> float:
    """``capacity_factor`` as a float (``None``: :data:`DEFAULT_CAPACITY_FACTOR`); a :class:`DfxError`
    naming it unless it is a number > 0."""
    if capacity_factor is None:
        return DEFAULT_CAPACITY_FACTOR
    if not isinstance(capacity_factor, (int, float)) or not math.isfinite(capacity_factor) or capacity_factor <= 0:
        raise DfxError(
            f"--capacity-factor {capacity_factor!r}: must be a number > 0 (GShard and Switch use 1.0 to 2.0)"
        )
    return float(capacity_factor)


def lower_layer(
    layer: MoeLayer, counts: tuple[int, ...], static: bool, capacity_factor: float, offset_kernels: int = 0
) -> LayerLowering:
    """``layer`` with per-expert slot ``counts`` on a static (fixed capacity) or run-time target.

    Examples
    --------
    Mixtral-8x7B's layer over 512 tokens, top-2 of 8, capacity factor 1.5, uniform routing:

    >>> layer = MoeLayer("topk", ("up", "down"), "mlp.experts", 8, 2, 512, 0, 0)
    >>> x = lower_layer(layer, (128,) * 8, True, 1.5)
    >>> (x.capacity, x.computed_slots, x.padding_slots, x.dropped_slots)  # 8 * 192 = 1,536 for 1,024
    (192, 1536, 512, 0)
    """
    routed = layer.routed_slots
    if not static:
        return LayerLowering(
            layer.router, layer.num_experts, layer.top_k, layer.tokens, None, routed, 0, 0,
            len(layer.experts) + offset_kernels,
        )  # fmt: skip
    capacity = expert_capacity(capacity_factor, layer.tokens, layer.top_k, layer.num_experts)
    kept = sum(min(c, capacity) for c in counts)
    computed = layer.num_experts * capacity
    return LayerLowering(
        layer.router, layer.num_experts, layer.top_k, layer.tokens, capacity, computed, computed - kept,
        routed - kept, 0,
    )  # fmt: skip


def _offset_kernels(costed: CostedGraph, layer: MoeLayer) -> int:
    """Kernels computing a layer's grouped-GEMM offsets: the chain of histc/cumsum feeding its ``offs``."""
    graph = costed.graph
    seen: set[str] = set()
    for name in layer.experts:
        node = graph.node(name)
        frontier = [e.src for e in node.inputs[2:3]]  # offs, the third operand
        while frontier:
            src = graph.node(frontier.pop())
            if src.name in seen or not any(c.packet in _OFFSET_OPS for c in src.aten_calls):
                continue
            seen.add(src.name)
            frontier.extend(e.src for e in src.inputs)
    return len(seen)


def _pad_experts(costed: CostedGraph, lowered: dict[str, LayerLowering], layers: tuple[MoeLayer, ...]) -> CostedGraph:
    """Expert GEMM nodes computing ``computed_slots`` rows each and reading every expert's weights."""
    rows: dict[str, tuple[float, int]] = {}
    for layer in layers:
        rows.update(dict.fromkeys(layer.experts, (layer.num_experts, lowered[layer.router].computed_slots)))
    return reprice_experts(costed, rows)


class MoeTarget(Protocol):
    """What MoE lowering reads of a machine's target (:class:`dfx.targets.Target`)."""

    compiler: str  # inductor, xla, dataflow
    static_shapes: bool  # shapes fixed at compile time: a capacity per expert


def lower_moe(
    costed: CostedGraph,
    target: MoeTarget,
    routing: Routing | str | None = None,
    capacity_factor: float = DEFAULT_CAPACITY_FACTOR,
) -> tuple[CostedGraph, MoeLowering | None]:
    """``costed`` as ``target`` (a profile's :func:`dfx.targets.target_for`) runs its MoE layers, and what
    that lowering costs.

    Returns ``(costed, None)`` for a graph without MoE layers. On a compile-time target the expert
    GEMMs compute their fixed capacity (module docstring); on a run-time target they keep the routed
    rows, with the expert weights the routing touches (:func:`dfx.costs.moe.apply_routing`).

    Raises
    ------
    DfxError
        A capacity factor that is not a number > 0; a routing file that does not match the layers.
    """
    capacity_factor = check_capacity_factor(capacity_factor)
    routing = parse_routing(routing)
    layers = find_moe_layers(costed.graph)
    if not layers:
        return costed, None
    static = target.static_shapes
    lowered = {
        layer.router: lower_layer(
            layer,
            routing.expert_counts(layer.num_experts, layer.routed_slots),
            static,
            capacity_factor,
            0 if static else _offset_kernels(costed, layer),
        )
        for layer in layers
    }
    routed = apply_routing(costed, routing)
    out = _pad_experts(routed, lowered, layers) if static else routed
    moe = MoeLowering(
        target.compiler,
        "capacity" if static else "grouped-gemm",
        str(routing),
        capacity_factor,
        tuple(lowered.values()),
    )
    return out, moe


def attach_moe(result: Any, costed: CostedGraph, moe: MoeLowering | None) -> Any:
    """``result`` with ``extras["moe"]``: ``moe`` with its times from the result's node timings.

    ``expert_s``: the expert GEMM nodes' time; ``padding_s``: each layer's padded share of its
    experts' time; ``overhead_s``: the layers' overhead kernels times the profile's ``op_overhead_s``.
    """
    if moe is None:
        return result
    times = {t.name: t.time_s for t in result.nodes}
    layers = {x.router: x for x in find_moe_layers(costed.graph)}
    expert_s = padding_s = 0.0
    for x in moe.layers:
        layer_s = sum(times.get(n, 0.0) for n in layers[x.router].experts) if x.router in layers else 0.0
        expert_s += layer_s
        padding_s += layer_s * x.padding_fraction
    overhead_s = sum(x.overhead_kernels for x in moe.layers) * result.profile.op_overhead_s
    done = replace(moe, padding_s=padding_s, overhead_s=overhead_s, expert_s=expert_s)
    return copy_with(result, {"extras": MappingProxyType({**result.extras, "moe": done.to_dict()})})
