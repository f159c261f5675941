"""Pooling and upsampling: window reductions and interpolation, ``elementwise`` category.

    max pool       one compare per window element:  out * prod(kernel)
    avg pool       one add per window element, one divide per output:  out * (prod(kernel) + 1)
    adaptive pool  the exact window sizes PyTorch uses, [floor(i*in/out), ceil((i+1)*in/out)),
                   summed per dim (+ one divide per output for the average)
    upsampling     nearest: a gather (``memory``, 0 FLOPs); (bi/tri)linear and bicubic: a weighted
                   sum of 2**d (4**d for cubic) neighbours, so 2 * taps - 1 per output element:
                   linear 3, bilinear 7, trilinear 15, bicubic 31 (weight computation ignored)

NB: padding positions are counted as window elements, as in FlopCounterMode's conv count.
"""

from __future__ import annotations

import math

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost, numel
from dfx.ir import AtenCall, TensorSpec

__all__ = ["adaptive_window_total"]

E = Category.ELEMENTWISE


def _spatial_dims(call: AtenCall) -> int:
    name = call.packet.split(".")[1]
    return next((d for d in (1, 2, 3) if f"{d}d" in name), 2)


def _kernel(call: AtenCall) -> int:
    k = call.arg(1, "kernel_size")
    k = (k,) if isinstance(k, int) else tuple(k)
    dims = _spatial_dims(call)
    return numel(k * dims if len(k) == 1 else k)  # an int kernel applies to every spatial dim


def _out(call: AtenCall) -> int:
    if not call.outputs:
        raise ValueError(f"{call.op}: the output spec is needed")
    return call.outputs[0].numel


@register_cost(
    [
        "aten.max_pool1d",
        "aten.max_pool2d",
        "aten.max_pool3d",
        "aten.max_pool2d_with_indices",
        "aten.max_pool3d_with_indices",
        "aten.max_pool1d_with_indices",
        "aten.mkldnn_max_pool2d",
    ],
    category=E,
)
def max_pool(call: AtenCall) -> Cost:
    return io_cost(call, _out(call) * _kernel(call))


@register_cost(["aten.avg_pool1d", "aten.avg_pool2d", "aten.avg_pool3d"], category=E)
def avg_pool(call: AtenCall) -> Cost:
    return io_cost(call, _out(call) * (_kernel(call) + 1))


def adaptive_window_total(size_in: int, size_out: int) -> int:
    """Sum of the adaptive-pool window lengths along one dim.

    Examples
    --------
    >>> adaptive_window_total(7, 1), adaptive_window_total(5, 3)  # [0,2) [1,4) [3,5)
    (7, 7)
    """
    return sum(math.ceil((i + 1) * size_in / size_out) - (i * size_in) // size_out for i in range(size_out))


def _adaptive_window_elements(call: AtenCall) -> tuple[int, int]:
    """(total window elements over all outputs, outputs)."""
    x = call.arg(0)
    if not isinstance(x, TensorSpec) or not call.outputs:
        raise ValueError(f"{call.op}: input and output specs are needed")
    out = call.outputs[0]
    dims = _spatial_dims(call)
    lead = numel(out.shape[: out.ndim - dims])  # N * C
    windows = numel(adaptive_window_total(i, o) for i, o in zip(x.shape[-dims:], out.shape[-dims:]))
    return lead * windows, out.numel


@register_cost(
    [
        "aten.adaptive_avg_pool1d",
        "aten.adaptive_avg_pool2d",
        "aten.adaptive_avg_pool3d",
        "aten._adaptive_avg_pool2d",
        "aten._adaptive_avg_pool3d",
    ],
    category=E,
)
def adaptive_avg_pool(call: AtenCall) -> Cost:
    window, out = _adaptive_window_elements(call)
    return io_cost(call, window + out)


@register_cost(["aten.adaptive_max_pool1d", "aten.adaptive_max_pool2d", "aten.adaptive_max_pool3d"], category=E)
def adaptive_max_pool(call: AtenCall) -> Cost:
    window, _ = _adaptive_window_elements(call)
    return io_cost(call, window)


@register_cost(
    [
        "aten.upsample_nearest1d",
        "aten.upsample_nearest2d",
        "aten.upsample_nearest3d",
        "aten._upsample_nearest_exact1d",
        "aten._upsample_nearest_exact2d",
        "aten._upsample_nearest_exact3d",
    ],
    category=Category.MEMORY,
)
def upsample_nearest(call: AtenCall) -> Cost:
    return io_cost(call)


_INTERP_TAPS_PER_DIM = {"linear": 2, "bilinear": 2, "trilinear": 2, "bicubic": 4}


@register_cost(
    [
        "aten.upsample_linear1d",
        "aten.upsample_bilinear2d",
        "aten._upsample_bilinear2d_aa",
        "aten.upsample_trilinear3d",
        "aten.upsample_bicubic2d",
        "aten._upsample_bicubic2d_aa",
    ],
    category=E,
)
def upsample_interp(call: AtenCall) -> Cost:
    kind = next(k for k in ("trilinear", "bilinear", "bicubic", "linear") if k in call.packet)
    taps = _INTERP_TAPS_PER_DIM[kind] ** _spatial_dims(call)
    return io_cost(call, _out(call) * (2 * taps - 1))  # taps multiplies + (taps - 1) adds
