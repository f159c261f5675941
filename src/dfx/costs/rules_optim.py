"""Optimizer steps: ``torch.optim``'s fused kernels, one call over every parameter.

``torch.optim.Adam(..., fused=True).step()`` (and ``AdamW``, ``SGD``) updates every parameter of a
device and dtype in one ``aten._fused_adam_`` / ``_fused_adamw_`` / ``_fused_sgd_`` call, in place.
FLOPs per parameter element follow the per-element convention of :mod:`dfx.costs.rules_pointwise`
applied to the algorithm of ``torch/optim/adam.py`` and ``sgd.py`` (``_single_tensor_adam``,
``_single_tensor_sgd``; the algorithms are written out in the torch.optim docs,
https://pytorch.org/docs/stable/generated/torch.optim.Adam.html and ``.SGD.html``):

    Adam   m.lerp_(g, 1 - beta1)                       m + (1 - beta1) * (g - m): sub, mul, add   3
           v.mul_(beta2).addcmul_(g, g, 1 - beta2)     mul, g*g, mul, add                          4
           denom = v.sqrt() / sqrt(bias_c2) + eps      sqrt, div, add                              3
           p.addcdiv_(m, denom, value=-lr / bias_c1)   div, mul, add                               3
                                                                                                   13
           weight_decay (L2, Adam): g + wd * p  +2; decoupled (AdamW): p * (1 - lr * wd)  +1;
           amsgrad: max(v_max, v)  +1. The bias corrections are scalars, once per step.
    SGD    p.add_(g, alpha=-lr)                        mul, add                                    2
           momentum: buf.mul_(momentum).add_(g)        mul, add (+1 with dampening)               +2
           nesterov: g + momentum * buf                                                           +2
           weight_decay: g + wd * p                                                               +2

Bytes: the kernel reads every parameter, gradient and state tensor (and the step counts) and
writes the parameters and states back. NB: the step count's ``+= 1`` is a separate
``_foreach_add_`` before the kernel (one scalar per parameter tensor), not counted.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import read_bytes, write_bytes
from dfx.ir import AtenCall, TensorSpec

__all__ = ["ADAM_FLOPS", "SGD_FLOPS", "SGD_MOMENTUM_FLOPS", "adam_flops_per_element", "sgd_flops_per_element"]

E = Category.ELEMENTWISE

ADAM_FLOPS = 13  # lerp (3) + mul/addcmul (4) + sqrt/div/add (3) + addcdiv (3)
ADAM_L2_DECAY_FLOPS = 2  # g + wd * p
ADAMW_DECAY_FLOPS = 1  # p * (1 - lr * wd), the factor a scalar
AMSGRAD_FLOPS = 1  # max(v_max, v)
SGD_FLOPS = 2  # p - lr * g
SGD_MOMENTUM_FLOPS = 2  # momentum * buf + g
SGD_DAMPENING_FLOPS = 1  # (1 - dampening) * g
SGD_NESTEROV_FLOPS = 2  # g + momentum * buf
SGD_DECAY_FLOPS = 2  # g + wd * p


def adam_flops_per_element(*, weight_decay: float = 0.0, decoupled: bool = False, amsgrad: bool = False) -> int:
    """FLOPs of one Adam / AdamW update of one parameter element.

    Examples
    --------
    >>> adam_flops_per_element(), adam_flops_per_element(weight_decay=0.01, decoupled=True)
    (13, 14)
    """
    decay = (ADAMW_DECAY_FLOPS if decoupled else ADAM_L2_DECAY_FLOPS) if weight_decay else 0
    return ADAM_FLOPS + decay + AMSGRAD_FLOPS * bool(amsgrad)


def sgd_flops_per_element(
    *,
    momentum: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
    first_step: bool = False,
) -> int:
    """FLOPs of one SGD update of one parameter element (the momentum buffer is a copy of g on the first step).

    Examples
    --------
    >>> sgd_flops_per_element(), sgd_flops_per_element(momentum=0.9)
    (2, 4)
    """
    flops = SGD_FLOPS + SGD_DECAY_FLOPS * bool(weight_decay)
    if momentum and not first_step:
        flops += SGD_MOMENTUM_FLOPS + SGD_DAMPENING_FLOPS * bool(dampening)
    return flops + SGD_NESTEROV_FLOPS * bool(momentum and nesterov)


def _list(call: AtenCall, index: int, name: str) -> tuple[TensorSpec, ...]:
    value = call.arg(index, name)
    if value is None:
        return ()
    if not isinstance(value, (tuple, list)) or not all(isinstance(t, TensorSpec) for t in value):
        raise ValueError(f"{call.op}: argument {index} ({name}) should be a list of tensors")
    return tuple(value)


def _step(
    flops_per_element: int, updated: list[tuple[TensorSpec, ...]], read_only: list[tuple[TensorSpec, ...]]
) -> Cost:
    params = updated[0]
    elements = sum(p.numel for p in params)
    reads = sum(read_bytes(t) for group in updated + read_only for t in group)
    writes = sum(write_bytes(t) for group in updated for t in group)
    return Cost(flops_per_element * elements, reads, writes)


@register_cost(["aten._fused_adam_", "aten._fused_adam", "aten._fused_adamw_", "aten._fused_adamw"], category=E)
def fused_adam(call: AtenCall) -> Cost:
    # (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1, beta2,
    #  weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)
    params, grads = _list(call, 0, "self"), _list(call, 1, "grads")
    m, v, v_max, steps = (
        _list(call, i, n) for i, n in ((2, "exp_avgs"), (3, "exp_avg_sqs"), (4, "max_exp_avg_sqs"), (5, "state_steps"))
    )
    amsgrad = bool(call.kwarg("amsgrad", False))
    per = adam_flops_per_element(
        weight_decay=float(call.kwarg("weight_decay", 0.0) or 0.0),
        decoupled=call.packet.startswith("aten._fused_adamw"),
        amsgrad=amsgrad,
    )
    return _step(per, [params, m, v] + ([v_max] if amsgrad else []), [grads, steps])


@register_cost(["aten._fused_sgd_", "aten._fused_sgd"], category=E)
def fused_sgd(call: AtenCall) -> Cost:
    # (params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
    #  maximize, is_first_step, grad_scale, found_inf)
    params, grads, bufs = _list(call, 0, "self"), _list(call, 1, "grads"), _list(call, 2, "momentum_buffer_list")
    momentum = float(call.kwarg("momentum", 0.0) or 0.0)
    per = sgd_flops_per_element(
        momentum=momentum,
        dampening=float(call.kwarg("dampening", 0.0) or 0.0),
        nesterov=bool(call.kwarg("nesterov", False)),
        weight_decay=float(call.kwarg("weight_decay", 0.0) or 0.0),
        first_step=bool(call.kwarg("is_first_step", False)),
    )
    return _step(per, [params] + ([bufs] if momentum else []), [grads])
