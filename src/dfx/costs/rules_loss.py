"""Losses: a per-element formula, then the reduction. ``elementwise`` category.

Each loss counts, per element, the operations of its defining formula (as PyTorch's own
decompositions write it: ``torch/_decomp/decompositions.py``, ``torch/_refs/nn/functional``), with
the per-element convention of :mod:`dfx.costs.rules_pointwise` (a compare-select counts 1 and both
branches' operations count, as for ELU), over the n elements of the broadcast of its inputs; then
its reduction (``at::Reduction``):

    reduction   0 none: nothing    1 mean: n adds + 1 divide    2 sum: n adds

    mse_loss            (x - y)^2: sub, square                                                  2
    l1_loss             |x - y|: sub, abs                                                       2
    smooth_l1_loss      z = |x - y| (2); z < beta ? 0.5*z*z/beta (3) : z - 0.5*beta (1);
                        compare-select (1)                                                      7
    huber_loss          z = |x - y| (2); z < delta ? 0.5*z*z (2) : delta*(z - 0.5*delta) (2);
                        compare-select (1)                                                      7
    binary_cross_entropy  (y - 1)*max(log1p(-x), -100) - y*max(log(x), -100): sub, neg, log1p,
                        max, mul, log, max, mul, sub                                            9 (+1 weight)
    binary_cross_entropy_with_logits  (1 - y)*x - log_sigmoid(x): sub, mul, log_sigmoid (4),
                        sub                                                                     7 (+1 weight)
                        pos_weight p: log_sigmoid(x) * (1 + (p - 1)*y): mul, add, mul per
                        element (+3), p - 1 once per element of p
    kl_div              xlogy(y, y) - y*x: xlogy (2), mul, sub                                  4
                        log_target: exp(y)*(y - x): sub, exp, mul                               3

``nll_loss_forward`` (and ``nll_loss2d_forward``, its [N, C, H, W] form) gathers one input per
target: for each of the n targets, ``t != ignore_index ? -w[t]*x[t] : 0``: a compare-select and a
negate (2), times the class weight (+1 with ``weight``). Summed (sum, mean), it also accumulates
``total_weight``, the sum of the gathered weights (a count without ``weight``): 2n adds, and mean
divides once. It reads only the gathered inputs and weights (a gather, as ``embedding``: n
elements each at their own dtype) plus the targets, and writes the output and ``total_weight``.

Inputs are read once each (broadcast views once), outputs written; ``out=`` buffers are not read.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.rules_pointwise import LOGSIGMOID_FLOPS
from dfx.costs.terms import broadcast_shapes, io_cost, numel, read_bytes, tensor_arg, write_bytes
from dfx.ir import AtenCall, TensorSpec

__all__ = ["REDUCTION_MEAN", "REDUCTION_NONE", "REDUCTION_SUM", "reduction_flops"]

E = Category.ELEMENTWISE

# at::Reduction (aten/src/ATen/core/Reduction.h); every loss defaults to mean.
REDUCTION_NONE, REDUCTION_MEAN, REDUCTION_SUM = 0, 1, 2

MSE_FLOPS = 2  # (x - y)^2: sub, square
L1_FLOPS = 2  # |x - y|: sub, abs
SMOOTH_L1_FLOPS = 7  # sub, abs; 0.5*z*z/beta: 2 mul, div; z - 0.5*beta: sub; compare-select
HUBER_FLOPS = 7  # sub, abs; 0.5*z*z: 2 mul; delta*(z - 0.5*delta): sub, mul; compare-select
BCE_FLOPS = 9  # (y - 1)*max(log1p(-x), -100) - y*max(log(x), -100): sub, neg, log1p, max, mul, log, max, mul, sub
BCE_LOGITS_FLOPS = 3 + LOGSIGMOID_FLOPS  # (1 - y)*x - log_sigmoid(x): sub, mul, sub + log_sigmoid
POS_WEIGHT_FLOPS = 3  # log_sigmoid(x) * (1 + (p - 1)*y): mul, add, mul (p - 1 once per element of p)
KL_DIV_FLOPS = 4  # xlogy(y, y) - y*x: xlogy (log, mul), mul, sub
KL_DIV_LOG_TARGET_FLOPS = 3  # exp(y)*(y - x): sub, exp, mul
NLL_FLOPS = 2  # t != ignore_index ? -x[t] : 0: compare-select, negate (+1: * w[t])


def reduction_flops(n: int, reduction: object) -> int:
    """FLOPs of reducing n per-element losses: none 0, sum n adds, mean n adds + 1 divide.

    Examples
    --------
    >>> reduction_flops(128, REDUCTION_NONE), reduction_flops(128, REDUCTION_SUM), reduction_flops(128, REDUCTION_MEAN)
    (0, 128, 129)
    """
    if reduction == REDUCTION_NONE:
        return 0
    if reduction == REDUCTION_SUM:
        return n
    if reduction == REDUCTION_MEAN:
        return n + 1
    raise ValueError(f"unknown reduction {reduction!r} (0 none, 1 mean, 2 sum)")


def _tensor(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


def _loss(call: AtenCall, per_element: int, reduction_index: int, extra: tuple[TensorSpec | None, ...] = ()) -> Cost:
    """``per_element`` FLOPs over the broadcast of self, target and ``extra``, then the reduction."""
    x, y = _tensor(call, 0, "self"), _tensor(call, 1, "target")
    given = [t for t in extra if t is not None]
    n = numel(broadcast_shapes(x.shape, y.shape, *(t.shape for t in given)))
    reduction = call.arg(reduction_index, "reduction", REDUCTION_MEAN)
    return io_cost(call, per_element * n + reduction_flops(n, reduction), reads=[x, y, *given])


@register_cost(["aten.mse_loss"], category=E)
def mse_loss(call: AtenCall) -> Cost:
    return _loss(call, MSE_FLOPS, 2)  # (self, target, reduction)


@register_cost(["aten.l1_loss"], category=E)
def l1_loss(call: AtenCall) -> Cost:
    return _loss(call, L1_FLOPS, 2)  # (self, target, reduction)


@register_cost(["aten.smooth_l1_loss"], category=E)
def smooth_l1_loss(call: AtenCall) -> Cost:
    return _loss(call, SMOOTH_L1_FLOPS, 2)  # (self, target, reduction, beta)


@register_cost(["aten.huber_loss"], category=E)
def huber_loss(call: AtenCall) -> Cost:
    return _loss(call, HUBER_FLOPS, 2)  # (self, target, reduction, delta)


@register_cost(["aten.binary_cross_entropy"], category=E)
def binary_cross_entropy(call: AtenCall) -> Cost:
    # (self, target, weight, reduction): the weight multiplies each element's loss
    weight = tensor_arg(call, 2, "weight")
    return _loss(call, BCE_FLOPS + (weight is not None), 3, (weight,))


@register_cost(["aten.binary_cross_entropy_with_logits"], category=E)
def binary_cross_entropy_with_logits(call: AtenCall) -> Cost:
    # (self, target, weight, pos_weight, reduction)
    weight, pos_weight = tensor_arg(call, 2, "weight"), tensor_arg(call, 3, "pos_weight")
    per_element = BCE_LOGITS_FLOPS + (weight is not None) + POS_WEIGHT_FLOPS * (pos_weight is not None)
    cost = _loss(call, per_element, 4, (weight, pos_weight))
    return cost + Cost(pos_weight.numel) if pos_weight is not None else cost  # p - 1, once per element of p


@register_cost(["aten.kl_div"], category=E)
def kl_div(call: AtenCall) -> Cost:
    # (self, target, reduction, *, log_target); F.kl_div's "batchmean" is reduction=sum, then a divide
    log_target = call.kwarg("log_target", False)
    return _loss(call, KL_DIV_LOG_TARGET_FLOPS if log_target else KL_DIV_FLOPS, 2)


@register_cost(["aten.nll_loss_forward", "aten.nll_loss2d_forward", "aten.nll_loss", "aten.nll_loss2d"], category=E)
def nll_loss(call: AtenCall) -> Cost:
    # (self, target, weight, reduction, ignore_index); self [N, C, *d] (or [C]), target [N, *d] (or []):
    # n = numel(target) gathered inputs x[i, t_i] (and weights w[t_i])
    x, target = _tensor(call, 0, "self"), _tensor(call, 1, "target")
    weight = tensor_arg(call, 2, "weight")
    n = target.numel
    reduction = call.arg(3, "reduction", REDUCTION_MEAN)
    flops = (NLL_FLOPS + (weight is not None)) * n
    if reduction != REDUCTION_NONE:
        flops += n + reduction_flops(n, reduction)  # total_weight (n adds) + the loss sum (n) [+ divide]
    gathered = n * x.itemsize + (n * weight.itemsize if weight is not None else 0)
    return Cost(flops, gathered + read_bytes(target), sum(write_bytes(o) for o in call.outputs))
