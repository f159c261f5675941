"""The microbenchmarks behind ``dfx calibrate``: GEMM FLOP/s, streaming bandwidth, per-op overhead.

Each benchmark times one eager aten call the way :mod:`dfx.measure.timing` times a graph node
(``perf_counter`` around the call, synchronised on a GPU), repeats it, and keeps the median.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

__all__ = ["Sample", "gemm_curve", "gemm_flop_per_s", "op_overhead_s", "stream_bytes_per_s", "time_call", "vector_flop_per_s"]

_FMA_FLOPS = 2  # a multiply-accumulate is 2 FLOPs (docs/cost-model.md)
_ADD_TENSORS = 3  # c = a + b reads a and b and writes c: three tensors of traffic
_MIN_REPS = 3  # a median needs at least three samples
_MAX_REPS = 200
_MAX_GEMM_N = 4096  # fp32 4096^3 GEMM is 137 GFLOP: seconds on a CPU, enough for any peak
_SLOPE_PARTS = 4  # bandwidth from the slope between the working set and a quarter of it
_MAX_SLOPE_GAIN = 10.0  # a slope over 10x the plain figure is timing noise, not bandwidth


@dataclass(frozen=True)
class Sample:
    """One benchmark's result: the figure, the median seconds it came from, and how it was taken."""

    value: float
    median_s: float
    reps: int
    how: str


def time_call(fn: Callable[[], object], budget_s: float, sync: Callable[[], None] | None = None,
              max_reps: int = _MAX_REPS) -> tuple[float, int]:  # fmt: skip
    """Median seconds of ``fn()`` over as many calls as fit in ``budget_s`` (at least 3), after one warm-up."""
    sync = sync or (lambda: None)
    fn()
    sync()
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < _MIN_REPS or (len(times) < max_reps and time.perf_counter() < deadline):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(times)


def _tiny_ops(device: str) -> dict[str, Callable[[], object]]:
    """One call of each kind of op a graph holds, on 1- to 8-element tensors: all overhead, no work."""
    aten = torch.ops.aten
    x = torch.ones(1, 8, device=device)
    w = torch.ones(8, 8, device=device)
    b = torch.ones(8, device=device)
    img = torch.ones(1, 1, 2, 2, device=device)
    k = torch.ones(1, 1, 1, 1, device=device)
    return {
        "add": lambda: aten.add.Tensor(x, x),
        "relu": lambda: aten.relu.default(x),
        "gelu": lambda: aten.gelu.default(x),
        "softmax": lambda: aten._softmax.default(x, -1, False),
        "layer_norm": lambda: aten.layer_norm.default(x, [8], b, b, 1e-5),
        "linear": lambda: aten.linear.default(x, w, b),
        "conv2d": lambda: aten.conv2d.default(img, k),
    }


def op_overhead_s(device: str, budget_s: float, sync=None) -> Sample:
    """The time of a tiny op: the median over op kinds (add, relu, gelu, softmax, layer norm, linear,
    conv2d) of each one's median time on 1- to 8-element tensors, called as a graph node is.

    One op kind alone (a tiny add) is the cheapest dispatch there is; a graph's nodes are mostly
    heavier ops whose argument handling and kernel set-up cost more.
    """
    ops = _tiny_ops(device)
    per_op = {}
    for name, fn in ops.items():
        per_op[name], _ = time_call(fn, budget_s / len(ops), sync, max_reps=5_000)
    t = statistics.median(per_op.values())
    listed = ", ".join(f"{n} {v * 1e6:.2f}" for n, v in per_op.items())
    how = f"median over op kinds of each one's median time on 1- to 8-element tensors (Python + dispatcher + kernel), us: {listed}"
    return Sample(t, t, len(per_op), how)


def gemm_flop_per_s(dtype: torch.dtype, device: str, budget_s: float, sync=None) -> Sample:
    """Peak FLOP/s of a square GEMM, grown until one call takes about a twentieth of the budget."""
    n, target = 256, max(budget_s / 20, 1e-3)
    while True:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        t, reps = time_call(lambda: torch.mm(a, b), 0.0, sync)
        if t >= target or n >= _MAX_GEMM_N:
            break
        n *= 2
    t, reps = time_call(lambda: torch.mm(a, b), budget_s, sync)
    flops = _FMA_FLOPS * n**3  # [n,n] x [n,n]: n^3 multiply-accumulates
    how = f"median of {reps} torch.mm [{n},{n}]x[{n},{n}] {str(dtype).removeprefix('torch.')}: 2*{n}^3 FLOP / {t:.3g} s"
    return Sample(flops / t, t, reps, how)


def _add_time(numel: int, device: str, budget_s: float, sync) -> tuple[float, int]:
    # into a preallocated output: bandwidth without the allocator (a graph node also allocates; see
    # docs/validation.md for what that costs on a busy machine)
    a = torch.randn(numel, device=device)
    b = torch.randn(numel, device=device)
    c = torch.empty(numel, device=device)
    return time_call(lambda: torch.add(a, b, out=c), budget_s, sync, max_reps=5_000)


def stream_bytes_per_s(working_set_bytes: int, device: str, budget_s: float, sync=None, slope: bool = True) -> Sample:
    """Bandwidth of ``c = a + b`` (fp32, into a preallocated ``c``) at a working set that stays in one memory level.

    Timed at ``working_set_bytes`` and at a quarter of it; the bandwidth is the slope
    ``(B_full - B_quarter) / (t_full - t_quarter)``, so the fixed per-call cost cancels, as the
    roofline adds the per-op overhead separately. If noise makes the slope unusable (``t_full <=
    t_quarter``, or a slope more than ``_MAX_SLOPE_GAIN`` times ``B_full / t_full``), the plain
    ``B_full / t_full`` is kept (a lower bound) and ``how`` says so. ``slope=False`` (DRAM: the
    working set is so large that the per-call cost is negligible, and a quarter of it might still
    sit partly in the L3) keeps ``B_full / t_full``.
    """
    numel = max(_SLOPE_PARTS, working_set_bytes // (_ADD_TENSORS * 4))
    if not slope:
        t, reps = _add_time(numel, device, budget_s, sync)
        nbytes = _ADD_TENSORS * 4 * numel
        how = f"median of {reps} torch.add(a, b, out=c) fp32 moving {nbytes:,} B: {nbytes:,} B / {t:.3g} s"
        return Sample(nbytes / t, t, reps, how)
    t_full, reps_full = _add_time(numel, device, budget_s / 2, sync)
    t_part, reps_part = _add_time(numel // _SLOPE_PARTS, device, budget_s / 2, sync)
    b_full = _ADD_TENSORS * 4 * numel
    b_part = _ADD_TENSORS * 4 * (numel // _SLOPE_PARTS)
    plain = b_full / t_full
    slope = (b_full - b_part) / (t_full - t_part) if t_full > t_part else float("inf")
    sizes = f"torch.add(a, b, out=c) fp32 moving {b_full:,} B and {b_part:,} B (medians of {reps_full} and {reps_part} calls)"
    if slope <= _MAX_SLOPE_GAIN * plain:
        return Sample(slope, t_full, reps_full, f"slope of {sizes}: ({b_full:,} - {b_part:,}) B / ({t_full:.3g} - {t_part:.3g}) s")
    return Sample(plain, t_full, reps_full, f"{sizes}: {b_full:,} B / {t_full:.3g} s, overhead included (slope too noisy)")


# Per-element FLOPs by dfx's convention (docs/cost-model.md, "Per-element FLOPs"): the vector ops
# timed for the non-matmul FLOP rate, each on [rows, cols] fp32.
# Outputs are preallocated (the ``.out`` overloads), as for the bandwidth.
_VECTOR_OPS = {
    "gelu(tanh)": (lambda x, o: torch.ops.aten.gelu.out(x, approximate="tanh", out=o[0]), lambda r, c: 9 * r * c),
    "softmax": (lambda x, o: torch.ops.aten._softmax.out(x, -1, False, out=o[0]), lambda r, c: 5 * r * c),
    # layer norm without weight and bias: 5 per element, 4 per row
    "layer_norm": (lambda x, o: torch.ops.aten.native_layer_norm.out(x, [x.shape[-1]], None, None, 1e-5, out0=o[0], out1=o[1], out2=o[2]),
                   lambda r, c: 5 * r * c + 4 * r),
}
_VECTOR_SHAPE = (64, 1024)  # 256 KiB in and out: inside any L2, so bytes are not the limit


def vector_flop_per_s(device: str, budget_s: float, sync=None) -> Sample:
    """The FLOP rate of non-matmul work: median over GELU(tanh), softmax and layer norm of each op's slope.

    Each op is timed at ``_VECTOR_SHAPE`` and a quarter of its rows; FLOPs are dfx's convention,
    so ``flops / rate`` reproduces the measured time of these ops. It is far below the GEMM peak on
    CPUs: transcendentals and reductions do not run at the FMA units' rate.
    """
    rows, cols = _VECTOR_SHAPE
    rates, parts = [], []
    for name, (op, flops_of) in _VECTOR_OPS.items():
        full, part = torch.randn(rows, cols, device=device), torch.randn(rows // _SLOPE_PARTS, cols, device=device)
        out_full = (torch.empty_like(full), torch.empty(rows, 1, device=device), torch.empty(rows, 1, device=device))
        out_part = (torch.empty_like(part), torch.empty(len(part), 1, device=device), torch.empty(len(part), 1, device=device))
        t_full, _ = time_call(lambda: op(full, out_full), budget_s / 6, sync, max_reps=5_000)
        t_part, _ = time_call(lambda: op(part, out_part), budget_s / 6, sync, max_reps=5_000)
        f_full, f_part = flops_of(rows, cols), flops_of(rows // _SLOPE_PARTS, cols)
        rate = (f_full - f_part) / (t_full - t_part) if t_full > t_part else f_full / t_full
        rates.append(rate)
        parts.append(f"{name} {rate / 1e9:.2g}")
    rate = statistics.median(rates)
    how = f"median over ops of the slope between [{rows},{cols}] and [{rows // _SLOPE_PARTS},{cols}] fp32, GFLOP/s: " + ", ".join(parts)
    return Sample(rate, 0.0, len(rates), how)


_CURVE_ROWS = (1, 4, 16, 64, 256, 1024)  # rows M of [M, K] x [K, N]: one token (a GEMV) to a feature map
_CURVE_KN = 1024  # K = N: a transformer- or ResNet-sized weight


def gemm_curve(dtype: torch.dtype, device: str, budget_s: float, sync=None) -> tuple[tuple[int, float], ...]:
    """Achieved FLOP/s of ``[M,1024] x [1024,1024]`` for M in ``_CURVE_ROWS``: ``((flops, flop_per_s), ...)``.

    Small GEMMs run below the large-GEMM peak (less to block over, threads split unevenly); the
    cache-aware prediction interpolates this curve by a node's FLOPs (:mod:`dfx.measure.cache_model`).
    """
    points = []
    b = torch.randn(_CURVE_KN, _CURVE_KN, device=device).to(dtype)
    for rows in _CURVE_ROWS:
        a = torch.randn(rows, _CURVE_KN, device=device).to(dtype)
        t, _ = time_call(lambda: torch.mm(a, b), budget_s / len(_CURVE_ROWS), sync, max_reps=2_000)
        flops = _FMA_FLOPS * rows * _CURVE_KN * _CURVE_KN
        points.append((flops, flops / t))
    return tuple(points)
