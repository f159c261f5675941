"""Pointwise ops and activations: FLOPs per output element, bytes = inputs read + output written.

Convention (``docs/cost-model.md``): one FLOP per scalar add, subtract, multiply, divide, compare or
select, and one per elementary-function evaluation (exp, log, log1p, tanh, erf, sqrt, rsqrt, sin,
...), as JAX's roofline rules count a unary or binary primitive (``_unary_p_roofline``). An op
defined by a formula of several of these counts each one in that formula, written beside it.
In-place (``relu_``) and ``out=`` overloads reach these rules through the registry's fallback.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost, out_numel
from dfx.ir import AtenCall

__all__ = [
    "GELU_ERF_FLOPS",
    "GELU_TANH_FLOPS",
    "RELU_FLOPS",
    "SIGMOID_FLOPS",
    "SILU_FLOPS",
    "gelu_flops_per_element",
]

E = Category.ELEMENTWISE

RELU_FLOPS = 1  # max(x, 0): 1 compare
LEAKY_RELU_FLOPS = 2  # x > 0 ? x : a*x: 1 compare + 1 mul (prelu, rrelu alike)
SIGMOID_FLOPS = 4  # 1 / (1 + exp(-x)): neg, exp, add, div
SILU_FLOPS = SIGMOID_FLOPS + 1  # x * sigmoid(x)
GELU_ERF_FLOPS = 5  # 0.5 * x * (1 + erf(x / sqrt(2))): div, erf, add, mul x, mul 0.5
# 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))): x*x*x (2), *0.044715 (1), +x (1),
# *sqrt(2/pi) (1), tanh (1), +1 (1), *x (1), *0.5 (1)
GELU_TANH_FLOPS = 9
ELU_FLOPS = 4  # x > 0 ? x : alpha*(exp(x) - 1): compare, exp, sub, mul (+1 per non-unit scale)
SOFTPLUS_FLOPS = 5  # beta*x > threshold ? x : log1p(exp(beta*x)) / beta: mul, compare, exp, log1p, div
MISH_FLOPS = 4  # x * tanh(log1p(exp(x))): exp, log1p, tanh, mul
LOGSIGMOID_FLOPS = 4  # -log1p(exp(-x)): neg, exp, log1p, neg
HARDSIGMOID_FLOPS = 4  # min(max(x + 3, 0), 6) / 6: add, 2 compares, div
HARDSWISH_FLOPS = HARDSIGMOID_FLOPS + 1  # x * hardsigmoid(x)
GLU_FLOPS = SIGMOID_FLOPS + 1  # a * sigmoid(b), per output element (the input is [.., 2n, ..])
DROPOUT_FLOPS = 3  # rand < p (1 compare), x * mask (1 mul), * 1/(1-p) (1 mul); RNG not counted


# Real FLOPs of one complex-valued element: (a+bi)(c+di) = (ac-bd) + (ad+bc)i is 4 muls + 2 adds;
# a complex add or subtract is 2 real ones; |a+bi| = sqrt(a*a + b*b) is 2 muls, 1 add, 1 sqrt.
# Other ops on complex tensors count as their real formula (an undercount, stated in the docs).
_COMPLEX_FLOPS = {"aten.mul": 6, "aten.add": 2, "aten.sub": 2, "aten.rsub": 2, "aten.abs": 4}


def _per_element(call: AtenCall, flops: int) -> Cost:
    if call.outputs and call.outputs[0].dtype.startswith("complex"):
        flops = _COMPLEX_FLOPS.get(call.packet.rstrip("_"), flops)
    return io_cost(call, flops * out_numel(call))


# One operation per output element.
_ONE_OP = [
    "aten.mul",
    "aten.true_divide",
    "aten.floor_divide",
    "aten.remainder",
    "aten.fmod",
    "aten.neg",
    "aten.abs",
    "aten.reciprocal",
    "aten.sqrt",
    "aten.rsqrt",
    "aten.square",
    "aten.exp",
    "aten.exp2",
    "aten.expm1",
    "aten.log",
    "aten.log2",
    "aten.log10",
    "aten.log1p",
    "aten.sin",
    "aten.cos",
    "aten.tan",
    "aten.asin",
    "aten.acos",
    "aten.atan",
    "aten.atan2",
    "aten.sinh",
    "aten.cosh",
    "aten.tanh",
    "aten.asinh",
    "aten.acosh",
    "aten.atanh",
    "aten.erf",
    "aten.erfc",
    "aten.erfinv",
    "aten.lgamma",
    "aten.digamma",
    "aten.i0",
    "aten.sinc",
    "aten.pow",
    "aten.float_power",  # one elementary function evaluation, whatever the exponent
    "aten.sign",
    "aten.sgn",
    "aten.signbit",
    "aten.floor",
    "aten.ceil",
    "aten.round",
    "aten.trunc",
    "aten.frac",
    "aten.copysign",
    "aten.heaviside",
    "aten.nan_to_num",
    "aten.relu",
    "aten.threshold",  # relu: max(x, 0); threshold: x > t ? x : v (1 compare-select)
    "aten.maximum",
    "aten.minimum",
    "aten.fmax",
    "aten.fmin",
    "aten.max.other",
    "aten.min.other",
    "aten.clamp_min",
    "aten.clamp_max",
    "aten.eq",
    "aten.ne",
    "aten.lt",
    "aten.le",
    "aten.gt",
    "aten.ge",
    "aten.isnan",
    "aten.isinf",
    "aten.isfinite",
    "aten.isposinf",
    "aten.isneginf",
    "aten.logical_and",
    "aten.logical_or",
    "aten.logical_xor",
    "aten.logical_not",
    "aten.bitwise_and",
    "aten.bitwise_or",
    "aten.bitwise_xor",
    "aten.bitwise_not",
    "aten.bitwise_left_shift",
    "aten.bitwise_right_shift",
    "aten.__and__",
    "aten.__or__",
    "aten.__xor__",
    "aten.__lshift__",
    "aten.__rshift__",
    "aten.where",
    "aten.masked_fill",  # one select per output element
]


@register_cost(_ONE_OP, category=E)
def one_op_per_element(call: AtenCall) -> Cost:
    return _per_element(call, 1)


@register_cost(["aten.add", "aten.sub", "aten.rsub"], category=E)
def add_sub(call: AtenCall) -> Cost:
    # self + alpha * other: 1 add, plus 1 mul when alpha != 1
    alpha = call.kwarg("alpha", 1)
    return _per_element(call, 1 + (alpha not in (1, None)))


@register_cost(["aten.div"], category=E)
def div(call: AtenCall) -> Cost:
    # self / other: 1 div, plus 1 floor/trunc with rounding_mode
    return _per_element(call, 1 + (call.kwarg("rounding_mode") is not None))


@register_cost(["aten.clamp", "aten.clip"], category=E)
def clamp(call: AtenCall) -> Cost:
    # min(max(x, lo), hi): 1 compare per bound given
    bounds = [call.arg(1, "min"), call.arg(2, "max")]
    return _per_element(call, sum(b is not None for b in bounds))


@register_cost(["aten.hardtanh"], category=E)
def hardtanh(call: AtenCall) -> Cost:
    return _per_element(call, 2)  # min(max(x, lo), hi): 2 compares (relu6 lowers here)


@register_cost(
    ["aten.leaky_relu", "aten.prelu", "aten._prelu_kernel", "aten.rrelu", "aten.rrelu_with_noise"], category=E
)
def leaky_relu(call: AtenCall) -> Cost:
    return _per_element(call, LEAKY_RELU_FLOPS)


@register_cost(["aten.sigmoid"], category=E)
def sigmoid(call: AtenCall) -> Cost:
    return _per_element(call, SIGMOID_FLOPS)


@register_cost(["aten.silu"], category=E)
def silu(call: AtenCall) -> Cost:
    return _per_element(call, SILU_FLOPS)


def gelu_flops_per_element(approximate: object) -> int:
    """FLOPs of one GELU: 5 for the erf form, 9 for ``approximate="tanh"``."""
    return GELU_TANH_FLOPS if approximate == "tanh" else GELU_ERF_FLOPS


@register_cost(["aten.gelu"], category=E)
def gelu(call: AtenCall) -> Cost:
    return _per_element(call, gelu_flops_per_element(call.arg(1, "approximate", "none")))


@register_cost(["aten.elu"], category=E)
def elu(call: AtenCall) -> Cost:
    # scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)); selu and celu lower here
    scale, input_scale = call.arg(2, "scale", 1), call.arg(3, "input_scale", 1)
    return _per_element(call, ELU_FLOPS + (scale != 1) + (input_scale != 1))


@register_cost(["aten.softplus"], category=E)
def softplus(call: AtenCall) -> Cost:
    return _per_element(call, SOFTPLUS_FLOPS)


@register_cost(["aten.mish"], category=E)
def mish(call: AtenCall) -> Cost:
    return _per_element(call, MISH_FLOPS)


@register_cost(["aten.log_sigmoid", "aten.log_sigmoid_forward"], category=E)
def log_sigmoid(call: AtenCall) -> Cost:
    return _per_element(call, LOGSIGMOID_FLOPS)


@register_cost(["aten.hardsigmoid"], category=E)
def hardsigmoid(call: AtenCall) -> Cost:
    return _per_element(call, HARDSIGMOID_FLOPS)


@register_cost(["aten.hardswish"], category=E)
def hardswish(call: AtenCall) -> Cost:
    return _per_element(call, HARDSWISH_FLOPS)


@register_cost(["aten.glu"], category=E)
def glu(call: AtenCall) -> Cost:
    return _per_element(call, GLU_FLOPS)


@register_cost(["aten.logit"], category=E)
def logit(call: AtenCall) -> Cost:
    # log(x / (1 - x)): sub, div, log; with eps, clamp(x, eps, 1 - eps) adds 2 compares
    return _per_element(call, 3 + 2 * (call.arg(1, "eps") is not None))


@register_cost(["aten.xlogy"], category=E)
def xlogy(call: AtenCall) -> Cost:
    return _per_element(call, 2)  # x * log(y): log, mul


@register_cost(["aten.hypot"], category=E)
def hypot(call: AtenCall) -> Cost:
    return _per_element(call, 4)  # sqrt(x*x + y*y): 2 mul, add, sqrt


POLAR_FLOPS = 4  # abs * cos(angle) + i * abs * sin(angle): cos, sin, 2 muls per complex output element


@register_cost(["aten.polar"], category=E)
def polar(call: AtenCall) -> Cost:
    # (abs real [..], angle real [..]) -> complex [..] (broadcast): reads both, writes the complex output
    return io_cost(call, POLAR_FLOPS * out_numel(call))


@register_cost(["aten.lerp"], category=E)
def lerp(call: AtenCall) -> Cost:
    return _per_element(call, 3)  # start + weight * (end - start): sub, mul, add


@register_cost(["aten.addcmul", "aten.addcdiv"], category=E)
def addcmul(call: AtenCall) -> Cost:
    # self + value * t1 {*,/} t2: mul or div, add, plus 1 mul when value != 1
    return _per_element(call, 2 + (call.kwarg("value", 1) != 1))


@register_cost(["aten.dropout", "aten.feature_dropout", "aten.alpha_dropout", "aten.feature_alpha_dropout"], category=E)
def dropout(call: AtenCall) -> Cost | dict[Category, Cost]:
    # (input, p, train): an identity in eval mode or with p == 0 (a view: no bytes, no FLOPs)
    p, train = call.arg(1, "p", 0.5), call.arg(2, "train", True)
    if not train or p == 0:
        return {Category.VIEW: Cost.zeros()}
    return _per_element(call, DROPOUT_FLOPS)


@register_cost(["aten.native_dropout"], category=E)
def native_dropout(call: AtenCall) -> Cost | dict[Category, Cost]:
    # (input, p, train) -> (output, mask); in eval it returns a copy of input and a mask of ones
    p, train = call.arg(1, "p", 0.5), call.arg(2, "train", True)
    if train is False or p == 0:
        return {Category.MEMORY: io_cost(call)}
    return _per_element(call, DROPOUT_FLOPS)
