"""Small builders shared by the cost-model tests: specs, hand-made aten calls, capture + annotate."""

from __future__ import annotations

import warnings

from dfx.costs import CallCost, CostedGraph, annotate, cost_of_call
from dfx.ir import AtenCall, TensorSpec


def spec(*shape: int, dtype: str = "float32") -> TensorSpec:
    """A contiguous tensor spec."""
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return TensorSpec(shape, dtype, tuple(reversed(strides)))


def call(op: str, *args, outputs=(), **kwargs) -> AtenCall:
    """An aten call built by hand, as capture would record it."""
    return AtenCall(op, tuple(args), tuple(sorted(kwargs.items())), tuple(outputs))


def cost(c: AtenCall) -> CallCost:
    result = cost_of_call(c)
    assert result is not None, f"no rule for {c.op}"
    return result


def flops_of(c: AtenCall, category: str) -> int:
    return dict(cost(c).flops_by_category).get(category, 0)


def costed(model, args, kwargs=None, method: str = "auto") -> CostedGraph:
    """Capture ``model`` and annotate it; fails if any aten op was left uncosted."""
    from dfx.capture import capture

    graph = capture(model, args, kwargs, method=method)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an UnknownOpWarning fails the test
        cg = annotate(graph)
    assert cg.unknown_ops == (), cg.unknown_ops
    return cg


def matmul_flops(cg: CostedGraph) -> int:
    return cg.flops_by_category()["matmul"]


def flop_counter_total(fn, *args) -> int:
    """FlopCounterMode's total for ``fn(*args)``: the independent reference."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()
