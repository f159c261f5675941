"""Reductions, scans, sorts and binary searches: ``elementwise`` category, bytes = input read + outputs written.

A reduction of n inputs into m outputs counts n operations (the accumulator starts at the
identity, as FlopCounterMode counts K adds per dot product), plus what each output needs after:

    sum, nansum, amax, amin, max, min, prod, argmax, argmin, any, all     n
    mean                                                                   n + m  (one divide each)
    var    mean (n + m), x - mean (n), square (n), sum (n), / (n - c) (m)  4n + 2m
    std    var, then sqrt (m)                                              4n + 3m
    var_mean, std_mean                                                     as var, std
    vector norm   p=2: square, sum (2n) + sqrt (m);  p=1 or inf: abs, sum/max (2n);
                  other p: abs, pow, sum (3n) + pow (m)
    logsumexp     max, subtract, exp, sum (4n) + log, add max back (2m)
    count_nonzero compare, add (2n)
    cumsum, cumprod, cummax, cummin   n
    sort, argsort   n * ceil(log2 s) compares for rows of length s;  topk   n compares (one pass)
    bucketize, searchsorted   a binary search per value over b sorted boundaries:
                    ceil(log2(b + 1)) compares each (the worst case; index arithmetic not counted);
                    the boundaries are read once (they stay in cache), the values read, indices written
"""

from __future__ import annotations

import math

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost
from dfx.ir import AtenCall, TensorSpec

__all__ = ["binary_search_compares"]

E = Category.ELEMENTWISE


def _input(call: AtenCall) -> TensorSpec:
    x = call.arg(0)
    if not isinstance(x, TensorSpec):
        raise ValueError(f"{call.op}: the first argument is not a tensor")
    return x


def _outputs(call: AtenCall) -> int:
    """m: elements of the first output (the reduced values)."""
    return call.outputs[0].numel if call.outputs else 1


@register_cost(
    [
        "aten.sum",
        "aten.nansum",
        "aten.amax",
        "aten.amin",
        "aten.max",
        "aten.min",
        "aten.prod",
        "aten.argmax",
        "aten.argmin",
        "aten.any",
        "aten.all",
        "aten.cumsum",
        "aten.cumprod",
        "aten.cummax",
        "aten.cummin",
        "aten.aminmax",
    ],
    category=E,
)
def reduce_one_per_input(call: AtenCall) -> Cost:
    return io_cost(call, _input(call).numel)


@register_cost(["aten.mean", "aten.nanmean"], category=E)
def mean(call: AtenCall) -> Cost:
    return io_cost(call, _input(call).numel + _outputs(call))


@register_cost(["aten.var", "aten.var_mean"], category=E)
def var(call: AtenCall) -> Cost:
    return io_cost(call, 4 * _input(call).numel + 2 * _outputs(call))


@register_cost(["aten.std", "aten.std_mean"], category=E)
def std(call: AtenCall) -> Cost:
    return io_cost(call, 4 * _input(call).numel + 3 * _outputs(call))


@register_cost(["aten.linalg_vector_norm", "aten.norm"], category=E)
def vector_norm(call: AtenCall) -> Cost:
    n, m = _input(call).numel, _outputs(call)
    p = call.arg(1, "ord" if call.packet == "aten.linalg_vector_norm" else "p", 2)
    p = 2 if p is None else p
    if p == 2:
        return io_cost(call, 2 * n + m)
    if p in (1, math.inf, -math.inf, "inf", "-inf"):
        return io_cost(call, 2 * n)
    return io_cost(call, 3 * n + m)


@register_cost(["aten.logsumexp"], category=E)
def logsumexp(call: AtenCall) -> Cost:
    return io_cost(call, 4 * _input(call).numel + 2 * _outputs(call))


@register_cost(["aten.count_nonzero"], category=E)
def count_nonzero(call: AtenCall) -> Cost:
    return io_cost(call, 2 * _input(call).numel)


@register_cost(["aten.sort", "aten.argsort"], category=E)
def sort(call: AtenCall) -> Cost:
    # (self, [stable,] dim, descending): n * ceil(log2 s) compares, s the length of the sorted dim
    x = _input(call)
    dim = next((a for a in call.args[1:] if isinstance(a, int) and not isinstance(a, bool)), -1)
    dim = call.kwarg("dim", dim)
    s = x.shape[int(dim) % x.ndim] if x.ndim else 1
    return io_cost(call, x.numel * max(1, math.ceil(math.log2(s))) if s > 1 else 0)


def binary_search_compares(boundaries: int) -> int:
    """Compares of one worst-case binary search over ``boundaries`` sorted values: ceil(log2(b + 1)).

    Examples
    --------
    >>> [binary_search_compares(b) for b in (0, 1, 2, 3, 7, 8)]
    [0, 1, 2, 2, 3, 4]
    """
    return boundaries.bit_length()  # floor(log2 b) + 1 = ceil(log2(b + 1)) for b >= 1, exactly


@register_cost(["aten.bucketize"], category=E)
def bucketize(call: AtenCall) -> Cost:
    # (self [..] or a Scalar, boundaries [b]; out_int32, right): one search per value
    boundaries = call.arg(1, "boundaries")
    if not isinstance(boundaries, TensorSpec):
        raise ValueError(f"{call.op}: boundaries is not a tensor")
    values = call.arg(0, "self")
    n = values.numel if isinstance(values, TensorSpec) else 1
    return io_cost(call, n * binary_search_compares(boundaries.shape[-1] if boundaries.ndim else 1))


@register_cost(["aten.searchsorted"], category=E)
def searchsorted(call: AtenCall) -> Cost:
    # (sorted_sequence [*, b], self [*, k] or a Scalar; out_int32, right, side, sorter): one search per
    # value, each in its own row of b (a sorter adds an indirection, no compares)
    sequence = _input(call)
    values = call.arg(1, "self")
    n = values.numel if isinstance(values, TensorSpec) else 1
    return io_cost(call, n * binary_search_compares(sequence.shape[-1] if sequence.ndim else 1))


@register_cost(["aten.topk"], category=E)
def topk(call: AtenCall) -> Cost:
    return io_cost(call, _input(call).numel)  # NB: one selection pass; ignores the heap's log k
