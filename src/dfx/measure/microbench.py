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

__all__ = ["Sample", "gemm_flop_per_s", "op_overhead_s", "stream_bytes_per_s", "time_call", "vector_flop_per_s"]

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


def op_overhead_s(device: str, budget_s: float, sync=None) -> Sample:
    """The time of a tiny op: ``aten.add.Tensor`` on two 1-element tensors, called as a graph node is."""
    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)
    add = torch.ops.aten.add.Tensor
    t, reps = time_call(lambda: add(a, b), budget_s, sync, max_reps=20_000)
    how = f"median of {reps} calls of aten.add.Tensor on 1-element tensors (Python + dispatcher + kernel)"
    return Sample(t, t, reps, how)


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
    # the output is allocated by each call, as every graph node allocates its own
    a = torch.randn(numel, device=device)
    b = torch.randn(numel, device=device)
    add = torch.ops.aten.add.Tensor
    return time_call(lambda: add(a, b), budget_s, sync, max_reps=5_000)


def stream_bytes_per_s(working_set_bytes: int, device: str, budget_s: float, sync=None, slope: bool = True) -> Sample:
    """Bandwidth of ``c = a + b`` (fp32, ``c`` allocated by each call) at a working set that stays in one memory level.

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
        how = f"median of {reps} aten.add(a, b) fp32 moving {nbytes:,} B: {nbytes:,} B / {t:.3g} s"
        return Sample(nbytes / t, t, reps, how)
    t_full, reps_full = _add_time(numel, device, budget_s / 2, sync)
    t_part, reps_part = _add_time(numel // _SLOPE_PARTS, device, budget_s / 2, sync)
    b_full = _ADD_TENSORS * 4 * numel
    b_part = _ADD_TENSORS * 4 * (numel // _SLOPE_PARTS)
    plain = b_full / t_full
    slope = (b_full - b_part) / (t_full - t_part) if t_full > t_part else float("inf")
    sizes = f"aten.add(a, b) fp32 moving {b_full:,} B and {b_part:,} B (medians of {reps_full} and {reps_part} calls)"
    if slope <= _MAX_SLOPE_GAIN * plain:
        return Sample(slope, t_full, reps_full, f"slope of {sizes}: ({b_full:,} - {b_part:,}) B / ({t_full:.3g} - {t_part:.3g}) s")
    return Sample(plain, t_full, reps_full, f"{sizes}: {b_full:,} B / {t_full:.3g} s, overhead included (slope too noisy)")


# Per-element FLOPs by dfx's convention (docs/cost-model.md, "Per-element FLOPs"): the vector ops
# timed for the non-matmul FLOP rate, each on [rows, cols] fp32.
_VECTOR_OPS = {
    "gelu(tanh)": (lambda x: torch.ops.aten.gelu.default(x, approximate="tanh"), lambda r, c: 9 * r * c),
    "softmax": (lambda x: torch.ops.aten._softmax.default(x, -1, False), lambda r, c: 5 * r * c),
    # 5 per element + weight + bias, 4 per row
    "layer_norm": (lambda x: torch.ops.aten.layer_norm.default(x, [x.shape[-1]], None, None, 1e-5), lambda r, c: 5 * r * c + 4 * r),
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
        full = torch.randn(rows, cols, device=device)
        part = torch.randn(rows // _SLOPE_PARTS, cols, device=device)
        t_full, _ = time_call(lambda: op(full), budget_s / 6, sync, max_reps=5_000)
        t_part, _ = time_call(lambda: op(part), budget_s / 6, sync, max_reps=5_000)
        f_full, f_part = flops_of(rows, cols), flops_of(rows // _SLOPE_PARTS, cols)
        rate = (f_full - f_part) / (t_full - t_part) if t_full > t_part else f_full / t_full
        rates.append(rate)
        parts.append(f"{name} {rate / 1e9:.2g}")
    rate = statistics.median(rates)
    how = f"median over ops of the slope between [{rows},{cols}] and [{rows // _SLOPE_PARTS},{cols}] fp32, GFLOP/s: " + ", ".join(parts)
    return Sample(rate, 0.0, len(rates), how)
