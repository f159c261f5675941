"""What the fusion rules need to know about one graph node: its kind and its iteration space.

Inductor's scheduler decides fusion from each node's *group*: ``(numel, rnumel)``, the number of
output elements it iterates over and the length of the reduction it runs per element (1 for a
pointwise node). :class:`OpInfo` carries that, plus whether the node is a library ("extern") call
that no compiler fuses into: a GEMM, a convolution, a fused attention kernel.

Dimension letters: a reduction over ``R`` elements for each of ``N`` outputs has ``numel = N`` and
``rnumel = R``; a normalization (softmax, layer/RMS norm) has ``N`` rows of ``R`` elements and
writes ``N * R`` elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dfx.compile.program import KernelKind
from dfx.costs.record import Category, CostedNode
from dfx.ir import AtenCall

__all__ = ["OpInfo", "op_info"]

# aten overload packets that reduce (Inductor lowers them to a Reduction IR node). Source:
# torch/_inductor/lowering.py registers these through ``make_reduction`` / ``var_mean`` / ``softmax``
# decompositions. Scans (cumsum) and sorts are kept apart: Inductor does not fuse them like reductions.
_REDUCE_PACKETS = frozenset(
    {
        "aten.sum",
        "aten.nansum",
        "aten.mean",
        "aten.nanmean",
        "aten.amax",
        "aten.amin",
        "aten.max",
        "aten.min",
        "aten.prod",
        "aten.argmax",
        "aten.argmin",
        "aten.any",
        "aten.all",
        "aten.var",
        "aten.var_mean",
        "aten.std",
        "aten.std_mean",
        "aten.linalg_vector_norm",
        "aten.norm",
        "aten.logsumexp",
        "aten.aminmax",
        "aten.count_nonzero",
    }
)
_NORM_LAST_DIMS = frozenset(
    {
        "aten._softmax",
        "aten.softmax",
        "aten._safe_softmax",
        "aten._log_softmax",
        "aten.log_softmax",
        "aten.special_softmax",
        "aten.special_log_softmax",
    }
)
_NORM_SHAPED = frozenset({"aten.native_layer_norm", "aten.layer_norm", "aten.rms_norm", "aten._fused_rms_norm"})
# Eval-mode batch norm uses the running statistics: a pointwise scale and shift (Inductor lowers it so).
_POINTWISE_NORMS = frozenset({"aten._native_batch_norm_legit_no_training"})
_BATCH_NORMS = frozenset({"aten.native_batch_norm", "aten.batch_norm", "aten._native_batch_norm_legit"})
_ATTENTION_MARKERS = ("attention", "sdpa", "flash")
_CONV_MARKERS = ("convolution", "conv2d", "conv1d", "conv3d")


@dataclass(frozen=True)
class OpInfo:
    """One node as the fusion rules see it.

    ``pos`` is its index in the graph's topological order; ``numel``/``rnumel`` its iteration space
    (``rnumel == 1`` for pointwise work); ``extern`` marks library calls (GEMM, conv, SDPA);
    ``unknown`` names its aten calls that no cost rule covers (their cost is unknown, and fusion
    never takes such a node into a kernel with others).
    """

    name: str
    pos: int
    kind: KernelKind
    numel: int
    rnumel: int = 1
    extern: bool = False
    conv: bool = False
    unknown: tuple[str, ...] = ()

    @property
    def is_reduction(self) -> bool:
        return self.rnumel > 1 or self.kind is KernelKind.REDUCTION


def _main_call(node: CostedNode) -> AtenCall | None:
    """The aten call that decides the node's kind: the one with the highest-ranked category."""
    calls = node.node.aten_calls
    if not calls:
        return None
    by_op = {c.op: c for c in calls}
    for cost in sorted(node.calls, key=lambda c: -c.cost.flops - c.cost.bytes):
        if cost.category is node.category and cost.op in by_op:
            return by_op[cost.op]
    return calls[-1]


def _out_numel(call: AtenCall | None, node: CostedNode) -> int:
    outs = (call.outputs if call is not None and call.outputs else ()) or node.node.outputs
    return max((o.numel for o in outs), default=1)


def _norm_rnumel(call: AtenCall) -> int:
    """Elements per row of a normalization: the softmax dim, or the normalized shape's product."""
    x = call.inputs[0] if call.inputs else None
    if x is None or not x.shape:
        return 1
    if call.packet in _NORM_LAST_DIMS:
        dim = call.arg(1, "dim", -1)
        return x.shape[int(dim) % x.ndim] if isinstance(dim, int) else x.shape[-1]
    shape = call.arg(1, "normalized_shape", None)
    if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape):
        return max(1, math.prod(shape))
    return x.shape[-1]


def op_info(node: CostedNode, pos: int) -> OpInfo:
    """Classify ``node`` for fusion: kind, iteration space and whether it is a library call.

    Examples
    --------
    >>> from dfx.costs import annotate
    >>> from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec
    >>> x, s = TensorSpec((4, 8), "float32"), TensorSpec((4,), "float32")
    >>> g = Graph(name="g", nodes=(Node("x", "placeholder", "x", outputs=(x,), input_kind="input"),
    ...     Node("s", "call_function", "aten.sum.dim_IntList", inputs=(Edge("x"),), outputs=(s,),
    ...          aten_calls=(AtenCall("aten.sum.dim_IntList", (x, (1,)), (), (s,)),))))
    >>> info = op_info(annotate(g)["s"], 1)
    >>> (info.kind.value, info.numel, info.rnumel)  # 4 sums of 8 elements
    ('reduction', 4, 8)
    """
    info = _op_info(node, pos)
    return replace(info, unknown=node.unknown_ops) if node.unknown_ops else info


def _op_info(node: CostedNode, pos: int) -> OpInfo:
    call = _main_call(node)
    ops = " ".join(c.op for c in node.node.aten_calls).lower()
    numel = _out_numel(call, node)
    if node.category is Category.MATMUL:
        attention = any(m in ops for m in _ATTENTION_MARKERS)
        kind = KernelKind.ATTENTION if attention else KernelKind.GEMM
        return OpInfo(node.name, pos, kind, numel, 1, extern=True, conv=any(m in ops for m in _CONV_MARKERS))
    packet = call.packet if call is not None else ""
    if packet in _POINTWISE_NORMS or (packet in _BATCH_NORMS and call.arg(5, "training", True) is False):
        return OpInfo(node.name, pos, KernelKind.POINTWISE, numel)
    if packet in _NORM_LAST_DIMS or packet in _NORM_SHAPED:
        r = _norm_rnumel(call)
        return OpInfo(node.name, pos, KernelKind.REDUCTION, max(1, numel // r), r)
    if node.category is Category.NORMALIZATION or packet in _REDUCE_PACKETS:
        in_numel = max((t.numel for t in call.inputs), default=numel) if call is not None else numel
        r = max(1, in_numel // max(1, numel))
        return OpInfo(node.name, pos, KernelKind.REDUCTION, numel, r)
    if node.category is Category.MEMORY:
        return OpInfo(node.name, pos, KernelKind.MEMORY, numel)
    return OpInfo(node.name, pos, KernelKind.POINTWISE, numel)
