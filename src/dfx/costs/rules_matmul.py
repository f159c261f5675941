"""Contractions: mm, bmm, addmm, baddbmm, addbmm, mv, addmv, dot, outer, matmul, linear, _scaled_mm.

Every product is :func:`~dfx.costs.terms.contraction_flops`, ``2*B*M*K*N`` from the output shape and
the contracted dim (FlopCounterMode's ``mm_flop``/``bmm_flop``), in the ``matmul`` category. What
an op adds to the product (bias, ``beta``/``alpha`` scaling, a fused activation) is ``elementwise``,
one FLOP per output element per term, so the ``matmul`` total stays comparable with FlopCounterMode.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.rules_pointwise import GELU_TANH_FLOPS, RELU_FLOPS
from dfx.costs.terms import broadcast_shapes, contraction_flops, input_specs, io_cost, numel, tensor_arg
from dfx.ir import AtenCall, TensorSpec

__all__ = ["matmul_flops"]

M, E = Category.MATMUL, Category.ELEMENTWISE
# A complex multiply-accumulate is 4 real multiplies and 4 real adds ((a+bi)(c+di) = (ac-bd) +
# (ad+bc)i: 4 muls, 2 adds; accumulating re and im: 2 adds) = 8 real FLOPs, 4 x a real MAC's 2.
# A complex product with nothing to accumulate (outer) is 4 muls and 2 adds = 6 real FLOPs.
_COMPLEX_MAC_FACTOR = 4
_COMPLEX_MUL_FLOPS = 6


def _is_complex(*specs: TensorSpec) -> bool:
    return any(str(s.dtype).removeprefix("torch.").startswith("complex") for s in specs)


def _product(a: TensorSpec, b: TensorSpec, b_shape: tuple[int, ...] | None = None) -> int:
    """Real FLOPs of the contraction ``a @ b`` (``b_shape`` overrides b's shape, e.g. a transpose)."""
    flops = matmul_flops(a.shape, b.shape if b_shape is None else b_shape)
    return flops * _COMPLEX_MAC_FACTOR if _is_complex(a, b) else flops


def _tensor(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


def matmul_flops(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """FLOPs of ``torch.matmul(a, b)`` for shapes ``a`` and ``b``, 1-D and broadcast included.

    A 1-D ``a`` is a row ``[1, K]`` and a 1-D ``b`` a column ``[K, 1]`` (the dims torch removes
    afterwards); leading dims broadcast, and the batch multiplies the count.

    Examples
    --------
    >>> matmul_flops((8,), (8,))  # dot: 2 * 8
    16
    >>> matmul_flops((2, 1, 4, 8), (3, 8, 5))  # batch broadcasts to (2, 3): 2 * 6 * 4 * 8 * 5
    1920
    """
    a = (1, *a) if len(a) == 1 else tuple(a)  # [K] -> [1, K]
    b = (*b, 1) if len(b) == 1 else tuple(b)  # [K] -> [K, 1]
    if a[-1] != b[-2]:
        raise ValueError(f"matmul: inner dimensions differ, {a} x {b}")
    batch = numel(broadcast_shapes(a[:-2], b[:-2]))  # broadcast(a[:-2], b[:-2])
    return contraction_flops(batch, a[-2], a[-1], b[-1])  # [.., M, K] x [.., K, N]


def _epilogue(call: AtenCall, outputs: int, *, bias: bool) -> int:
    """Elementwise FLOPs after a product: beta * bias + alpha * product, 1 per term per output."""
    beta, alpha = call.kwarg("beta", 1), call.kwarg("alpha", 1)
    terms = (bias and beta != 0) + (bias and beta not in (0, 1)) + (alpha != 1)
    return terms * outputs


def _biased_product(call: AtenCall, product: int, out_elems: int) -> dict[Category, Cost]:
    """``beta * self + alpha * product``: bias is not read when ``beta == 0``."""
    reads = None if call.kwarg("beta", 1) != 0 else input_specs(call)[1:]
    return {M: io_cost(call, product, reads=reads), E: Cost(_epilogue(call, out_elems, bias=True))}


@register_cost(["aten.mm", "aten._int_mm"], category=M)
def mm(call: AtenCall) -> Cost:
    a, b = _tensor(call, 0, "self"), _tensor(call, 1, "mat2")
    return io_cost(call, _product(a, b))  # [M, K] x [K, N]


@register_cost(["aten.addmm"], category=M)
def addmm(call: AtenCall) -> dict[Category, Cost]:
    # self[.., N] broadcast to [M, N] + mat1[M, K] x mat2[K, N]; bias adds M*N (PB-03 case 5)
    a, b = _tensor(call, 1, "mat1"), _tensor(call, 2, "mat2")
    return _biased_product(call, _product(a, b), a.shape[0] * b.shape[1])


@register_cost(["aten._addmm_activation"], category=M)
def addmm_activation(call: AtenCall) -> dict[Category, Cost]:
    # act(addmm(...)): relu, or GELU with the tanh approximation (the cuBLASLt epilogue)
    parts = addmm(call)
    act = GELU_TANH_FLOPS if call.kwarg("use_gelu", False) else RELU_FLOPS
    out = call.outputs[0].numel if call.outputs else 0
    return {M: parts[M], E: parts[E] + Cost(act * out)}


@register_cost(["aten.bmm"], category=M)
def bmm(call: AtenCall) -> Cost:
    a, b = _tensor(call, 0, "self"), _tensor(call, 1, "mat2")
    return io_cost(call, _product(a, b))  # [B, M, K] x [B, K, N]


@register_cost(["aten.baddbmm"], category=M)
def baddbmm(call: AtenCall) -> dict[Category, Cost]:
    # self + [B, M, K] x [B, K, N]: bias adds B*M*N
    a, b = _tensor(call, 1, "batch1"), _tensor(call, 2, "batch2")
    return _biased_product(call, _product(a, b), a.shape[0] * a.shape[1] * b.shape[2])


@register_cost(["aten.addbmm"], category=M)
def addbmm(call: AtenCall) -> dict[Category, Cost]:
    # self[M, N] + sum_b [B, M, K] x [B, K, N]: the sum over b is part of the 2*B*M*K*N accumulation
    a, b = _tensor(call, 1, "batch1"), _tensor(call, 2, "batch2")
    return _biased_product(call, _product(a, b), a.shape[1] * b.shape[2])


@register_cost(["aten.mv"], category=M)
def mv(call: AtenCall) -> Cost:
    a, v = _tensor(call, 0, "self"), _tensor(call, 1, "vec")
    return io_cost(call, _product(a, v))  # [M, K] x [K] -> [M]: 2*M*K


@register_cost(["aten.addmv"], category=M)
def addmv(call: AtenCall) -> dict[Category, Cost]:
    a, v = _tensor(call, 1, "mat"), _tensor(call, 2, "vec")
    return _biased_product(call, _product(a, v), a.shape[0])  # + self[M]


@register_cost(["aten.dot", "aten.vdot"], category=M)
def dot(call: AtenCall) -> Cost:
    a, b = _tensor(call, 0, "self"), _tensor(call, 1, "tensor")
    return io_cost(call, _product(a, b))  # [K] . [K]: 2*K


@register_cost(["aten.outer", "aten.ger"], category=M)
def outer(call: AtenCall) -> Cost:
    # [M] x [N] -> [M, N]: M*N multiplies and nothing to accumulate (K = 1 without the add)
    a, b = _tensor(call, 0, "self"), _tensor(call, 1, "vec2")
    return io_cost(call, a.numel * b.numel * (_COMPLEX_MUL_FLOPS if _is_complex(a, b) else 1))


@register_cost(["aten.matmul"], category=M)
def matmul(call: AtenCall) -> Cost:
    a, b = _tensor(call, 0, "self"), _tensor(call, 1, "other")
    return io_cost(call, _product(a, b))


@register_cost(["aten.linear"], category=M)
def linear(call: AtenCall) -> Cost | dict[Category, Cost]:
    # x[.., K] x weight[N, K]^T (+ bias[N]) -> [.., N]; the bias adds one FLOP per output (PB-03 case 4)
    x, w, bias = _tensor(call, 0, "input"), _tensor(call, 1, "weight"), tensor_arg(call, 2, "bias")
    w_t = (w.shape[1], w.shape[0]) if w.ndim == 2 else tuple(w.shape)  # [N, K] -> [K, N]
    product = io_cost(call, _product(x, w, w_t))
    if bias is None:
        return product
    out = numel(x.shape[:-1]) * (w.shape[0] if w.ndim == 2 else 1)
    return {M: product, E: Cost(out)}


@register_cost(["aten._scaled_mm"], category=M)
def scaled_mm(call: AtenCall) -> dict[Category, Cost]:
    # (self[M, K] x mat2[K, N]) * scale_a * scale_b (+ bias): the scales are 1 mul per output
    a, b = _tensor(call, 0, "self"), _tensor(call, 1, "mat2")
    out = a.shape[0] * b.shape[1]
    bias = tensor_arg(call, 4, "bias") is not None
    return {M: io_cost(call, _product(a, b)), E: Cost(out * (1 + bias))}
