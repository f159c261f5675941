"""Attention: every scaled_dot_product_attention backend, and the fused MHA / encoder-layer ops.

Whatever kernel SDPA lowers to, attention is two bmm-shaped contractions (FlopCounterMode's
``sdpa_flop_count``), with ``BH`` every leading dim of the query (batch x query heads, so GQA
counts the query heads)::

    q[BH, S_q, D] x k^T[BH, D, S_kv] -> scores[BH, S_q, S_kv]     2 * BH * S_q * S_kv * D
    p[BH, S_q, S_kv] x v[BH, S_kv, D_v] -> out[BH, S_q, D_v]      2 * BH * S_q * S_kv * D_v

in the ``matmul`` category: ``4*B*H_q*S_q*S_kv*D`` when ``D_v == D``. Per score element the fused
kernels also scale (1 mul, ``elementwise``), add a mask when given or causal (1, ``elementwise``),
apply dropout when ``dropout_p > 0`` (3, ``elementwise``) and take the softmax (5,
``normalization``). NB: a causal mask does not halve the count (FlopCounterMode does not either);
nor does a sliding window. The math backend is not costed here: it decomposes into bmm, mul,
softmax ops that their own rules count (it scales q and k, not the scores, so its elementwise
FLOPs differ slightly; its matmul FLOPs are the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.rules_norm import layer_norm_flops, softmax_flops
from dfx.costs.rules_pointwise import DROPOUT_FLOPS, RELU_FLOPS, gelu_flops_per_element
from dfx.costs.terms import contraction_flops, io_cost, numel, tensor_arg
from dfx.ir import AtenCall, TensorSpec

__all__ = ["AttentionShape", "attention_flops"]

M, E, N = Category.MATMUL, Category.ELEMENTWISE, Category.NORMALIZATION

SCALE_FLOPS = 1  # scores * scale
MASK_FLOPS = 1  # scores + mask (or the causal -inf fill)


@dataclass(frozen=True)
class AttentionShape:
    """The sizes attention FLOPs depend on: ``BH`` = batch x query heads."""

    batch_heads: int
    s_q: int
    s_kv: int
    d_qk: int
    d_v: int

    @property
    def scores(self) -> int:
        return self.batch_heads * self.s_q * self.s_kv


def attention_flops(shape: AttentionShape, *, masked: bool = False, dropout: bool = False) -> dict[Category, int]:
    """FLOPs of one attention by category.

    Examples
    --------
    >>> attention_flops(AttentionShape(12, 64, 64, 64, 64))[Category.MATMUL]  # PB-01: 4*1*12*64*64*64
    12582912
    """
    bh, s_q, s_kv = shape.batch_heads, shape.s_q, shape.s_kv
    qk = contraction_flops(bh, s_q, shape.d_qk, s_kv)  # q[BH, S_q, D] x k^T[BH, D, S_kv]
    pv = contraction_flops(bh, s_q, s_kv, shape.d_v)  # p[BH, S_q, S_kv] x v[BH, S_kv, D_v]
    per_score = SCALE_FLOPS + MASK_FLOPS * masked + DROPOUT_FLOPS * dropout
    return {M: qk + pv, E: per_score * shape.scores, N: softmax_flops(shape.scores)}


def _parts(call: AtenCall, flops: dict[Category, int]) -> dict[Category, Cost]:
    return {M: io_cost(call, flops[M]), E: Cost(flops[E]), N: Cost(flops[N])}


def _qkv(call: AtenCall) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
    q, k, v = (call.arg(i) for i in range(3))
    if not all(isinstance(t, TensorSpec) for t in (q, k, v)):
        raise ValueError(f"{call.op}: query, key and value must be the first three arguments")
    return q, k, v  # type: ignore[return-value]


@dataclass(frozen=True)
class _SdpaSignature:
    """Where each SDPA-family op keeps its mask, dropout_p and is_causal arguments."""

    mask: int | None  # position of attn_mask / attn_bias, None when the op takes it as keyword only
    dropout: int
    causal: int
    mask_name: str = "attn_mask"


_SDPA_SIGNATURES = {
    "aten.scaled_dot_product_attention": _SdpaSignature(3, 4, 5),
    "aten._scaled_dot_product_attention_math": _SdpaSignature(3, 4, 5),
    "aten._scaled_dot_product_attention_math_for_mps": _SdpaSignature(3, 4, 5),
    "aten._scaled_dot_product_flash_attention": _SdpaSignature(None, 3, 4),
    "aten._scaled_dot_product_flash_attention_for_cpu": _SdpaSignature(None, 3, 4),
    "aten._scaled_dot_product_efficient_attention": _SdpaSignature(3, 5, 6, "attn_bias"),
    "aten._scaled_dot_product_cudnn_attention": _SdpaSignature(3, 5, 6, "attn_bias"),
    "aten._scaled_dot_product_fused_attention_overrideable": _SdpaSignature(3, 4, 5, "attn_bias"),
}


@register_cost(list(_SDPA_SIGNATURES), category=M)
def sdpa(call: AtenCall) -> dict[Category, Cost]:
    # q[.., H_q, S_q, D], k[.., H_kv, S_kv, D], v[.., H_kv, S_kv, D_v]; H_kv divides H_q (GQA)
    q, k, v = _qkv(call)
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        raise ValueError(f"{call.op}: incompatible q {q.shape}, k {k.shape}, v {v.shape}")
    sig = _SDPA_SIGNATURES[call.packet]
    mask = call.arg(sig.mask, sig.mask_name) if sig.mask is not None else call.kwarg(sig.mask_name)
    masked = isinstance(mask, TensorSpec) or bool(call.arg(sig.causal, "is_causal", False))
    dropout = bool(call.arg(sig.dropout, "dropout_p", 0.0))
    shape = AttentionShape(numel(q.shape[:-2]), q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1])
    return _parts(call, attention_flops(shape, masked=masked, dropout=dropout))


def _bshd_shape(q: TensorSpec, k: TensorSpec, v: TensorSpec, varlen: bool, max_k: object) -> AttentionShape:
    """Sizes of a flash/efficient kernel call, whose layout is [B, S, H, D].

    Variable-length (packed) calls hold [total_q, H, D] (flash) or [1, total_q, H, D]
    (efficient); the per-sequence lengths are tensor values a spec does not have, so each query
    is taken to attend to ``max_k`` keys: exact when all keys lengths equal, else an upper bound.
    """
    if varlen:
        total_q, heads = q.shape[-3], q.shape[-2]
        s_kv = int(max_k) if isinstance(max_k, int) else k.shape[-3]
        return AttentionShape(heads, total_q, s_kv, q.shape[-1], v.shape[-1])
    b, s_q, heads, d = q.shape  # [B, S_q, H_q, D]
    return AttentionShape(b * heads, s_q, k.shape[1], d, v.shape[-1])


@register_cost(["aten._flash_attention_forward"], category=M)
def flash_attention_forward(call: AtenCall) -> dict[Category, Cost]:
    # (q, k, v, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, return_debug_mask, ...)
    q, k, v = _qkv(call)
    varlen = tensor_arg(call, 3, "cum_seq_q") is not None
    shape = _bshd_shape(q, k, v, varlen, call.arg(6, "max_k"))
    masked = bool(call.arg(8, "is_causal", False)) or isinstance(call.kwarg("alibi_slopes"), TensorSpec)
    return _parts(call, attention_flops(shape, masked=masked, dropout=bool(call.arg(7, "dropout_p", 0.0))))


@register_cost(["aten._efficient_attention_forward"], category=M)
def efficient_attention_forward(call: AtenCall) -> dict[Category, Cost]:
    # (q, k, v, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, ...)
    q, k, v = _qkv(call)
    varlen = tensor_arg(call, 4, "cu_seqlens_q") is not None
    shape = _bshd_shape(q, k, v, varlen, call.arg(7, "max_seqlen_k"))
    masked = tensor_arg(call, 3, "bias") is not None or bool(call.arg(9, "custom_mask_type", 0))
    return _parts(call, attention_flops(shape, masked=masked, dropout=bool(call.arg(8, "dropout_p", 0.0))))


def _weight(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


def _projection(rows: int, weight: TensorSpec) -> tuple[int, int]:
    """(matmul, bias) FLOPs of x[rows, K] x weight[N, K]^T + bias[N]."""
    n, k = weight.shape
    return contraction_flops(1, rows, k, n), rows * n  # [rows, K] x [K, N] + bias


def _mha_flops(
    batch: int, s_q: int, s_kv: int, heads: int, qkv_w: TensorSpec, proj_w: TensorSpec, *, masked: bool
) -> dict[Category, int]:
    """Input projections, attention and output projection of one multi-head attention."""
    e = qkv_w.shape[0] // 3  # qkv_weight [3E, E]: rows [0:E] project q, [E:2E] k, [2E:3E] v
    w_one = TensorSpec((e, qkv_w.shape[1]), qkv_w.dtype)
    q_mm, q_bias = _projection(batch * s_q, w_one)  # query[B*S_q, E] x W_q^T
    kv_mm, kv_bias = _projection(batch * s_kv, w_one)  # key, value [B*S_kv, E] x W_{k,v}^T
    o_mm, o_bias = _projection(batch * s_q, proj_w)  # attn[B*S_q, E] x W_o^T
    attn = attention_flops(AttentionShape(batch * heads, s_q, s_kv, e // heads, e // heads), masked=masked)
    return {
        M: q_mm + 2 * kv_mm + attn[M] + o_mm,
        E: q_bias + 2 * kv_bias + attn[E] + o_bias,
        N: attn[N],
    }


@register_cost(["aten._native_multi_head_attention"], category=M)
def native_multi_head_attention(call: AtenCall) -> dict[Category, Cost]:
    # (query[B, S_q, E], key[B, S_kv, E], value, embed_dim, num_head, qkv_weight[3E, E], qkv_bias[3E],
    #  proj_weight[E, E], proj_bias[E], mask, need_weights, average_attn_weights, mask_type)
    q, k, _ = _qkv(call)
    heads = int(call.arg(4, "num_head"))
    batch = numel(q.shape[:-2])
    masked = tensor_arg(call, 9, "mask") is not None
    flops = _mha_flops(
        batch,
        q.shape[-2],
        k.shape[-2],
        heads,
        _weight(call, 5, "qkv_weight"),
        _weight(call, 7, "proj_weight"),
        masked=masked,
    )
    if call.arg(10, "need_weights", True) and call.arg(11, "average_attn_weights", True):
        flops[E] += (heads + 1) * batch * q.shape[-2] * k.shape[-2]  # mean over heads: H adds + 1 divide
    return {M: io_cost(call, flops[M]), E: Cost(flops[E]), N: Cost(flops[N])}


@register_cost(["aten._transformer_encoder_layer_fwd"], category=M)
def transformer_encoder_layer_fwd(call: AtenCall) -> dict[Category, Cost]:
    # (src[B, S, E], embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
    #  norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
    #  ffn_weight_1[F, E], ffn_bias_1[F], ffn_weight_2[E, F], ffn_bias_2[E], mask, mask_type)
    src = _weight(call, 0, "src")
    batch, s, e = numel(src.shape[:-2]), src.shape[-2], src.shape[-1]
    tokens = batch * s
    flops = _mha_flops(
        batch,
        s,
        s,
        int(call.arg(2, "num_heads")),
        _weight(call, 3, "qkv_weight"),
        _weight(call, 5, "proj_weight"),
        masked=tensor_arg(call, 18, "mask") is not None,
    )
    ffn1_mm, ffn1_bias = _projection(tokens, _weight(call, 14, "ffn_weight_1"))  # [T, E] x [E, F]
    ffn2_mm, ffn2_bias = _projection(tokens, _weight(call, 16, "ffn_weight_2"))  # [T, F] x [F, E]
    hidden = ffn1_bias  # T * F elements go through the activation
    act = gelu_flops_per_element("none") if call.arg(7, "use_gelu", False) else RELU_FLOPS
    flops[M] += ffn1_mm + ffn2_mm
    flops[E] += ffn1_bias + ffn2_bias + act * hidden + 2 * tokens * e  # + two residual adds
    for w, b in ((10, 11), (12, 13)):  # norm_{weight,bias}_{1,2}
        affine = {"weight": tensor_arg(call, w) is not None, "bias": tensor_arg(call, b) is not None}
        flops[N] += layer_norm_flops(tokens * e, tokens, **affine)
    return {M: io_cost(call, flops[M]), E: Cost(flops[E]), N: Cost(flops[N])}
