"""FFTs (``_fft_r2c``, ``_fft_c2r``, ``_fft_c2c``, what every ``torch.fft`` function dispatches to).

Convention: FFTW's benchFFT scale (http://www.fftw.org/speed/method.html), the radix-2 Cooley-Tukey
count, for a transform of N points, N the product of the transformed dims' sizes:

    complex transform (c2c)                              5 N log2 N    real FLOPs
    real-input (r2c) or real-output (c2r) transform      2.5 N log2 N  (half: the symmetric half is not computed)

times the number of transforms (every other dim), rounded to an integer once per call. The
category is ``elementwise``: butterflies run on vector units, not matrix units.

NB: this is a scale, not the count of the kernel that runs: for N not a power of two the library
picks mixed-radix or Bluestein plans whose counts differ, and the same N log2 N is used anyway
(as benchFFT does). On top of the transform:

    normalization (``norm="ortho"`` / ``"forward"``, or an inverse's default 1/N)
                                  one multiply per real component of the output: 2 per complex
                                  output element, 1 per real one
    ``onesided=False`` (``torch.fft.fft`` of a real input)
                                  the mirrored half is the conjugate of the computed half: one
                                  negate per mirrored element
"""

from __future__ import annotations

import math

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost, numel, tensor_arg
from dfx.ir import AtenCall, TensorSpec

__all__ = ["COMPLEX_FFT_FLOPS", "REAL_FFT_FLOPS", "fft_flops"]

E = Category.ELEMENTWISE

COMPLEX_FFT_FLOPS = 5.0  # x N log2 N per complex transform: FFTW benchFFT's "mflops" scale
REAL_FFT_FLOPS = COMPLEX_FFT_FLOPS / 2  # real input or output: half the work (benchFFT's 2.5 N log2 N)
_NORM_NONE = 0  # fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n (aten/src/ATen/native/SpectralOpsUtils.h)
_REAL_PARTS_OF_COMPLEX = 2  # a complex number scaled by a real factor: 2 real multiplies


def fft_flops(points: int, transforms: int, *, real: bool) -> int:
    """FLOPs of ``transforms`` FFTs of ``points`` points each: ``c * N log2 N`` per transform.

    ``c`` is 5 for complex transforms, 2.5 for real-input or real-output ones; the total is rounded.

    Examples
    --------
    >>> fft_flops(16, 8, real=True)  # 8 * 2.5 * 16 * 4
    1280
    >>> fft_flops(8, 1, real=False), fft_flops(1, 4, real=False)  # 5 * 8 * 3; a 1-point transform is free
    (120, 0)
    """
    if points <= 1:
        return 0
    scale = REAL_FFT_FLOPS if real else COMPLEX_FFT_FLOPS
    return round(transforms * scale * points * math.log2(points))


def _input(call: AtenCall) -> TensorSpec:
    x = tensor_arg(call, 0, "self")
    if x is None:
        raise ValueError(f"{call.op}: the first argument is not a tensor")
    return x


def _dims(call: AtenCall, x: TensorSpec) -> list[int]:
    dims = call.arg(1, "dim")
    dims = [dims] if isinstance(dims, int) else list(dims or ())
    return [int(d) % x.ndim for d in dims] if x.ndim else []


def _transforms(call: AtenCall) -> tuple[TensorSpec, list[int], int, int]:
    """``(input, transformed dims, points per transform, transforms)`` of an r2c or c2c call:
    the transformed dims' sizes multiply to the points, the other dims count the transforms."""
    x = _input(call)
    dims = _dims(call, x)
    points = numel(x.shape[d] for d in dims)
    return x, dims, points, x.numel // points if points else 0


def _normalized(call: AtenCall) -> bool:
    return call.arg(2, "normalization", _NORM_NONE) != _NORM_NONE


@register_cost(["aten._fft_r2c"], category=E)
def fft_r2c(call: AtenCall) -> Cost:
    # (self real [.., n_d ..], dim, normalization, onesided) -> complex, last dim n_last // 2 + 1 if onesided
    x, dims, points, transforms = _transforms(call)
    flops = fft_flops(points, transforms, real=True)
    computed = x.numel // x.shape[dims[-1]] * (x.shape[dims[-1]] // 2 + 1) if dims and x.numel else x.numel
    out = call.outputs[0].numel if call.outputs else computed
    flops += out - computed  # onesided=False: the mirrored half, one conjugation (negate) each
    flops += _REAL_PARTS_OF_COMPLEX * out if _normalized(call) else 0
    return io_cost(call, flops, reads=[x])


@register_cost(["aten._fft_c2r"], category=E)
def fft_c2r(call: AtenCall) -> Cost:
    # (self complex [.., n_last // 2 + 1], dim, normalization, last_dim_size) -> real [.., last_dim_size]
    x = _input(call)
    dims = _dims(call, x)
    last = int(call.arg(3, "last_dim_size"))
    points = numel(x.shape[d] for d in dims[:-1]) * last
    half = numel(x.shape[d] for d in dims)
    transforms = x.numel // half if half else 0
    out = transforms * points
    return io_cost(call, fft_flops(points, transforms, real=True) + (out if _normalized(call) else 0), reads=[x])


@register_cost(["aten._fft_c2c"], category=E)
def fft_c2c(call: AtenCall) -> Cost:
    # (self complex, dim, normalization, forward) -> complex, same shape
    x, _, points, transforms = _transforms(call)
    flops = fft_flops(points, transforms, real=False)
    flops += _REAL_PARTS_OF_COMPLEX * x.numel if _normalized(call) else 0
    return io_cost(call, flops, reads=[x])
