"""Convolutions, 1-3 d, grouped, depthwise and transposed, through every aten entry point.

The weight already holds the per-group channel count, so groups never appear in the formula (the
DeepSpeed bug of PB-08 divided by them twice):

    forward     weight [C_out, C_in/G, *k]   MACs = N * prod(out_spatial) * C_out * (C_in/G) * prod(k)
    transposed  weight [C_in, C_out/G, *k]   MACs = N * prod(in_spatial)  * C_in * (C_out/G) * prod(k)

i.e. ``N * prod(spatial) * prod(weight.shape)`` with the output spatial size for a forward conv
and the input's for a transposed one (FlopCounterMode's ``conv_flop_count``). FLOPs = 2 * MACs,
``matmul`` category; a bias adds one ``elementwise`` FLOP per output element.
NB: padding is not subtracted (the zeros are multiplied too), as in FlopCounterMode.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import FMA_FLOPS, io_cost, numel
from dfx.ir import AtenCall, TensorSpec

__all__ = ["conv_macs"]

M, E = Category.MATMUL, Category.ELEMENTWISE


def conv_macs(x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...], transposed: bool) -> int:
    """Multiply-accumulates of a convolution with input ``x``, weight ``w`` and output ``out``.

    ``x`` and ``out`` may be unbatched (one dim fewer than ``w``).

    Examples
    --------
    >>> conv_macs((2, 4, 8, 8), (4, 1, 3, 3), (2, 4, 16, 16), transposed=True)  # PB-08 case 2
    4608
    """
    spatial = len(w) - 2
    batch = numel(x[: len(x) - spatial - 1])  # N, or 1 when unbatched
    where = x if transposed else out
    return batch * numel(where[len(where) - spatial :]) * numel(w)


def _conv(call: AtenCall, transposed: bool) -> Cost | dict[Category, Cost]:
    x, w = call.arg(0), call.arg(1)
    if not (isinstance(x, TensorSpec) and isinstance(w, TensorSpec)):
        raise ValueError(f"{call.op}: expected input and weight tensors as the first two arguments")
    if not call.outputs:
        raise ValueError(f"{call.op}: the output spec is needed for the output spatial size")
    out = call.outputs[0]
    product = io_cost(call, FMA_FLOPS * conv_macs(x.shape, w.shape, out.shape, transposed))
    has_bias = any(isinstance(a, TensorSpec) for a in call.args[2:]) or call.kwarg("bias") is not None
    return {M: product, E: Cost(out.numel)} if has_bias else product


@register_cost(
    [
        "aten.conv1d",
        "aten.conv2d",
        "aten.conv3d",
        "aten.cudnn_convolution",
        "aten.miopen_convolution",
        "aten.mkldnn_convolution",
        "aten._slow_conv2d_forward",
        "aten.thnn_conv2d",
        "aten._conv_depthwise2d",
        "aten.slow_conv3d",
        "aten.slow_conv3d_forward",
        "aten.slow_conv_dilated2d",
        "aten.slow_conv_dilated3d",
    ],
    category=M,
)
def conv_forward(call: AtenCall) -> Cost | dict[Category, Cost]:
    return _conv(call, transposed=False)


@register_cost(
    [
        "aten.conv_transpose1d",
        "aten.conv_transpose2d",
        "aten.conv_transpose3d",
        "aten.cudnn_convolution_transpose",
        "aten.miopen_convolution_transpose",
        "aten.slow_conv_transpose2d",
        "aten.slow_conv_transpose3d",
    ],
    category=M,
)
def conv_transposed(call: AtenCall) -> Cost | dict[Category, Cost]:
    return _conv(call, transposed=True)


@register_cost(["aten.convolution", "aten._convolution", "aten.convolution_overrideable"], category=M)
def convolution(call: AtenCall) -> Cost | dict[Category, Cost]:
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
    return _conv(call, transposed=bool(call.arg(6, "transposed", False)))
