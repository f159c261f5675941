"""Mixture-of-experts ops: grouped GEMMs (``_grouped_mm``) and the token histogram (``histc``).

An MoE layer sorts its T*k routed (token, expert) slots by expert and runs every expert's GEMM in
one grouped call (transformers 5's ``grouped_mm_experts_forward``, ``integrations/moe.py``):

    _grouped_mm(a [S, K], b [E, K, N], offs [E]) -> [S, N]     S = T*k routed rows, offs the ends
                                                                of each expert's rows (2D x 3D)
    _grouped_mm(a [M, S], b [S, N], offs [E])    -> [E, M, N]  the weight gradient (2D x 2D)
    _grouped_mm(a [E, M, K], b [K, S], offs [E]) -> [M, S]     (3D x 2D)
    _grouped_mm(a [E, M, K], b [E, K, N])        -> [E, M, N]  a batch of E GEMMs (3D x 3D)

FLOPs are ``2*S*K*N`` over the routed rows only (each row belongs to one group: the groups
partition S, so their products sum to one ``[S, K] x [K, N]``), category ``matmul``; rows past
``offs[-1]`` are ignored by the kernel (``torch.nn.functional.grouped_mm``'s docstring), and dfx
counts every row of ``a`` as routed. ``torch.nn.functional.grouped_mm`` dispatches to this same op,
and so does autograd's backward (a ``_grouped_mm`` per gradient), so one rule covers all three.
Where transformers cannot call it (fp32 weights under torch.export: ``_can_use_grouped_mm``) it
calls its own custom op ``transformers::grouped_mm_fallback`` (same operands, same rule) and, in a
joint graph, ``transformers::grouped_mm_fallback_backward`` (both gradients: twice the FLOPs).

Bytes = ``a`` + the weights read + the output. Which experts' weights a step reads depends on the
routing: this rule, a pure function of the call, charges ``min(E, S)`` experts (every routed row
could pick a different expert, and no more than E exist): an upper bound, exact for one token
(S = k distinct experts) and for S >> E. :func:`dfx.costs.moe.apply_routing` then replaces it by
the expected number of distinct experts under the request's routing (uniform by default).

``histc`` counts the sorted expert ids into E bins (the per-expert token counts whose running sum
is ``offs``). It is costed as a reduction: it reads its n inputs and writes its bins, and does
``HISTC_FLOPS_PER_ELEMENT`` = 3 operations per input (the bin index ``(x - min) * scale``, a
subtract and a multiply, then one add to the bin), category ``elementwise`` like the reductions of
``rules_reduce``.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import contraction_flops, read_bytes, tensor_arg, write_bytes
from dfx.ir import AtenCall, TensorSpec

__all__ = ["HISTC_FLOPS_PER_ELEMENT", "GroupedGemm", "grouped_gemm"]

M, E = Category.MATMUL, Category.ELEMENTWISE
HISTC_FLOPS_PER_ELEMENT = 3  # bin index (x - min) * scale: 1 subtract + 1 multiply; the bin's count: 1 add


class GroupedGemm:
    """The shape of one grouped GEMM: ``rows`` routed rows of ``[rows, k] x [k, n]`` split over ``groups``.

    ``weight`` is the operand holding one matrix per group (``[E, K, N]``), or ``None`` when both
    operands are jagged (the 2D x 2D weight gradient, whose output is per group instead).
    """

    __slots__ = ("groups", "k", "n", "rows", "weight")

    def __init__(self, rows: int, k: int, n: int, groups: int, weight: TensorSpec | None) -> None:
        self.rows, self.k, self.n, self.groups, self.weight = rows, k, n, groups, weight

    @property
    def flops(self) -> int:
        return contraction_flops(1, self.rows, self.k, self.n)  # 2 * S * K * N

    @property
    def bytes_per_group(self) -> int:
        """Bytes of one group's weight matrix (0 without a weight operand)."""
        return read_bytes(self.weight) // self.groups if self.weight is not None and self.groups else 0


def grouped_gemm(call: AtenCall) -> GroupedGemm:
    """The :class:`GroupedGemm` of a ``_grouped_mm`` / ``_scaled_grouped_mm`` call.

    Raises
    ------
    ValueError
        If an operand is not a tensor or the ranks are not 2D/3D.

    Examples
    --------
    >>> a = TensorSpec((256, 64), "bfloat16")
    >>> b = TensorSpec((8, 64, 32), "bfloat16")
    >>> g = grouped_gemm(AtenCall("aten._grouped_mm.default", (a, b), (), (TensorSpec((256, 32), "bfloat16"),)))
    >>> (g.rows, g.k, g.n, g.groups, g.flops)  # 2 * 256 * 64 * 32
    (256, 64, 32, 8, 1048576)
    """
    a, b = tensor_arg(call, 0, "mat_a") or tensor_arg(call, 0, "self"), tensor_arg(call, 1, "mat_b")
    if a is None or b is None:
        raise ValueError(f"{call.op}: mat_a and mat_b must be tensors")
    if a.ndim == 2 and b.ndim == 3:  # [S, K] x [E, K, N] -> [S, N]
        return GroupedGemm(a.shape[0], a.shape[1], b.shape[2], b.shape[0], b)
    if a.ndim == 2 and b.ndim == 2:  # [M, S] x [S, N] -> [E, M, N]: S jagged on both sides
        groups = call.outputs[0].shape[0] if call.outputs and call.outputs[0].ndim == 3 else 1
        return GroupedGemm(a.shape[1], a.shape[0], b.shape[1], groups, None)  # 2 * S * M * N
    if a.ndim == 3 and b.ndim == 2:  # [E, M, K] x [K, S] -> [M, S]: the columns jagged
        return GroupedGemm(b.shape[1], a.shape[2], a.shape[1], a.shape[0], a)  # 2 * S * K * M
    if a.ndim == 3 and b.ndim == 3:  # [E, M, K] x [E, K, N]: a batch of E GEMMs
        return GroupedGemm(a.shape[0] * a.shape[1], a.shape[2], b.shape[2], a.shape[0], b)
    raise ValueError(f"{call.op}: expected 2D or 3D operands, got {a.shape} and {b.shape}")


def grouped_mm_cost(call: AtenCall, experts_read: float | None = None, rows: int | None = None) -> Cost:
    """``Cost`` of a grouped GEMM reading ``experts_read`` groups' weights (default ``min(E, S)``).

    ``rows`` computes that many rows instead of the S routed ones (a fixed expert capacity:
    ``E * C`` slots, :mod:`dfx.compile.moe`): FLOPs, the activation read and the output written
    scale by ``rows / S``; the weights do not.
    """
    g = grouped_gemm(call)
    a, b = tensor_arg(call, 0, "mat_a") or tensor_arg(call, 0, "self"), tensor_arg(call, 1, "mat_b")
    scale = 1.0 if rows is None or not g.rows else rows / g.rows
    extras = [s for s in call.inputs if s is not a and s is not b]  # offs, scales, bias
    weights = 0
    if g.weight is None:  # weight gradient: both jagged operands read once
        acts = read_bytes(a) + read_bytes(b)
    else:
        touched = min(g.groups, g.rows) if experts_read is None else experts_read
        acts = read_bytes(b if g.weight is a else a)
        weights = round(g.bytes_per_group * touched)
    reads = round(acts * scale) + weights + sum(read_bytes(s) for s in extras)
    written = round(sum(write_bytes(s) for s in call.outputs) * scale)
    flops = g.flops if rows is None else contraction_flops(1, rows, g.k, g.n)
    return Cost(flops, reads, written)


@register_cost(["aten._grouped_mm", "aten._scaled_grouped_mm", "transformers.grouped_mm_fallback"], category=M)
def grouped_mm(call: AtenCall) -> Cost:
    return grouped_mm_cost(call)


@register_cost(["transformers.grouped_mm_fallback_backward"], category=M)
def grouped_mm_fallback_backward(call: AtenCall) -> Cost:
    # (input [S, K], weight [E, K, N], offs, grad_output [S, N]) -> (grad_input [S, K], grad_weight [E, K, N]):
    # grad_input = grad_output x weight^T per group (2*S*N*K), grad_weight = input^T x grad_output (2*S*K*N)
    forward = grouped_gemm(call)
    reads = sum(read_bytes(s) for s in call.inputs if s is not forward.weight)  # input, offs, grad_output
    reads += forward.bytes_per_group * min(forward.groups, forward.rows)
    return Cost(2 * forward.flops, reads, sum(write_bytes(s) for s in call.outputs))


@register_cost(["aten.histc"], category=E)
def histc(call: AtenCall) -> Cost:
    x = tensor_arg(call, 0, "self")
    if x is None:
        raise ValueError(f"{call.op}: the first argument is not a tensor")
    return Cost(HISTC_FLOPS_PER_ELEMENT * x.numel, read_bytes(x), sum(write_bytes(s) for s in call.outputs))
