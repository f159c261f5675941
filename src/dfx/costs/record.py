"""Typed, additive cost records and the costed graph.

A :class:`Cost` is what one aten call, one node or a whole graph costs: FLOPs, bytes read and bytes
written. Costs add, so totals over a graph are ``sum(costs, Cost.zeros())``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any

from dfx.ir import Graph, Node

# CostedGraph.meta key: {expert GEMM node: the share of its expert weights a step reads} (dfx.costs.moe)
EXPERT_READ_SHARE = "expert_read_share"
# CostedGraph.meta key: the footprint as stored after dfx.costs.precision.apply_precision re-priced it
STORED_WIDTHS = "stored_widths"

__all__ = [
    "CATEGORY_RANK",
    "CallCost",
    "Category",
    "Cost",
    "CostedGraph",
    "CostedNode",
    "Coverage",
    "UnknownOp",
    "UnknownOpWarning",
]


class Category(str, Enum):
    """What kind of work a node does (see ``docs/cost-model.md``)."""

    MATMUL = "matmul"  # every contraction: mm, bmm, addmm's product, linear, conv, einsum, attention
    ELEMENTWISE = "elementwise"  # pointwise ops, activations, bias adds, reductions (sum, mean, max)
    NORMALIZATION = "normalization"  # softmax, layer/RMS/batch/group norm
    MEMORY = "memory"  # copies, concatenation, gathers, embedding lookup: bytes, 0 FLOPs
    VIEW = "view"  # reshape, transpose, slicing views: 0 bytes, 0 FLOPs
    NONE = "none"  # placeholders, outputs, non-tensor bookkeeping

    def __str__(self) -> str:
        return self.value


# When a node dispatches to several aten calls, its category is the highest-ranked one among them.
CATEGORY_RANK: dict[Category, int] = {
    Category.MATMUL: 5,
    Category.NORMALIZATION: 4,
    Category.ELEMENTWISE: 3,
    Category.MEMORY: 2,
    Category.VIEW: 1,
    Category.NONE: 0,
}


@dataclass(frozen=True)
class Cost:
    """FLOPs and bytes of some work, additive.

    Parameters
    ----------
    flops : int
        Floating-point (or integer) operations; 1 FLOP = one scalar add or multiply, a MAC is 2.
    bytes_read, bytes_written : int
        Traffic in bytes: every read is counted, so a weight read three times counts three times.

    Examples
    --------
    >>> (Cost(10, 4, 4) + Cost(2, 0, 4)) * 2
    Cost(flops=24, bytes_read=8, bytes_written=16)
    """

    flops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    @classmethod
    def zeros(cls) -> Cost:
        return cls()

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.flops + other.flops, self.bytes_read + other.bytes_read, self.bytes_written + other.bytes_written
        )

    __radd__ = __add__

    def __mul__(self, k: int) -> Cost:
        return Cost(self.flops * k, self.bytes_read * k, self.bytes_written * k)

    __rmul__ = __mul__

    @property
    def bytes(self) -> int:
        """Bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP/byte; ``0.0`` when no bytes move."""
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class CallCost:
    """The cost of one aten call, as its rule computed it.

    ``category`` is the call's own category (the highest-ranked among its parts);
    ``flops_by_category`` splits its FLOPs, e.g. addmm's product (``matmul``) from its bias add
    (``elementwise``), so that the ``matmul`` total stays comparable with FlopCounterMode.
    """

    op: str
    category: Category
    cost: Cost
    flops_by_category: tuple[tuple[str, int], ...] = ()


class UnknownOpWarning(UserWarning):
    """Warned once per op name per :func:`dfx.costs.annotate` call when an aten op has no cost rule."""


@dataclass(frozen=True)
class UnknownOp:
    """An aten op with no cost rule: reported, never counted as a silent zero.

    ``reason`` says why: ``"no cost rule"``, or the error its rule raised on these arguments.
    """

    target: str
    count: int
    nodes: tuple[str, ...] = ()
    reason: str = "no cost rule"


@dataclass(frozen=True)
class Coverage:
    """How many of a graph's aten calls have a cost rule; the rest are listed in ``unknown``."""

    calls: int
    costed_calls: int
    unknown: tuple[UnknownOp, ...] = ()

    @property
    def fraction(self) -> float:
        """Costed calls over all calls; ``1.0`` for a graph with no aten calls."""
        return self.costed_calls / self.calls if self.calls else 1.0

    @property
    def complete(self) -> bool:
        return not self.unknown


@dataclass(frozen=True)
class CostedNode:
    """A node with its cost and category.

    ``cost.flops`` etc. come from the cost rules of the node's aten calls. ``unknown_ops`` lists the
    aten calls of this node that had no rule: their cost is unknown, not zero.
    """

    node: Node
    cost: Cost
    category: Category
    flops_by_category: tuple[tuple[str, int], ...] = ()
    unknown_ops: tuple[str, ...] = ()
    calls: tuple[CallCost, ...] = ()  # one per costed aten call, in dispatch order

    @property
    def name(self) -> str:
        return self.node.name

    @cached_property  # read per node by every pass and every profile; the node is frozen
    def dtype(self) -> str | None:
        """The dtype the node computes in: the peak FLOP/s a roofline uses for it is this dtype's.

        For a contraction, its first operand's dtype: a bf16 matmul with an fp32 output
        (``mm(..., out_dtype=float32)``) runs on bf16 units, an int8 ``_int_mm`` on int8 units.
        Otherwise the dtype of its first floating-point output, else its first output.
        """
        matmul_ops = {c.op for c in self.calls if c.category is Category.MATMUL}
        for call in self.node.aten_calls:
            if call.op in matmul_ops and call.inputs:
                return call.inputs[0].dtype
        outs = self.node.outputs
        for spec in outs:
            if spec.dtype.startswith(("float", "bfloat", "complex")):
                return spec.dtype
        return outs[0].dtype if outs else None


@dataclass(frozen=True)
class CostedGraph:
    """A :class:`Graph` with a :class:`CostedNode` per node, in the graph's order."""

    graph: Graph
    nodes: tuple[CostedNode, ...]
    unknown_ops: tuple[UnknownOp, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def _index(self) -> dict[str, CostedNode]:
        return {n.name: n for n in self.nodes}

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, name: str) -> CostedNode:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in graph {self.graph.name!r}") from None

    @property
    def total(self) -> Cost:
        """Sum of every node's cost (traffic: re-reads counted)."""
        return sum((n.cost for n in self.nodes), Cost.zeros())

    def flops_by_category(self) -> dict[str, int]:
        out: dict[str, int] = {c.value: 0 for c in Category if c is not Category.NONE}
        for n in self.nodes:
            for cat, flops in n.flops_by_category:
                out[cat] = out.get(cat, 0) + flops
        return out

    def unique_parameter_bytes(self) -> int:
        """Footprint of parameters and buffers, each storage once (a tied weight counts once).

        On a graph re-priced to another weight width (:func:`dfx.costs.precision.apply_precision`,
        ``--weight-dtype`` or ``--dtype fp8``), the parameters as stored, ``ceil(count * bits / 8)``
        (buffers at the capture width).
        """
        if STORED_WIDTHS not in self.meta:
            return sum(p.spec.nbytes for p in self.graph.parameters)
        stored = self.meta[STORED_WIDTHS]
        buffers = sum(p.spec.nbytes for p in self.graph.parameters if p.kind != "parameter")
        return math.ceil(self.unique_parameter_count() * stored["weight_bits"] / 8) + buffers

    def unique_parameter_count(self) -> int:
        """Elements of the parameters (not buffers), each storage once."""
        return sum(p.spec.numel for p in self.graph.parameters if p.kind == "parameter")

    def parameter_traffic_bytes(self) -> int:
        """Bytes of parameter reads summed over nodes: a weight read by three nodes counts three times.

        An MoE expert GEMM reads only the experts its tokens are routed to: its weights count at the
        share :func:`dfx.costs.moe.apply_routing` expects a step to touch (``meta[EXPERT_READ_SHARE]``;
        batch-1 decode of top-2 of 8: a quarter), so a decode step's figure is its dense weights plus
        the touched experts'.
        """
        index = self.graph.parameter_index
        share = self.meta[EXPERT_READ_SHARE] if EXPERT_READ_SHARE in self.meta else {}
        return sum(
            math.ceil(index[p].spec.nbytes * (share[n.name] if n.name in share else 1.0))
            for n in self.graph.nodes
            for p in n.params
        )
