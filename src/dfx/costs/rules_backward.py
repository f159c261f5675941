"""Backward ops of a training step's joint graph (AOTAutograd, :mod:`dfx.capture.joint`).

Each rule counts the operations of the op's gradient formula as PyTorch writes it
(``tools/autograd/derivatives.yaml`` and the decompositions in ``torch/_decomp/decompositions.py``),
with the per-element convention of :mod:`dfx.costs.rules_pointwise` (one FLOP per add, multiply,
divide, compare-select, exp, ...). Bytes: every tensor argument read (a bias that only gives its
shape is not), every output written. Letters: N batch, C channels, n elements, r rows.

Contractions (``matmul``) match ``torch.utils.flop_counter.FlopCounterMode``:

    convolution_backward   grad_input (output_mask[0]) = a transposed conv of grad_output with the
                           weight: as many MACs as the forward; grad_weight (output_mask[1]) = a
                           conv of the input with grad_output: as many again; grad_bias
                           (output_mask[2]) = sum of grad_output over N and space: 1 add per element
    SDPA backward          5 contractions (FlopCounterMode's ``sdpa_backward_flop_count``): recompute
                           q k^T; dP = dO v^T; dV = P^T dO; dQ = dS k; dK = dS^T q: 2.5x the forward

Per element (``elementwise`` unless said):

    threshold_backward     x <= t ? 0 : g  (ReLU's backward)                                     1
    sigmoid_backward       g * (1 - y) * y                                                       3
    tanh_backward          g * (1 - y * y)                                                       3
    silu_backward          s = 1/(1 + exp(-x)) (4); g * s * (1 + x * (1 - s)) (5)                9
    gelu_backward (erf)    cdf = 0.5 * (1 + erf(x / sqrt 2)) (4); pdf = k * exp(-0.5 x^2) (4);
                           g * (cdf + x * pdf) (3)                                              11
    gelu_backward (tanh)   torch/_decomp ``gelu_backward``: x^2, x^3, inner (3), tanh, 0.5 x,
                           1 + t, 0.5 (1 + t), 1 - t^2 (2), inner' (3), g * (...) (4)           18
    leaky_relu_backward    x > 0 ? g : a * g                                                     2
    hardtanh_backward      lo < x < hi ? g : 0: two compare-selects                              2
    native_dropout_backward  g * mask * scale                                                    2
    softmax backward       y * (g - sum(g * y)): mul, sum, sub, mul (``normalization``)         4
    log_softmax backward   g - exp(y) * sum(g): sum, exp, mul, sub (``normalization``)          4
    layer norm backward    x_hat = (x - mean) * rstd (2); grad_input: g * w (1, with a weight),
                           N * gx, sum gx, gx * x_hat, sum, x_hat * sum, two subs, * rstd / N (8)
                           (+1 per row); grad_weight: sum g * x_hat (2); grad_bias: sum g (1)
                           (``normalization``)
    batch norm backward    per channel over N * space: sum g (1) and sum g * (x - mean) (3)
                           when grad_input (training) or grad_weight / grad_bias needs them;
                           grad_input: training (x - mean) * proj (2), g - proj - mean_g, * scale
                           (3) = 5; eval g * invstd * w (1); 6 per channel (``normalization``)
    max_pool backward      scatter-add of each grad_output element to its window's argmax
                           (``indices``): 1 add per element of grad_output; grad_input is
                           written whole (zeros elsewhere); ``self`` gives only its shape
    avg_pool backward      per element of grad_output: divide by the window size (1), add into
                           each of the window's prod(kernel) inputs: prod(kernel) + 1
    adaptive_avg_pool backward  as avg_pool's with PyTorch's adaptive windows
                           (:func:`~dfx.costs.rules_pool.adaptive_window_total`): window + out
    group norm backward    layer norm backward's per-element counts over N * group rows of
                           C/group * HxW elements; grad_weight / grad_bias sum per channel
                           (``normalization``)
    embedding_dense_backward  scatter-add of each grad row into its token's row: 1 add per
                           element of grad_output; writes the [num_weights, D] gradient
    mse_loss_backward      norm * (x - y) * g: sub, mul, mul                                    3
    binary_cross_entropy_backward  g * (x - y) / max(x * (1 - x), eps): sub, sub, mul, max,
                           div, mul (6; +1 weight, +1 mean's divide)
    nll_loss_backward      per target: compare-select, negate, * g (3; +1 weight, +1 mean's
                           divide); writes the whole [N, C] gradient (zeros elsewhere)
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.rules_attention import AttentionShape
from dfx.costs.rules_conv import conv_macs
from dfx.costs.rules_loss import REDUCTION_MEAN, REDUCTION_NONE
from dfx.costs.rules_pointwise import DROPOUT_FLOPS
from dfx.costs.rules_pool import adaptive_window_total
from dfx.costs.terms import FMA_FLOPS, contraction_flops, io_cost, numel, read_bytes, tensor_arg, write_bytes
from dfx.ir import AtenCall, TensorSpec

__all__ = ["conv_backward_flops", "sdpa_backward_flops"]

M, E, N = Category.MATMUL, Category.ELEMENTWISE, Category.NORMALIZATION

THRESHOLD_BACKWARD_FLOPS = 1  # x <= t ? 0 : g
SIGMOID_BACKWARD_FLOPS = 3  # g * (1 - y) * y
TANH_BACKWARD_FLOPS = 3  # g * (1 - y * y)
SILU_BACKWARD_FLOPS = 9  # sigmoid (4), g * s * (1 + x * (1 - s)) (5)
GELU_ERF_BACKWARD_FLOPS = 11  # cdf (4), pdf (4), g * (cdf + x * pdf) (3)
GELU_TANH_BACKWARD_FLOPS = 18  # torch/_decomp gelu_backward, approximate="tanh"
LEAKY_RELU_BACKWARD_FLOPS = 2  # x > 0 ? g : a * g
HARDTANH_BACKWARD_FLOPS = 2  # two compare-selects
DROPOUT_BACKWARD_FLOPS = 2  # g * mask * scale
SOFTMAX_BACKWARD_FLOPS = 4  # y * (g - sum(g * y))
LOG_SOFTMAX_BACKWARD_FLOPS = 4  # g - exp(y) * sum(g)
LN_XHAT_FLOPS = 2  # (x - mean) * rstd
LN_INPUT_GRAD_FLOPS = 8  # N*gx, sum gx, gx*x_hat, sum, x_hat*sum, 2 subs, * rstd/N
LN_WEIGHT_GRAD_FLOPS = 2  # sum over rows of g * x_hat
LN_BIAS_GRAD_FLOPS = 1  # sum over rows of g
MAX_POOL_BACKWARD_FLOPS = 1  # grad_input[argmax] += g
AVG_POOL_BACKWARD_DIVIDE_FLOPS = 1  # g / window size, once per grad_output element
BN_SUM_FLOPS = 1  # sum g per channel
BN_DOT_FLOPS = 3  # sum g * (x - mean) per channel: sub, mul, add
BN_TRAIN_INPUT_FLOPS = 5  # (x - mean) * proj (2); (g - proj - mean_g) * scale (3)
BN_EVAL_INPUT_FLOPS = 1  # g * (invstd * w)
BN_PER_CHANNEL_FLOPS = 6  # grad_mean, proj_scale (3), grad_scale, grad_weight
MSE_BACKWARD_FLOPS = 3  # norm * (x - y) * g
BCE_BACKWARD_FLOPS = 6  # g * (x - y) / max(x * (1 - x), eps)
NLL_BACKWARD_FLOPS = 3  # compare-select, negate, * g
# The SDPA backward's per-score work beside its contractions: recompute P = exp(s * scale - lse)
# (scale 1, subtract 1, exp 1; +1 mask), dS = P * (dP - D) (2), dS * scale (1).
SDPA_BACKWARD_SCORE_FLOPS = 6
SDPA_BACKWARD_ROW_FLOPS_PER_D = 2  # D = rowsum(dO * O): a multiply and an add per element of a row


def _tensor(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


def _mask(call: AtenCall, index: int, name: str, size: int) -> tuple[bool, ...]:
    value = call.arg(index, name)
    if value is None:
        return (True,) * size
    if not isinstance(value, (tuple, list)) or len(value) != size:
        raise ValueError(f"{call.op}: {name} should be {size} booleans, got {value!r}")
    return tuple(bool(v) for v in value)


def conv_backward_flops(
    grad_out: tuple[int, ...], x: tuple[int, ...], w: tuple[int, ...], transposed: bool, mask: tuple[bool, bool, bool]
) -> dict[Category, int]:
    """FLOPs of ``convolution_backward`` by category: each of grad_input and grad_weight costs the
    forward's ``2 * MACs``; grad_bias one add per element of ``grad_out``.

    Examples
    --------
    >>> conv_backward_flops((1, 4, 8, 8), (1, 2, 8, 8), (4, 2, 3, 3), False, (True, True, False))[Category.MATMUL]
    18432
    """
    forward = FMA_FLOPS * conv_macs(x, w, grad_out, transposed)  # 2 * 1*8*8 * 4*2*3*3 = 4608 per gradient
    return {M: forward * (mask[0] + mask[1]), E: numel(grad_out) * mask[2]}


@register_cost(["aten.convolution_backward", "aten.convolution_backward_overrideable"], category=M)
def convolution_backward(call: AtenCall) -> dict[Category, Cost]:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    #  groups, output_mask)
    g, x, w = _tensor(call, 0, "grad_output"), _tensor(call, 1, "input"), _tensor(call, 2, "weight")
    mask = _mask(call, 10, "output_mask", 3)
    flops = conv_backward_flops(g.shape, x.shape, w.shape, bool(call.arg(7, "transposed", False)), mask)
    reads = [g] + [x] * mask[1] + [w] * mask[0]  # grad_input needs the weight, grad_weight the input
    return {M: io_cost(call, flops[M], reads=reads), E: Cost(flops[E])}


def _pointwise(flops: int):
    def rule(call: AtenCall) -> Cost:
        return io_cost(call, flops * (call.outputs[0].numel if call.outputs else 0))

    return rule


for _ops, _flops in (
    (["aten.threshold_backward"], THRESHOLD_BACKWARD_FLOPS),
    (["aten.sigmoid_backward"], SIGMOID_BACKWARD_FLOPS),
    (["aten.tanh_backward"], TANH_BACKWARD_FLOPS),
    (["aten.silu_backward"], SILU_BACKWARD_FLOPS),
    (["aten.leaky_relu_backward"], LEAKY_RELU_BACKWARD_FLOPS),
    (["aten.hardtanh_backward"], HARDTANH_BACKWARD_FLOPS),
    (["aten.native_dropout_backward"], DROPOUT_BACKWARD_FLOPS),
    (["aten.mse_loss_backward"], MSE_BACKWARD_FLOPS),
):
    register_cost(_ops, category=E)(_pointwise(_flops))


@register_cost(["aten.gelu_backward"], category=E)
def gelu_backward(call: AtenCall) -> Cost:
    # (grad_output, self, approximate)
    per = GELU_TANH_BACKWARD_FLOPS if call.kwarg("approximate", call.arg(2)) == "tanh" else GELU_ERF_BACKWARD_FLOPS
    return io_cost(call, per * (call.outputs[0].numel if call.outputs else 0))


@register_cost(["aten._softmax_backward_data"], category=N)
def softmax_backward(call: AtenCall) -> Cost:
    return io_cost(call, SOFTMAX_BACKWARD_FLOPS * _tensor(call, 0, "grad_output").numel)


@register_cost(["aten._log_softmax_backward_data"], category=N)
def log_softmax_backward(call: AtenCall) -> Cost:
    return io_cost(call, LOG_SOFTMAX_BACKWARD_FLOPS * _tensor(call, 0, "grad_output").numel)


@register_cost(["aten.native_layer_norm_backward"], category=N)
def layer_norm_backward(call: AtenCall) -> Cost:
    # (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask); r rows of inner
    g = _tensor(call, 0, "grad_out")
    inner = numel(call.arg(2, "normalized_shape"))
    rows = g.numel // inner if inner else 0
    weight, bias = tensor_arg(call, 5, "weight"), tensor_arg(call, 6, "bias")
    mask = _mask(call, 7, "output_mask", 3)
    want_w, want_b = mask[1] and weight is not None, mask[2] and bias is not None
    per = (
        LN_XHAT_FLOPS * (mask[0] or want_w)
        + (LN_INPUT_GRAD_FLOPS + (weight is not None)) * mask[0]
        + LN_WEIGHT_GRAD_FLOPS * want_w
        + LN_BIAS_GRAD_FLOPS * want_b
    )
    stats = [
        t
        for t in (tensor_arg(call, 1, "input"), tensor_arg(call, 3, "mean"), tensor_arg(call, 4, "rstd"), weight)
        if t is not None
    ]
    reads = [g, *stats]  # the bias gives only its shape
    return io_cost(call, per * g.numel + rows * mask[0], reads=reads)


def _batch_norm_backward(call: AtenCall, train: bool, mask: tuple[bool, ...]) -> Cost:
    g = _tensor(call, 0, "grad_out")
    channels = g.shape[1] if g.ndim > 1 else 1
    sums = BN_SUM_FLOPS * ((train and mask[0]) or mask[2]) + BN_DOT_FLOPS * ((train and mask[0]) or mask[1])
    per = sums + (BN_TRAIN_INPUT_FLOPS if train else BN_EVAL_INPUT_FLOPS) * mask[0]
    return io_cost(call, per * g.numel + BN_PER_CHANNEL_FLOPS * channels)


@register_cost(["aten.native_batch_norm_backward"], category=N)
def native_batch_norm_backward(call: AtenCall) -> Cost:
    # (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)
    return _batch_norm_backward(call, bool(call.arg(7, "train", True)), _mask(call, 9, "output_mask", 3))


@register_cost(["aten.batch_norm_backward"], category=N)
def batch_norm_backward(call: AtenCall) -> Cost:
    # (grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps, output_mask, reserve)
    return _batch_norm_backward(call, bool(call.arg(7, "update", True)), _mask(call, 9, "output_mask", 3))


def sdpa_backward_flops(shape: AttentionShape, *, masked: bool = False, dropout: bool = False) -> dict[Category, int]:
    """FLOPs of one attention backward by category (FlopCounterMode's 5 contractions for ``matmul``).

    Examples
    --------
    >>> f = sdpa_backward_flops(AttentionShape(12, 64, 64, 64, 64))
    >>> f[Category.MATMUL] == 5 * 2 * 12 * 64 * 64 * 64  # 2.5x the forward's 4*BH*S*S*D
    True
    """
    bh, s_q, s_kv, d, d_v = shape.batch_heads, shape.s_q, shape.s_kv, shape.d_qk, shape.d_v
    matmul = (
        contraction_flops(bh, s_q, d, s_kv)  # recompute q[S_q, D] x k^T[D, S_kv]
        + contraction_flops(bh, s_q, d_v, s_kv)  # dP = dO[S_q, D_v] x v^T[D_v, S_kv]
        + contraction_flops(bh, s_kv, s_q, d_v)  # dV = P^T[S_kv, S_q] x dO[S_q, D_v]
        + contraction_flops(bh, s_q, s_kv, d)  # dQ = dS[S_q, S_kv] x k[S_kv, D]
        + contraction_flops(bh, s_kv, s_q, d)
    )  # dK = dS^T[S_kv, S_q] x q[S_q, D]
    per_score = SDPA_BACKWARD_SCORE_FLOPS + masked + DROPOUT_FLOPS * dropout
    return {M: matmul, E: per_score * shape.scores, N: SDPA_BACKWARD_ROW_FLOPS_PER_D * bh * s_q * d_v}


def _sdpa_backward(
    call: AtenCall, q: TensorSpec, k: TensorSpec, v: TensorSpec, *, bshd: bool, masked: bool, dropout: bool
) -> dict[Category, Cost]:
    if bshd:  # [B, S, H, D]
        shape = AttentionShape(q.shape[0] * q.shape[2], q.shape[1], k.shape[1], q.shape[-1], v.shape[-1])
    else:  # [.., H, S, D]
        shape = AttentionShape(numel(q.shape[:-2]), q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1])
    flops = sdpa_backward_flops(shape, masked=masked, dropout=dropout)
    return {M: io_cost(call, flops[M]), E: Cost(flops[E]), N: Cost(flops[N])}


@register_cost(["aten._scaled_dot_product_flash_attention_for_cpu_backward"], category=M)
def sdpa_flash_cpu_backward(call: AtenCall) -> dict[Category, Cost]:
    # (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask, scale)
    q, k, v = (_tensor(call, i, n) for i, n in ((1, "query"), (2, "key"), (3, "value")))
    masked = bool(call.arg(7, "is_causal", False)) or isinstance(call.kwarg("attn_mask"), TensorSpec)
    return _sdpa_backward(call, q, k, v, bshd=False, masked=masked, dropout=bool(call.arg(6, "dropout_p", 0.0)))


@register_cost(["aten._scaled_dot_product_flash_attention_backward"], category=M)
def sdpa_flash_backward(call: AtenCall) -> dict[Category, Cost]:
    # (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)
    q, k, v = (_tensor(call, i, n) for i, n in ((1, "query"), (2, "key"), (3, "value")))
    return _sdpa_backward(
        call,
        q,
        k,
        v,
        bshd=False,
        masked=bool(call.arg(11, "is_causal", False)),
        dropout=bool(call.arg(10, "dropout_p", 0.0)),
    )


@register_cost(["aten._scaled_dot_product_efficient_attention_backward"], category=M)
def sdpa_efficient_backward(call: AtenCall) -> dict[Category, Cost]:
    # (grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
    #  grad_input_mask, is_causal, scale)
    q, k, v = (_tensor(call, i, n) for i, n in ((1, "query"), (2, "key"), (3, "value")))
    masked = tensor_arg(call, 4, "attn_bias") is not None or bool(call.arg(11, "is_causal", False))
    return _sdpa_backward(call, q, k, v, bshd=False, masked=masked, dropout=bool(call.arg(9, "dropout_p", 0.0)))


@register_cost(["aten._scaled_dot_product_cudnn_attention_backward"], category=M)
def sdpa_cudnn_backward(call: AtenCall) -> dict[Category, Cost]:
    # (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
    #  cum_seq_k, max_q, max_k, dropout_p, is_causal, *, scale)
    q, k, v = (_tensor(call, i, n) for i, n in ((1, "query"), (2, "key"), (3, "value")))
    masked = tensor_arg(call, 8, "attn_bias") is not None or bool(call.arg(14, "is_causal", False))
    return _sdpa_backward(call, q, k, v, bshd=False, masked=masked, dropout=bool(call.arg(13, "dropout_p", 0.0)))


@register_cost(["aten._flash_attention_backward", "aten._efficient_attention_backward"], category=M)
def flash_attention_backward(call: AtenCall) -> dict[Category, Cost]:
    # (grad_out, query, key, value, ...) in the kernels' [B, S, H, D] layout; causal and dropout
    # arguments sit at different places in the two, so the per-score mask/dropout terms are left out
    q, k, v = (_tensor(call, i, n) for i, n in ((1, "query"), (2, "key"), (3, "value")))
    return _sdpa_backward(call, q, k, v, bshd=True, masked=False, dropout=False)


@register_cost(["aten.embedding_dense_backward"], category=E)
def embedding_dense_backward(call: AtenCall) -> Cost:
    # (grad_output[.., D], indices[..], num_weights, padding_idx, scale_grad_by_freq) -> [num_weights, D]
    g = _tensor(call, 0, "grad_output")
    return io_cost(call, g.numel)  # one add per gathered element into its row


def _reduction_divide(call: AtenCall, index: int) -> int:
    return int(call.arg(index, "reduction", REDUCTION_MEAN) == REDUCTION_MEAN)


@register_cost(["aten.binary_cross_entropy_backward"], category=E)
def binary_cross_entropy_backward(call: AtenCall) -> Cost:
    # (grad_output, self, target, weight, reduction)
    x = _tensor(call, 1, "self")
    per = BCE_BACKWARD_FLOPS + (tensor_arg(call, 3, "weight") is not None) + _reduction_divide(call, 4)
    return io_cost(call, per * x.numel)


@register_cost(["aten.nll_loss_backward", "aten.nll_loss2d_backward"], category=E)
def nll_loss_backward(call: AtenCall) -> Cost:
    # (grad_output, self[N, C, *d], target[N, *d], weight, reduction, ignore_index, total_weight):
    # one gathered element per target gets -w[t] * g (/ total_weight); the rest of grad_input is 0
    target = _tensor(call, 2, "target")  # self gives only grad_input's shape: not read
    weight = tensor_arg(call, 3, "weight")
    reduction = call.arg(4, "reduction", REDUCTION_MEAN)
    per = NLL_BACKWARD_FLOPS + (weight is not None) + (reduction == REDUCTION_MEAN)
    n = target.numel
    grad_out = _tensor(call, 0, "grad_output")
    reads = read_bytes(grad_out) + read_bytes(target) + (n * weight.itemsize if weight is not None else 0)
    reads += 0 if reduction == REDUCTION_NONE else read_bytes(_tensor(call, 6, "total_weight"))
    return Cost(per * n, reads, sum(write_bytes(o) for o in call.outputs))


def _pool_kernel(call: AtenCall, index: int, spatial_dims: int) -> int:
    k = call.arg(index, "kernel_size")
    k = (k,) if isinstance(k, int) else tuple(k)
    return numel(k * spatial_dims if len(k) == 1 else k)  # an int kernel applies to every spatial dim


@register_cost(["aten.max_pool2d_with_indices_backward", "aten.max_pool3d_with_indices_backward"], category=E)
def max_pool_backward(call: AtenCall) -> Cost:
    # (grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices)
    g, indices = _tensor(call, 0, "grad_output"), _tensor(call, 7, "indices")
    return io_cost(call, MAX_POOL_BACKWARD_FLOPS * g.numel, reads=[g, indices])  # self: its shape only


@register_cost(["aten.avg_pool2d_backward", "aten.avg_pool3d_backward"], category=E)
def avg_pool_backward(call: AtenCall) -> Cost:
    # (grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    g = _tensor(call, 0, "grad_output")
    kernel = _pool_kernel(call, 2, 3 if "3d" in call.packet else 2)
    return io_cost(call, g.numel * (kernel + AVG_POOL_BACKWARD_DIVIDE_FLOPS), reads=[g])


@register_cost(["aten._adaptive_avg_pool2d_backward", "aten._adaptive_avg_pool3d_backward"], category=E)
def adaptive_avg_pool_backward(call: AtenCall) -> Cost:
    # (grad_output[N, C, *out], self[N, C, *in]): each output's gradient / its window, added to the window
    g, x = _tensor(call, 0, "grad_output"), _tensor(call, 1, "self")
    dims = 3 if "3d" in call.packet else 2
    windows = numel(adaptive_window_total(i, o) for i, o in zip(x.shape[-dims:], g.shape[-dims:]))
    lead = numel(g.shape[: g.ndim - dims])  # N * C
    return io_cost(call, lead * windows + AVG_POOL_BACKWARD_DIVIDE_FLOPS * g.numel, reads=[g])


@register_cost(["aten.native_group_norm_backward"], category=N)
def group_norm_backward(call: AtenCall) -> Cost:
    # (grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask); rows = N * group
    g = _tensor(call, 0, "grad_out")
    weight = tensor_arg(call, 4, "weight")
    rows = int(call.arg(5, "N")) * int(call.arg(8, "group"))
    mask = _mask(call, 9, "output_mask", 3)
    per = (
        LN_XHAT_FLOPS * (mask[0] or mask[1])
        + (LN_INPUT_GRAD_FLOPS + (weight is not None)) * mask[0]
        + LN_WEIGHT_GRAD_FLOPS * mask[1]
        + LN_BIAS_GRAD_FLOPS * mask[2]
    )
    stats = (tensor_arg(call, 1, "input"), tensor_arg(call, 2, "mean"), tensor_arg(call, 3, "rstd"), weight)
    return io_cost(call, per * g.numel + rows * mask[0], reads=[g, *(t for t in stats if t is not None)])
