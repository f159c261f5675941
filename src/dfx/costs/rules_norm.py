"""Softmax and normalizations (layer, RMS, batch, group, instance norm): ``normalization`` category.

FLOPs follow the per-element convention of :mod:`dfx.costs.rules_pointwise` (one per scalar add,
mul, div, compare, exp, rsqrt, ...), applied to each op's textbook formula. A reduction of n
elements counts n adds (not n-1), as FlopCounterMode counts K adds per dot product. Per row of n:

    softmax      max (n), x - max (n), exp (n), sum (n), / sum (n)            5 per element
    log_softmax  max (n), x - max (n), exp (n), sum (n), log (1), - lse (n)   5 per element + 1 per row
    layer norm   sum (n), / n (1), x - mean (n), square (n), sum (n), / n (1),
                 + eps (1), rsqrt (1), * rstd (n), [* weight (n)], [+ bias (n)]
                 5 per element (+1 weight, +1 bias) + 4 per row
    RMS norm     square (n), sum (n), / n (1), + eps (1), rsqrt (1), * rstd (n), [* weight (n)]
                 3 per element (+1 weight) + 3 per row

Batch norm in training and group/instance norm use the layer-norm count with statistics per
channel (BN) or per (sample, group); BN with running statistics (eval) only applies them:
(x - mean) * rstd (2 per element) after rstd = rsqrt(var + eps) (2 per channel). Updating the
running statistics, running = (1 - m) * running + m * stat for mean and var plus the unbiased
correction of var, is 7 per channel.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost, numel, tensor_arg
from dfx.ir import AtenCall, TensorSpec

__all__ = ["SOFTMAX_FLOPS", "layer_norm_flops", "softmax_flops"]

N = Category.NORMALIZATION

SOFTMAX_FLOPS = 5  # per element: max, subtract, exp, sum, divide
SAFE_SOFTMAX_SELECT_FLOPS = 1  # _safe_softmax: a fully masked row gives 0, not NaN: 1 select per element
LOG_SOFTMAX_FLOPS = 5  # per element: max, subtract, exp, sum, subtract log-sum-exp (+1 log per row)
STATS_PER_ELEMENT = 5  # sum, subtract mean, square, sum, multiply by rstd
STATS_PER_ROW = 4  # mean divide, var divide, + eps, rsqrt
APPLY_PER_ELEMENT = 2  # with given (running) statistics: subtract mean, multiply by rstd
APPLY_PER_ROW = 2  # + eps, rsqrt
RMS_PER_ELEMENT = 3  # square, sum, multiply by rstd
RMS_PER_ROW = 3  # divide, + eps, rsqrt
RUNNING_STATS_UPDATE = 7  # 2 stats x (2 mul + 1 add) + the unbiased correction of var (1 mul)


def softmax_flops(elements: int) -> int:
    """FLOPs of a softmax over ``elements`` scores (rows do not matter: 5 per element)."""
    return SOFTMAX_FLOPS * elements


def layer_norm_flops(elements: int, rows: int, *, weight: bool, bias: bool) -> int:
    """FLOPs of standardizing ``elements`` in ``rows`` groups, then the optional affine."""
    return elements * (STATS_PER_ELEMENT + weight + bias) + rows * STATS_PER_ROW


def _input(call: AtenCall) -> TensorSpec:
    x = call.arg(0)
    if not isinstance(x, TensorSpec):
        raise ValueError(f"{call.op}: the first argument is not a tensor")
    return x


def _rows(x: TensorSpec, dim: object) -> int:
    """Number of rows when reducing over ``dim``."""
    if not x.shape:
        return 1
    d = int(dim) % x.ndim  # type: ignore[arg-type]
    return x.numel // x.shape[d] if x.shape[d] else 0


@register_cost(["aten._softmax", "aten.softmax", "aten.special_softmax"], category=N)
def softmax(call: AtenCall) -> Cost:
    return io_cost(call, softmax_flops(_input(call).numel))


@register_cost(["aten._safe_softmax"], category=N)
def safe_softmax(call: AtenCall) -> Cost:
    x = _input(call)
    return io_cost(call, softmax_flops(x.numel) + SAFE_SOFTMAX_SELECT_FLOPS * x.numel)


@register_cost(["aten._log_softmax", "aten.log_softmax", "aten.special_log_softmax"], category=N)
def log_softmax(call: AtenCall) -> Cost:
    x = _input(call)
    return io_cost(call, LOG_SOFTMAX_FLOPS * x.numel + _rows(x, call.arg(1, "dim", -1)))


@register_cost(["aten.native_layer_norm", "aten.layer_norm"], category=N)
def layer_norm(call: AtenCall) -> Cost:
    # (input, normalized_shape, weight, bias, eps): rows = numel / prod(normalized_shape)
    x = _input(call)
    inner = numel(call.arg(1, "normalized_shape"))
    rows = x.numel // inner if inner else 0
    weight, bias = tensor_arg(call, 2, "weight") is not None, tensor_arg(call, 3, "bias") is not None
    return io_cost(call, layer_norm_flops(x.numel, rows, weight=weight, bias=bias))


@register_cost(["aten.rms_norm", "aten._fused_rms_norm"], category=N)
def rms_norm(call: AtenCall) -> Cost:
    # (input, normalized_shape, weight, eps)
    x = _input(call)
    inner = numel(call.arg(1, "normalized_shape"))
    rows = x.numel // inner if inner else 0
    weight = tensor_arg(call, 2, "weight") is not None
    return io_cost(call, x.numel * (RMS_PER_ELEMENT + weight) + rows * RMS_PER_ROW)


def _batch_norm_args(call: AtenCall) -> tuple[bool, TensorSpec | None, TensorSpec | None]:
    """(training, running_mean, running_var) for every batch-norm signature."""
    name, overload = call.packet.split(".")[1], call.op.split(".")[2] if call.op.count(".") >= 2 else ""
    if overload == "no_stats":  # _native_batch_norm_legit.no_stats(input, w, b, training, momentum, eps)
        return bool(call.arg(3, "training", True)), None, None
    mean, var = tensor_arg(call, 3, "running_mean"), tensor_arg(call, 4, "running_var")
    if name == "_native_batch_norm_legit_no_training":
        return False, mean, var
    if name == "_batch_norm_with_update":
        return True, mean, var
    if name == "_batch_norm_no_update":  # running statistics if given, else batch statistics
        return mean is None, mean, var
    return bool(call.arg(5, "training", False)), mean, var


@register_cost(
    [
        "aten.batch_norm",
        "aten.native_batch_norm",
        "aten._native_batch_norm_legit",
        "aten._native_batch_norm_legit_no_training",
        "aten._native_batch_norm_legit_functional",
        "aten._batch_norm_with_update",
        "aten._batch_norm_no_update",
        "aten.cudnn_batch_norm",
        "aten.miopen_batch_norm",
    ],
    category=N,
)
def batch_norm(call: AtenCall) -> Cost:
    # input [N, C, *spatial]; statistics per channel C over N * prod(spatial) elements
    x = _input(call)
    channels = x.shape[1] if x.ndim > 1 else 1
    affine = (tensor_arg(call, 1, "weight") is not None) + (tensor_arg(call, 2, "bias") is not None)
    training, mean, var = _batch_norm_args(call)
    if training:
        flops = layer_norm_flops(x.numel, channels, weight=False, bias=False) + affine * x.numel
        if mean is not None:
            flops += RUNNING_STATS_UPDATE * channels
            if not call.packet.endswith("_functional"):  # updated in place: written back, not returned
                return io_cost(call, flops, writes=[*call.outputs, mean, *([var] if var is not None else [])])
        return io_cost(call, flops)
    flops = x.numel * (APPLY_PER_ELEMENT + affine) + channels * APPLY_PER_ROW
    return io_cost(call, flops)


@register_cost(["aten.native_group_norm", "aten.group_norm"], category=N)
def group_norm(call: AtenCall) -> Cost:
    x = _input(call)
    if call.packet == "aten.native_group_norm":  # (input, weight, bias, N, C, HxW, group, eps)
        weight, bias = tensor_arg(call, 1, "weight"), tensor_arg(call, 2, "bias")
        rows = int(call.arg(3, "N")) * int(call.arg(6, "group"))
    else:  # group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)
        weight, bias = tensor_arg(call, 2, "weight"), tensor_arg(call, 3, "bias")
        rows = x.shape[0] * int(call.arg(1, "num_groups")) if x.ndim > 1 else int(call.arg(1, "num_groups"))
    return io_cost(call, layer_norm_flops(x.numel, rows, weight=weight is not None, bias=bias is not None))


@register_cost(["aten.instance_norm"], category=N)
def instance_norm(call: AtenCall) -> Cost:
    # (input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled)
    x = _input(call)
    rows = x.shape[0] * x.shape[1] if x.ndim > 2 else x.shape[0]
    affine = (tensor_arg(call, 1, "weight") is not None) + (tensor_arg(call, 2, "bias") is not None)
    if call.arg(5, "use_input_stats", True):
        return io_cost(call, layer_norm_flops(x.numel, rows, weight=False, bias=False) + affine * x.numel)
    return io_cost(call, x.numel * (APPLY_PER_ELEMENT + affine) + rows * APPLY_PER_ROW)
