"""The GEMMs a graph node dispatches to, read from its aten calls' tensor specs (torch-free).

Each is ``(m, k, n, batch)``: ``batch`` independent ``[m, k] @ [k, n]`` products (a weight broadcast
over a bmm's batch is one product with the batch in its rows: :func:`dfx.costs.terms.gemm_shape`). Dimension letters
as in :mod:`dfx.costs.terms`; shapes are read as the cost rules read them
(:mod:`dfx.costs.rules_matmul`, :mod:`dfx.costs.rules_conv`, :mod:`dfx.costs.rules_attention`).
Ops not listed here (transposed convolutions, einsum, fused MHA) yield no GEMM and keep the roofline.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

from dfx.costs.terms import gemm_shape
from dfx.ir import AtenCall, TensorSpec

__all__ = ["Gemm", "call_gemms", "node_gemms"]


class Gemm(NamedTuple):
    m: int
    k: int
    n: int
    batch: int = 1


def _shape(call: AtenCall, index: int) -> tuple[int, ...] | None:
    spec = call.arg(index)
    return tuple(spec.shape) if isinstance(spec, TensorSpec) else None


def _spec(call: AtenCall, index: int) -> TensorSpec | None:
    spec = call.arg(index)
    return spec if isinstance(spec, TensorSpec) else None


def _matmul(a: TensorSpec | None, b: TensorSpec | None) -> list[Gemm]:
    # [.., M, K] x [.., K, N]; 1-D operands become [1, K] / [K, 1]; leading dims broadcast into the batch,
    # except where one operand is the same matrix for every batch entry (stride 0: an expanded weight),
    # which folds the batch into the other's rows (dfx.costs.terms.gemm_shape)
    if a is None or b is None or not a.shape or not b.shape:
        return []
    dims = gemm_shape(a, b)
    return [Gemm(*dims)] if dims is not None and dims[3] > 0 else []


def _linear(call: AtenCall) -> list[Gemm]:
    x, w = _shape(call, 0), _shape(call, 1)  # x[.., K] x weight[N, K]^T
    if not x or not w or len(w) != 2:
        return []
    return [Gemm(math.prod(x[:-1]), x[-1], w[0])]


def _conv(call: AtenCall) -> list[Gemm]:
    # im2col: x[B, C_in, *sp], w[C_out, C_in/G, *k], out[B, C_out, *out_sp]
    #   M = B * prod(out_sp)   K = (C_in/G) * prod(k)   N = C_out/G   batch = G
    x, w = _shape(call, 0), _shape(call, 1)
    if (
        not x
        or not w
        or not call.outputs
        or (call.op.startswith("aten.convolution") and call.arg(6, "transposed", False))
    ):
        return []
    out, spatial = call.outputs[0].shape, len(w) - 2
    c_in = x[len(x) - spatial - 1]
    groups = max(1, c_in // w[1]) if w[1] else 1
    b = math.prod(x[: len(x) - spatial - 1])
    return [Gemm(b * math.prod(out[len(out) - spatial :]), w[1] * math.prod(w[2:]), w[0] // groups, groups)]


def _sdpa(call: AtenCall) -> list[Gemm]:
    # q[B, H, S_q, D] @ k^T[B, H, D, S_kv], then p[B, H, S_q, S_kv] @ v[B, H, S_kv, D_v]
    q, k, v = _shape(call, 0), _shape(call, 1), _shape(call, 2)
    if not q or not k or not v or len(q) < 2:
        return []
    batch = math.prod(q[:-2])
    return [Gemm(q[-2], q[-1], k[-2], batch), Gemm(q[-2], k[-2], v[-1], batch)]


_RULES: dict[str, Callable[[AtenCall], list[Gemm]]] = {
    "aten.mm": lambda c: _matmul(_spec(c, 0), _spec(c, 1)),
    "aten._int_mm": lambda c: _matmul(_spec(c, 0), _spec(c, 1)),
    "aten.bmm": lambda c: _matmul(_spec(c, 0), _spec(c, 1)),
    "aten.matmul": lambda c: _matmul(_spec(c, 0), _spec(c, 1)),
    "aten.mv": lambda c: _matmul(_spec(c, 0), _spec(c, 1)),
    "aten.addmm": lambda c: _matmul(_spec(c, 1), _spec(c, 2)),
    "aten._addmm_activation": lambda c: _matmul(_spec(c, 1), _spec(c, 2)),
    "aten.baddbmm": lambda c: _matmul(_spec(c, 1), _spec(c, 2)),
    "aten.addbmm": lambda c: _matmul(_spec(c, 1), _spec(c, 2)),
    "aten.addmv": lambda c: _matmul(_spec(c, 1), _spec(c, 2)),
    "aten.linear": _linear,
    **{
        op: _conv
        for op in (
            "aten.convolution",
            "aten._convolution",
            "aten.conv1d",
            "aten.conv2d",
            "aten.conv3d",
            "aten.cudnn_convolution",
            "aten.mkldnn_convolution",
            "aten._slow_conv2d_forward",
        )
    },
}


# aten op name -> its rule (None: not a contraction dfx maps), as call_gemms resolves it from the op's
# packet: a sweep asks the same few dozen ops for every node of every graph
_RULE_OF_OP: dict[str, Callable[[AtenCall], list[Gemm]] | None] = {}


def call_gemms(call: AtenCall) -> list[Gemm]:
    """The GEMMs of one aten call (empty when it is not a contraction dfx maps)."""
    try:
        rule = _RULE_OF_OP[call.op]
    except KeyError:
        packet = call.packet
        rule = _RULES.get(packet)
        if rule is None and "scaled_dot_product" in packet:
            rule = _sdpa
        _RULE_OF_OP[call.op] = rule
    return [g for g in rule(call) if min(g) >= 1] if rule is not None else []


def node_gemms(calls: tuple[AtenCall, ...]) -> list[Gemm]:
    """Every GEMM of a node's aten calls, in dispatch order."""
    return [g for c in calls for g in call_gemms(c)]
