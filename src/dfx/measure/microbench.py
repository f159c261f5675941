"""The microbenchmarks behind ``dfx calibrate``: GEMM FLOP/s, streaming bandwidth, per-op overhead.

Each benchmark times one eager aten call the way :mod:`dfx.measure.timing` times a graph node
(``perf_counter`` around the call, synchronised on a GPU), repeats it, and keeps the median.

Besides the profile's figures (one peak, one bandwidth per level, one overhead), four tables feed
the calibrated prediction of :mod:`dfx.measure.machine`: the per-op overhead as a function of the
work that ran just before (:func:`overhead_curve`), the FLOP rate of each kind of vector op
(:func:`vector_rates`), GEMM rates by rows and weight size with the weight in cache and evicted
(:func:`gemm_table`), and the largest working set the last-level cache keeps (:func:`resident_bytes`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from dfx.costs.terms import FMA_FLOPS
from dfx.measure.machine import GemmRate

__all__ = [
    "Sample",
    "after_gemm_chain_points",
    "after_gemm_points",
    "cold_write_points",
    "gemm_cold_points",
    "attention_rates",
    "reference_flop_per_s",
    "conv_points",
    "gemm_flop_per_s",
    "gemm_table",
    "mixed_overheads",
    "compile_layout_copy",
    "compile_tiny_linears",
    "compiled_overheads",
    "inductor_compile",
    "layout_copy_points",
    "op_overhead_s",
    "overhead_curve",
    "resident_bytes",
    "stream_bytes_per_s",
    "time_call",
    "vector_rates",
]

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


def time_call(
    fn: Callable[[], object], budget_s: float, sync: Callable[[], None] | None = None, max_reps: int = _MAX_REPS
) -> tuple[float, int]:
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
    one = torch.ones(1, device=device)
    q = torch.ones(1, 1, 2, 8, device=device)
    return {
        "add": lambda: aten.add.Tensor(x, x),
        "relu": lambda: aten.relu.default(x),
        "gelu": lambda: aten.gelu.default(x),
        "softmax": lambda: aten._softmax.default(x, -1, False),
        "layer_norm": lambda: aten.layer_norm.default(x, [8], b, b, 1e-5),
        "linear": lambda: aten.linear.default(x, w, b),
        "conv2d": lambda: aten.conv2d.default(img, k),
        "batch_norm": lambda: aten._native_batch_norm_legit_no_training.default(img, one, one, one, one, 0.1, 1e-5),
        "attention": lambda: aten.scaled_dot_product_attention.default(q, q, q),
    }


def _tiny_view(device: str) -> Callable[[], object]:
    """A view node's call (``aten.view`` of an 8-element tensor): no kernel, only the dispatch and a new tensor's metadata."""
    x = torch.ones(1, 8, device=device)
    return lambda: torch.ops.aten.view.default(x, [8])


def _tiny_linear_nd(device: str) -> Callable[[], object]:
    """A linear on a 3-D input (``[1, 1, 8] x [8, 8]^T + b``), as a model's ``nn.Linear`` on ``(B, T, C)``
    calls it: ``aten.linear`` flattens the input to 2-D, calls ``addmm`` and views the result back,
    two more dispatches than the 2-D linear of :func:`_tiny_ops` (0.7 us more on the machine of
    ``docs/validation.md``)."""
    x = torch.ones(1, 1, 8, device=device)
    w = torch.ones(8, 8, device=device)
    b = torch.ones(8, device=device)
    return lambda: torch.ops.aten.linear.default(x, w, b)


def _side_ops(device: str) -> dict[str, Callable[[], object]]:
    """The tiny calls measured beside :func:`_tiny_ops` but kept out of its median: ``view`` (no kernel),
    ``linear_nd`` (a second path of a kind already in it), and two kinds every decoder layer runs
    that are none of the tiny kinds: ``mean`` (RMSNorm's ``x.pow(2).mean(-1, keepdim=True)``, a
    reduction) and ``cat`` (the rotary embedding's ``cat((-x2, x1), -1)``). Kept out of the median
    so that the figure every other node is charged stays what it was."""
    aten = torch.ops.aten
    x = torch.ones(1, 8, device=device)
    return {
        "view": _tiny_view(device),
        "linear_nd": _tiny_linear_nd(device),
        "mean": lambda: aten.mean.dim(x, [-1], True),
        "cat": lambda: aten.cat.default([x, x], -1),
    }


def op_overhead_s(device: str, budget_s: float, sync=None) -> tuple[Sample, dict[str, float]]:
    """The time of a tiny op: the median over op kinds (add, relu, gelu, softmax, layer norm, linear,
    conv2d, batch norm, attention) of each one's median time on 1- to 8-element tensors, called as
    a graph node is (an ``OpOverload``); and each kind's own median, seconds, with ``view`` (an
    ``aten.view`` call, :func:`_tiny_view`) and ``linear_nd`` (a linear on a 3-D input,
    :func:`_tiny_linear_nd`) beside them.

    One op kind alone (a tiny add) is the cheapest dispatch there is; a graph's nodes are mostly
    heavier ops whose argument handling and kernel set-up cost more. The view is not in the
    median: it runs no kernel, and it is what an eager run pays for a view node (which the
    roofline charges nothing), not a figure for the ops that do work.
    """
    ops, side = _tiny_ops(device), _side_ops(device)
    per_op = {}
    for name, fn in ops.items():
        per_op[name], _ = time_call(fn, budget_s / (len(ops) + len(side)), sync, max_reps=5_000)
    t = statistics.median(per_op.values())
    for name, fn in side.items():
        per_op[name], _ = time_call(fn, budget_s / (len(ops) + len(side)), sync, max_reps=5_000)
    listed = ", ".join(f"{n} {v * 1e6:.2f}" for n, v in per_op.items())
    how = f"median over op kinds of each one's median time on 1- to 8-element tensors (Python + dispatcher + kernel), us: {listed}"
    return Sample(t, t, len(per_op), how), per_op


_MIXED_ROUNDS = (50, 5_000)  # fewest and most rounds of the tiny calls in turn


def mixed_overheads(
    device: str, budget_s: float, sync=None, clock: Callable[[], float] = time.perf_counter
) -> dict[str, float]:
    """Each tiny call's median time when the calls run in turn, each after all the others, seconds.

    Kinds: those of :func:`_tiny_ops` plus ``view`` and ``linear_nd`` (:func:`_side_ops`). In a
    graph a node follows nodes of other kinds, never itself: its dispatch runs after other code
    paths, and costs more than in :func:`op_overhead_s`'s hot loop, where it follows itself. On
    the machine of ``docs/validation.md`` each call took 0.6 to 1.3 us more in turn than hot (a
    tiny relu 1.44 us hot, 2.07 in turn; the MLP's relus 1.4 us alone, 2.2 in a Python sequence
    of the MLP's calls). Rounds: as many as fit in ``budget_s``, between ``_MIXED_ROUNDS``.

    Examples
    --------
    >>> t = iter(range(10**6))
    >>> got = mixed_overheads("cpu", 0.0, clock=lambda: float(next(t)))  # a fake clock: each call 1 tick
    >>> sorted(got)[:3], got["add"]
    (['add', 'attention', 'batch_norm'], 1.0)
    """
    sync = sync or (lambda: None)
    ops = {**_tiny_ops(device), **_side_ops(device)}
    times: dict[str, list[float]] = {name: [] for name in ops}
    low, high = _MIXED_ROUNDS
    deadline = time.perf_counter() + budget_s
    rounds = 0
    while rounds < low or (rounds < high and time.perf_counter() < deadline):
        for name, fn in ops.items():
            sync()
            start = clock()
            fn()
            sync()
            times[name].append(clock() - start)
        rounds += 1
    return {name: statistics.median(ts) for name, ts in times.items()}


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
    flops = FMA_FLOPS * n**3  # [n,n] x [n,n]: n^3 multiply-accumulates
    how = f"median of {reps} torch.mm [{n},{n}]x[{n},{n}] {str(dtype).removeprefix('torch.')}: 2*{n}^3 FLOP / {t:.3g} s"
    return Sample(flops / t, t, reps, how)


def _add_time(numel: int, device: str, budget_s: float, sync) -> tuple[float, int]:
    # into a preallocated output: bandwidth without the allocator (a graph node also allocates; see
    # docs/validation.md for what that costs on a busy machine)
    a = torch.randn(numel, device=device)
    b = torch.randn(numel, device=device)
    c = torch.empty(numel, device=device)
    return time_call(lambda: torch.add(a, b, out=c), budget_s, sync, max_reps=5_000)


def _slope(work_full: float, work_part: float, t_full: float, t_part: float) -> float | None:
    """``(work_full - work_part) / (t_full - t_part)``: the rate with the fixed per-call cost cancelled.

    ``None`` when noise makes it unusable: ``t_full <= t_part``, or a rate more than
    ``_MAX_SLOPE_GAIN`` times the plain ``work_full / t_full`` (the caller then keeps the plain
    rate, a lower bound, and says so).

    Examples
    --------
    >>> _slope(100.0, 25.0, 1.25, 0.5)  # 100 units per s plus a 0.25 s fixed cost: the fixed cost cancels
    100.0
    >>> _slope(100.0, 25.0, 1.0, 1.0) is None
    True
    """
    if t_full <= t_part:
        return None
    slope = (work_full - work_part) / (t_full - t_part)
    return slope if slope <= _MAX_SLOPE_GAIN * work_full / t_full else None


def _net_rate(work: float, t: float, fixed_s: float) -> float:
    """``work / (t - fixed_s)``, the fixed cost taken out but never more than half of ``t``.

    Examples
    --------
    >>> _net_rate(10.0, 2.0, 1.0), _net_rate(10.0, 2.0, 1.5)  # at most half of 2 s is taken out
    (10.0, 10.0)
    """
    return work / max(t - fixed_s, t / 2)


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
    slope = _slope(b_full, b_part, t_full, t_part)
    sizes = f"torch.add(a, b, out=c) fp32 moving {b_full:,} B and {b_part:,} B (medians of {reps_full} and {reps_part} calls)"
    if slope is not None:
        return Sample(
            slope, t_full, reps_full, f"slope of {sizes}: ({b_full:,} - {b_part:,}) B / ({t_full:.3g} - {t_part:.3g}) s"
        )
    return Sample(
        b_full / t_full,
        t_full,
        reps_full,
        f"{sizes}: {b_full:,} B / {t_full:.3g} s, overhead included (slope too noisy)",
    )


# Time since an op of the same kind last ran, in seconds: from a few tiny ops to a whole model run.
_GAPS_S = (1e-5, 3e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2)
_GAP_K = 512  # the work in the gap is [m, 512] x [512, 512] GEMMs, m sized so that one takes about 0.1 ms
# or, in a gap shorter than 0.1 ms, about a third of the gap (one row at least: a 1 MiB weight read once)
_SHORT_GAP_S = 1e-4
_GAP_REPS = (5, 25)  # per op kind and gap, fewest and most: the median over kinds of each kind's median
_GAP_CHEAP = 0.01  # a gap whose most reps cost under this share of the budget gets them (the short gaps)


def _gap_reps(cost_s: float, costs_s: Sequence[float], budget_s: float) -> int:
    """Calls per kind at a gap whose one call of every kind costs ``cost_s``, among gaps costing ``costs_s``.

    Every gap gets the same count, as many as ``budget_s`` holds (between ``_GAP_REPS``), so the
    longest gaps, the dearest, are measured as often as the others (they set what a node that runs
    once per model run is charged); a gap whose most calls cost under ``_GAP_CHEAP`` of the
    budget gets them.

    Examples
    --------
    >>> _gap_reps(0.03, [0.001, 0.03], 0.62)  # 0.62 s / 0.031 s = 20 rounds of both gaps
    20
    >>> _gap_reps(0.001, [0.001, 0.03], 3.0), _gap_reps(0.03, [0.001, 0.03], 0.05)  # cheap: the most; the least
    (25, 5)
    """
    low, high = _GAP_REPS
    if cost_s * high <= _GAP_CHEAP * budget_s:
        return high
    return max(low, min(high, int(budget_s / sum(costs_s))))


_CURVE_SIDE = ("mean", "cat")  # side kinds timed at every gap too, each kept as its own curve


def overhead_curves(
    device: str, budget_s: float, sync=None
) -> tuple[
    tuple[tuple[float, float], ...],
    dict[str, tuple[tuple[float, float], ...]],
    dict[str, tuple[tuple[float, float], ...]],
]:
    """Per-op overhead as a function of the time since an op of the same kind last ran: ``((gap_s,
    overhead_s), ...)`` (the median over nine kinds), the same curve for each kind of ``_CURVE_SIDE``,
    and each of the nine kinds' own (``{kind: ((gap_s, overhead_s), ...)}``), seconds.

    A tiny op (1 to 8 elements, the nine kinds of :func:`op_overhead_s`) costs a few microseconds
    when it follows itself in a hot loop, and several times more when other work ran since it
    last ran: that work evicted its code path (argument parsing, dispatch, kernel set-up) from
    the caches and predictors, and on a virtual machine the host may have run other tenants on
    the core. In a model run, most nodes are the only one of their kind for many microseconds.

    Measured as: for each gap in ``_GAPS_S`` and each kind, ``[m,512] x [512,512]`` GEMMs for
    about the gap, then the tiny op, timed; every gap as many times (:func:`_gap_reps`), in rounds
    that time every kind after every gap once (each point sees the same minutes). ``m`` is
    sized so that one GEMM takes about 0.1 ms, or a third of a gap shorter than that (at least one
    row): the 10 and 30 us gaps are those between a small model's nodes (the MLP's ReLUs follow
    each other after one 14 us GEMM), where a curve from the hot loop straight to 0.1 ms had charged
    its ReLUs 4.5 to 6.3 us against 2.6 to 2.9 measured (2026-12-02, ``docs/validation.md``). A point
    is ``(median gap from the end of the kind's previous call to the start of this one, median
    over kinds of each kind's median time)``. The first point is the hot loop: each kind right
    after itself. The side kinds ``mean`` and ``cat`` (:func:`_side_ops`) are timed the same way
    and kept out of the median: each is its own curve, ``(the same gap, its median)``. On the
    machine of ``docs/validation.md`` a tiny ``mean`` took 145 us after 30 ms of GEMMs (the Llama
    layer's RMS-norm ``mean`` 131 to 151 us in the runs), ``cat`` 72, where the median kind took 116.
    Each of the nine kinds is kept as its own curve too (``(the same gap, its median)``, its hot
    loop first): after 12 to 17 us of GEMMs a ReLU took 0.8 to 1.3 us more than in its hot loop
    where the median kind took 2.4 more (2026-12-02).
    """
    sync = sync or (lambda: None)
    side = _side_ops(device)
    tiny = _tiny_ops(device)
    ops = list(tiny.values())
    own = [side[k] for k in _CURVE_SIDE]
    every = ops + own
    hot = [time_call(fn, budget_s * 0.05 / len(every), sync, max_reps=2_000)[0] for fn in every]
    points = [(statistics.median(hot[: len(ops)]), statistics.median(hot[: len(ops)]))]
    names = [*tiny, *_CURVE_SIDE]  # every kind's own curve, its hot loop first
    curves: dict[str, list[tuple[float, float]]] = {k: [(points[0][0], t)] for k, t in zip(names, hot)}
    b = torch.randn(_GAP_K, _GAP_K, device=device)
    probe = torch.randn(512, _GAP_K, device=device)
    t512, _ = time_call(lambda: torch.mm(probe, b), 0.0, sync)
    a = torch.randn(max(1, min(4096, round(512 * 1e-4 / max(t512, 1e-9)))), _GAP_K, device=device)
    fillers = {  # the rows of the GEMMs that fill each gap: short gaps get short GEMMs, or one GEMM would overrun them
        gap: a if gap >= _SHORT_GAP_S else a[: max(1, min(len(a), round(512 * gap / 3 / max(t512, 1e-9))))]
        for gap in _GAPS_S
    }
    low, high = _GAP_REPS
    planned = sum(_GAPS_S) * len(every) * low
    scale = min(1.0, budget_s * 0.95 / planned)  # a small budget shortens the longest gaps, never drops them
    per_rep = [(gap * scale + 2e-5) * len(every) for gap in _GAPS_S]  # one call of every kind after the gap
    reps = {gap: _gap_reps(cost, per_rep, budget_s * 0.95) for gap, cost in zip(_GAPS_S, per_rep)}
    gaps: dict[float, list[float]] = {gap: [] for gap in _GAPS_S}
    times: dict[tuple[float, int], list[float]] = {(gap, i): [] for gap in _GAPS_S for i in range(len(every))}
    # round-robin: every round times each kind after each gap once, so that every point samples the
    # same minutes of the machine (on the VM of docs/validation.md a point timed in one burst read
    # 6 us one second and 16 us the next)
    for r in range(max(reps.values())):
        for gap in _GAPS_S:
            if r >= reps[gap]:
                continue
            for i, fn in enumerate(every):
                fn()  # the kind's previous call: the gap runs from its end
                sync()
                last = time.perf_counter()
                while time.perf_counter() - last < gap * scale:
                    torch.mm(fillers[gap], b)
                    sync()
                start = time.perf_counter()
                fn()
                sync()
                end = time.perf_counter()
                gaps[gap].append(start - last)
                times[(gap, i)].append(end - start)
    for gap in _GAPS_S:
        kinds = [statistics.median(times[(gap, i)]) for i in range(len(every))]
        at = statistics.median(gaps[gap])
        points.append((at, statistics.median(kinds[: len(ops)])))
        for name, t in zip(names, kinds):
            curves[name].append((at, t))
    return (
        tuple(sorted(points)),
        {k: tuple(sorted(curves[k])) for k in _CURVE_SIDE},
        {k: tuple(sorted(curves[k])) for k in tiny},
    )


def overhead_curve(device: str, budget_s: float, sync=None) -> tuple[tuple[float, float], ...]:
    """The median kind's curve of :func:`overhead_curves`, alone."""
    return overhead_curves(device, budget_s, sync)[0]


@dataclass(frozen=True)
class _VectorOp:
    make: Callable[[int, str], tuple]  # rows -> the op's arguments, on the device
    call: Callable[..., object]
    flops: Callable[[int], int]  # rows -> FLOPs by dfx's convention (docs/cost-model.md, "Per-element FLOPs")


_VEC_COLS = 1024
_VEC_ROWS = (256, 1024)  # 0.26 M and 1 M elements: both far above torch's parallel grain (32,768), so every
# size runs on all threads, and the slope between them is one thread count's rate


def _vector_ops() -> dict[str, _VectorOp]:
    """The vector ops timed for :func:`vector_rates`, keyed by the family names of :mod:`dfx.measure.machine`."""
    aten, c = torch.ops.aten, _VEC_COLS

    def rows_by_cols(r: int, dev: str) -> tuple:
        return (torch.randn(r, c, device=dev),)

    def with_affine(r: int, dev: str) -> tuple:
        return (torch.randn(r, c, device=dev), torch.randn(c, device=dev), torch.randn(c, device=dev))

    def image(r: int, dev: str) -> tuple:  # [1, 64, r/64, 1024]: r*1024 elements in 64 channels
        x = torch.randn(1, 64, r // 64, c, device=dev)
        return (
            x,
            torch.randn(64, device=dev),
            torch.randn(64, device=dev),
            torch.zeros(64, device=dev),
            torch.ones(64, device=dev),
        )

    return {
        # gelu: 5 per element (erf form); gelu_tanh: 9; softmax: 5; layer norm with weight and bias:
        # 7 per element + 4 per row; batch norm, eval, with weight and bias: 4 per element + 2 per channel
        "gelu": _VectorOp(rows_by_cols, lambda x: aten.gelu.default(x), lambda r: 5 * r * c),
        "gelu_tanh": _VectorOp(rows_by_cols, lambda x: aten.gelu.default(x, approximate="tanh"), lambda r: 9 * r * c),
        "softmax": _VectorOp(rows_by_cols, lambda x: aten._softmax.default(x, -1, False), lambda r: 5 * r * c),
        "layer_norm": _VectorOp(
            with_affine, lambda x, w, b: aten.native_layer_norm.default(x, [c], w, b, 1e-5), lambda r: 7 * r * c + 4 * r
        ),
        "batch_norm": _VectorOp(
            image,
            lambda x, w, b, m, v: aten._native_batch_norm_legit_no_training.default(x, w, b, m, v, 0.1, 1e-5),
            lambda r: 4 * r * c + 2 * 64,
        ),
    }


def vector_rates(device: str, budget_s: float, sync=None) -> dict[str, Sample]:
    """The FLOP rate of each kind of vector op (GELU, tanh-GELU, softmax, layer norm, batch norm), fp32.

    Each op is called as a graph node calls it (its output allocated) on 0.26 M and 1 M elements;
    the rate is the slope ``(F_1M - F_0.26M) / (t_1M - t_0.26M)`` with FLOPs by dfx's convention,
    so ``flops / rate`` reproduces the op's time without its fixed cost. On CPUs these rates are far
    below the GEMM peak: transcendentals, reductions and several passes over the data.
    """
    rates: dict[str, Sample] = {}
    ops = _vector_ops()
    small, large = _VEC_ROWS
    for name, op in ops.items():
        args_s, args_l = op.make(small, device), op.make(large, device)
        t_s, _ = time_call(lambda: op.call(*args_s), budget_s / (2 * len(ops)), sync, max_reps=2_000)
        t_l, reps = time_call(lambda: op.call(*args_l), budget_s / (2 * len(ops)), sync, max_reps=2_000)
        f_s, f_l = op.flops(small), op.flops(large)
        slope = _slope(f_l, f_s, t_l, t_s)
        if slope is not None:
            how = (
                f"slope of {name} fp32 between {large * _VEC_COLS:,} and {small * _VEC_COLS:,} elements "
                f"(outputs allocated): ({f_l:,} - {f_s:,}) FLOP / ({t_l:.3g} - {t_s:.3g}) s"
            )
            rates[name] = Sample(slope, t_l, reps, how)
        else:  # noise made the small size as slow as the large one: keep the plain rate, a lower bound
            rates[name] = Sample(
                f_l / t_l,
                t_l,
                reps,
                f"{name} fp32 on {large * _VEC_COLS:,} elements: {f_l:,} FLOP / {t_l:.3g} s (slope too noisy)",
            )
    return rates


_ATTENTION_SEQ = (64, 256, 1024)  # query = key length, [1, 12, S, 64]: GPT-2-small-shaped heads
_ATTENTION_HEADS, _ATTENTION_DIM = 12, 64


def attention_rates(device: str, budget_s: float, sync=None) -> tuple[tuple[bool, int, float], ...]:
    """FLOP/s of fused attention (``aten.scaled_dot_product_attention``) by mask and sequence length.

    ``[1, 12, S, 64]`` queries, keys and values for S in ``_ATTENTION_SEQ``, causal and not; FLOPs
    by dfx's rule (:func:`dfx.costs.rules_attention.attention_flops`: both contractions, scale,
    mask and softmax, a causal mask not halving them), the tiny attention's own time taken out
    (at most half). A causal kernel skips the masked half of the work, so it is the faster rate.
    Returns ``((causal, seq, flop_per_s), ...)``.
    """
    from dfx.costs.rules_attention import AttentionShape, attention_flops

    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    tiny = torch.ones(1, 1, 2, 8, device=device)
    fixed, _ = time_call(lambda: sdpa(tiny, tiny, tiny), budget_s / 20, sync, max_reps=2_000)
    share = budget_s * 0.95 / (2 * len(_ATTENTION_SEQ))
    rates = []
    for causal in (False, True):
        for seq in _ATTENTION_SEQ:
            q, k, v = (torch.randn(1, _ATTENTION_HEADS, seq, _ATTENTION_DIM, device=device) for _ in range(3))
            t, _ = time_call(lambda: sdpa(q, k, v, None, 0.0, causal), share, sync, max_reps=500)
            shape = AttentionShape(_ATTENTION_HEADS, seq, seq, _ATTENTION_DIM, _ATTENTION_DIM)
            flops = sum(attention_flops(shape, masked=causal).values())
            rates.append((causal, seq, _net_rate(flops, t, fixed)))
    return tuple(rates)


_TABLE_ROWS = (1, 16, 64, 256, 1024)  # one token (a GEMV, bound by streaming the weight) to a feature map
# reduction: an attention head or a 1x1 conv's channels, a hidden size, an MLP's inner size, a 7B model's
_TABLE_K = (64, 512, 2048, 8192)
_TABLE_N = (64, 512, 2048, 8192)  # output features
_TABLE_MIN_CALLS = 4  # time_call's warm-up and its three timed calls: what a shape costs at the least


def gemm_table(
    dtype: torch.dtype, device: str, budget_s: float, sync=None, peak_flop_per_s: float | None = None
) -> tuple[GemmRate, ...]:
    """Achieved FLOP/s of ``[rows,k] x [k,n]`` over ``_TABLE_ROWS`` x ``_TABLE_K`` x ``_TABLE_N``.

    The weight is stored ``[n, k]`` and used transposed (``torch.mm(a, w.t())``), as ``nn.Linear``
    does; the same call again and again, the median kept. The time of a tiny ``[1,8] x [8,8]``
    GEMM (the call's fixed cost) is taken out of each time, at most half of it, because the
    prediction adds the node's own fixed cost. The weight stays in cache from call to call: the
    hot rate. What a weight that comes from DRAM adds is :func:`gemm_cold_points`.

    The axes reach 8192 (a 256 MiB fp32 weight, past the caches; a 7B model's 4096 x 11008
    projections lie between 2048 and 8192): on the machine of ``docs/validation.md``, at 64 rows,
    the rate falls from 237 GFLOP/s at 2048 x 2048 to 221 at 4096 x 4096 and 200 at 4096 x 11008,
    so a table that stopped at 2048 predicted such layers 10 to 20% fast. The weights are filled
    with ones (a GEMM's time does not depend on the values; ``randn`` of 64 M elements takes
    longer than the GEMMs). With ``peak_flop_per_s``, the shapes whose ``_TABLE_MIN_CALLS`` calls
    at that rate take more than their share keep their minimum and the rest share what is left,
    so the table stays within ``budget_s`` (as far as the big shapes allow).
    """
    sync = sync or (lambda: None)
    tiny_a, tiny_b = torch.ones(1, 8, device=device).to(dtype), torch.ones(8, 8, device=device).to(dtype)
    overhead_s, _ = time_call(lambda: torch.mm(tiny_a, tiny_b), budget_s / 50, sync, max_reps=2_000)
    shapes = [(k, n, rows) for k in _TABLE_K for n in _TABLE_N for rows in _TABLE_ROWS]
    total = budget_s * 0.98
    share = total / len(shapes)
    if peak_flop_per_s:
        least = [_TABLE_MIN_CALLS * FMA_FLOPS * rows * k * n / peak_flop_per_s for k, n, rows in shapes]
        big = [t for t in least if t > share]
        small = len(shapes) - len(big)
        share = max(share / 4, (total - sum(big)) / small) if small else share
    points = []
    for k, n in ((k, n) for k in _TABLE_K for n in _TABLE_N):
        b = torch.ones(n, k, device=device, dtype=dtype).t()  # [n, k] storage, used as [k, n]
        for rows in _TABLE_ROWS:
            a = torch.randn(rows, k, device=device).to(dtype)
            t, _ = time_call(lambda: torch.mm(a, b), share, sync, max_reps=1_000)
            points.append(GemmRate(rows, k, n, _net_rate(FMA_FLOPS * rows * k * n, t, overhead_s)))
    return tuple(points)


_BIAS_ROWS = (1, 64, 256)  # one token, a 64-token block, a larger batch
_BIAS_KN = ((512, 512), (512, 2048), (2048, 512), (2048, 2048))  # (k, n): the table's, around GPT-2's 768 and 3072
_BIAS_TINY = (1, 8, 8)  # the fixed costs of mm and addmm, taken out of the others


def gemm_bias_points(
    device: str, budget_s: float, sync=None, clock: Callable[[], float] = time.perf_counter
) -> tuple[tuple[int, int, int, float, float], ...]:
    """A GEMM without and with a bias, as a linear calls it: ``((rows, k, n, mm_s, addmm_s), ...)``, seconds.

    ``torch.mm(a, w.t())`` (what :func:`gemm_table` times) and ``torch.addmm(b, a, w.t())`` (what
    an ``nn.Linear`` with a bias runs, eager, and what Inductor calls for one), in alternation, each
    pair's median kept, over ``_BIAS_ROWS`` x ``_BIAS_KN``, after the tiny ``(1, 8, 8)`` pair: the
    two calls' fixed costs, which :meth:`~dfx.measure.machine.MachineModel.bias_factor_at` takes
    out (as :func:`gemm_table` takes out the tiny ``mm``; a node's own fixed cost is its kind's). On the machine of ``docs/validation.md``
    addmm took 1.02 to 1.08 of mm on GPT-2's shapes: the bias is broadcast into the output before
    the GEMM accumulates onto it, a pass that scales with neither the FLOPs nor the output alone.

    Examples
    --------
    >>> t = iter(range(10**6))
    >>> got = gemm_bias_points("cpu", 0.0, clock=lambda: float(next(t)))  # a fake clock: each call 1 tick
    >>> len(got), got[:2]  # the tiny pair, then 3 rows x 4 (k, n); every call 1 tick
    (13, ((1, 8, 8, 1.0, 1.0), (1, 512, 512, 1.0, 1.0)))
    """
    sync = sync or (lambda: None)
    shapes = [_BIAS_TINY] + [(rows, k, n) for k, n in _BIAS_KN for rows in _BIAS_ROWS]
    points = []
    for rows, k, n in shapes:
        a = torch.ones(rows, k, device=device)
        w = torch.ones(n, k, device=device).t()
        b = torch.ones(n, device=device)
        calls = (lambda: torch.mm(a, w), lambda: torch.addmm(b, a, w))
        for fn in calls:
            fn()
        times: tuple[list[float], list[float]] = ([], [])
        deadline = time.perf_counter() + budget_s / len(shapes)
        while len(times[0]) < _MIN_REPS or (len(times[0]) < _MAX_REPS and time.perf_counter() < deadline):
            for fn, ts in zip(calls, times):
                sync()
                start = clock()
                fn()
                sync()
                ts.append(clock() - start)
        points.append((rows, k, n, statistics.median(times[0]), statistics.median(times[1])))
    return tuple(points)


_COLD_ROWS = (1, 16, 64, 256)  # a GEMV to a prompt's worth of tokens
_COLD_KN = 4096  # a [4096, 4096] fp32 weight: 64 MiB, a 7B model's attention projection
_COLD_REPS = (3, 9)  # fewest and most cold calls per rows value


def gemm_cold_points(
    dtype: torch.dtype, device: str, budget_s: float, evict_bytes: int, sync=None
) -> tuple[tuple[int, int, int, float, float], ...]:
    """What a weight that comes from DRAM adds to a GEMM: ``((rows, k, n, hot_s, cold_s), ...)``, seconds.

    ``[rows, 4096] x [4096, 4096]`` (the weight stored ``[n, k]``, as ``nn.Linear`` keeps it) for
    rows in ``_COLD_ROWS``, timed hot (the same weight again and again: it stays in cache) and cold
    (a different copy of the weight each call, cycling through enough copies that at least
    ``evict_bytes``, the last-level cache's capacity, of other weights ran since a copy was last
    used: it comes from DRAM, as a model's weights do when the model does not fit in the cache).
    Medians of each.

    The cold time is not ``max(compute, weight bytes / DRAM bandwidth)``: the library packs the
    weight into blocks before multiplying them, and reading it from DRAM is hidden behind the
    compute only in part. On the machine of ``docs/validation.md``: at 16 rows the whole weight's
    DRAM time is added to the hot time (4.7 -> 7.5 ms), at 64 rows about half of it (9.7 -> 10.8
    ms), at 256 rows none. :meth:`dfx.measure.machine.MachineModel.exposed_s_per_weight_byte` is
    ``(cold_s - hot_s) / weight bytes`` interpolated by rows.
    """
    sync = sync or (lambda: None)
    k = n = _COLD_KN
    weight_bytes = k * n * torch.tensor([], dtype=dtype).element_size()
    copies = max(2, -(-evict_bytes // weight_bytes) + 1)
    weights = [torch.ones(n, k, device=device, dtype=dtype).t() for _ in range(copies)]
    share = budget_s * 0.95 / (2 * len(_COLD_ROWS))
    low, high = _COLD_REPS
    points = []
    for rows in _COLD_ROWS:
        a = torch.randn(rows, k, device=device).to(dtype)
        hot, _ = time_call(lambda: torch.mm(a, weights[0]), share, sync, max_reps=high)
        torch.mm(a, weights[0])
        times = []
        for i in range(max(low, min(high, int(share / max(hot, 1e-9))))):
            w = weights[(i % (copies - 1)) + 1]  # copies 1.. in turn: each was last used copies - 1 calls ago
            sync()
            start = time.perf_counter()
            torch.mm(a, w)
            sync()
            times.append(time.perf_counter() - start)
        points.append((rows, k, n, hot, statistics.median(times)))
    return tuple(points)


# [64, 768] and [64, 4096] fp32: a small model's and a 7B model's hidden state
_AFTER_ELEMENTS = (48 * 1024, 256 * 1024)
# (rows, k, n) of the GEMM run before the op: weights of 1, 4, 16 and 64 MiB (fp32, stored [n, k])
_AFTER_GEMMS = ((64, 512, 512), (64, 1024, 1024), (64, 2048, 2048), (64, 4096, 4096))
_AFTER_REPS = (5, 25)


def after_gemm_points(device: str, budget_s: float, sync=None) -> tuple[tuple[int, int, float, float], ...]:
    """What an element-wise op costs right after a GEMM that streamed other data: ``((bytes, streamed_bytes, hot_s, after_s), ...)``.

    ``aten.add.Tensor(x, y)`` (fp32, its output allocated, as a graph node calls it) on
    ``_AFTER_ELEMENTS`` elements, moving ``bytes = 3 x 4 x elements``, timed in a hot loop
    (``hot_s``) and right after a ``[64, k] x [k, n]`` GEMM (``after_s``) that moved
    ``streamed_bytes`` (its weight, input and output) for each GEMM of ``_AFTER_GEMMS``. Medians.

    In a model run for real, an op's inputs were last touched some time before, and the nodes in
    between moved other data through the caches: on the machine of ``docs/validation.md`` the add
    on 0.59 MB costs 5 us hot, 11 us after a GEMM with a 1 MiB weight, 19 us after 4 MiB, 46 us
    after 16 MiB and 67 us after 64 MiB (the op's data, and its code, come from farther caches the
    more was streamed; page faults were counted and are not it). The GPT-2 block's residual add
    measured 25.8 us in a run against 5.6 us alone. :meth:`dfx.measure.machine.MachineModel.after_gemm_s`
    reads this table off at a node's bytes and the bytes moved since its inputs were last touched.
    """
    sync = sync or (lambda: None)
    aten = torch.ops.aten
    share = budget_s * 0.95 / (len(_AFTER_GEMMS) * len(_AFTER_ELEMENTS) + 1)
    low, high = _AFTER_REPS
    ops = [(e, torch.randn(e, device=device), torch.randn(e, device=device)) for e in _AFTER_ELEMENTS]
    hot = {e: time_call(lambda: aten.add.Tensor(x, y), share / len(ops), sync, max_reps=2_000)[0] for e, x, y in ops}
    points = []
    for rows, k, n in _AFTER_GEMMS:
        a, w = torch.randn(rows, k, device=device), torch.ones(n, k, device=device).t()
        gemm_s, _ = time_call(lambda: torch.mm(a, w), 0.0, sync)
        streamed = 4 * (rows * k + k * n + rows * n)
        for elements, x, y in ops:
            times = []
            for _ in range(max(low, min(high, int(share / max(gemm_s, 1e-9))))):
                torch.mm(a, w)
                sync()
                start = time.perf_counter()
                aten.add.Tensor(x, y)
                sync()
                times.append(time.perf_counter() - start)
            points.append((_ADD_TENSORS * 4 * elements, streamed, hot[elements], statistics.median(times)))
    return tuple(points)


def _tiny_pointwise(device: str) -> dict[str, Callable[[], object]]:
    """Six element-wise kinds on 8 elements (``aten.add``, ``mul``, ``neg``, ``relu``, ``rsqrt``,
    ``sigmoid``): what a model's pointwise nodes call, all dispatch and no work."""
    aten = torch.ops.aten
    x = torch.ones(1, 8, device=device)
    return {
        "add": lambda: aten.add.Tensor(x, x),
        "mul": lambda: aten.mul.Tensor(x, x),
        "neg": lambda: aten.neg.default(x),
        "relu": lambda: aten.relu.default(x),
        "rsqrt": lambda: aten.rsqrt.default(x),
        "sigmoid": lambda: aten.sigmoid.default(x),
    }


_CHAIN_GEMM = _AFTER_GEMMS[-1]  # the largest: a 64 MiB weight, as a 7B model's projections stream
_CHAIN_LENGTH = 6  # tiny calls timed after each GEMM, by position
_CHAIN_REPS = (9, 45)  # GEMMs, fewest and most: each kind at each position at least once


def after_gemm_chain_points(
    device: str, budget_s: float, sync=None, clock: Callable[[], float] = time.perf_counter
) -> tuple[tuple[int, int, float], ...]:
    """What the tiny calls that follow a large GEMM cost, one after another: ``((position, streamed_bytes, seconds), ...)``.

    After each ``[64, 4096] x [4096, 4096]`` GEMM (``_CHAIN_GEMM``, moving ``streamed_bytes``),
    ``_CHAIN_LENGTH`` tiny calls of :func:`_tiny_ops`'s nine kinds run in turn, each timed; the
    kinds rotate by one from GEMM to GEMM, so that every position sees every kind. ``seconds`` is
    the median at a position (1: right after the GEMM) over kinds and GEMMs. Repetitions: as many
    GEMMs as ``budget_s`` allows, between ``_CHAIN_REPS``.

    :func:`after_gemm_points` times one op right after the GEMM; a model runs a chain of different
    ops there (a decoder layer's RMS norm: ``pow``, ``mean``, ``add``, ``rsqrt``, ``mul``, ``mul``).
    Each call re-fetches part of the code and data the GEMM's stream evicted and leaves less for
    the next one, but a kind that has not run since still fetches its own: timed alone on the
    machine of ``docs/validation.md`` (2026-12-02), a tiny ``rsqrt`` took 108 to 113 us right after
    the GEMM, 32 to 37 after it and a 1 MiB ``pow``, 22 with a ``mean`` and a tiny ``mul`` between
    too (1.5 us in a hot loop); the Llama layer's ``add`` of the epsilon and ``rsqrt``, fourth and
    fifth after a GEMM, measure 17 to 25 us in every run.

    Examples
    --------
    >>> t = iter(range(10**6))
    >>> got = after_gemm_chain_points("cpu", 0.0, clock=lambda: float(next(t)))  # a fake clock: each call 1 tick
    >>> [(p, s, v) for p, s, v in got][:2]
    [(1, 69206016, 1.0), (2, 69206016, 1.0)]
    """
    sync = sync or (lambda: None)
    rows, k, n = _CHAIN_GEMM
    a, w = torch.randn(rows, k, device=device), torch.ones(n, k, device=device).t()
    streamed = 4 * (rows * k + k * n + rows * n)
    ops = list(_tiny_pointwise(device).values())
    low, high = _CHAIN_REPS
    times: list[list[float]] = [[] for _ in range(_CHAIN_LENGTH)]
    deadline = time.perf_counter() + budget_s
    rep = 0
    while rep < low or (rep < high and time.perf_counter() < deadline):
        torch.mm(a, w)
        for position in range(_CHAIN_LENGTH):
            fn = ops[(rep + position) % len(ops)]
            sync()
            start = clock()
            fn()
            sync()
            times[position].append(clock() - start)
        rep += 1
    return tuple((position + 1, streamed, statistics.median(ts)) for position, ts in enumerate(times))


_COLD_WRITE_SHAPE = (64, 4096)  # a Llama-7B activation at 64 tokens: 1 MiB in fp32
_COLD_WRITE_CYCLE_BYTES = (
    256 * 2**20
)  # buffers cycled through, at least: 2 x the 120 MiB resident of docs/validation.md's machine
_COLD_WRITE_MAX_REPS = 2_000


def cold_write_points(
    device: str, budget_s: float, sync=None, cycle_bytes: int = _COLD_WRITE_CYCLE_BYTES
) -> tuple[tuple[int, float, float], ...]:
    """What writing an output into a block not in cache costs: ``((bytes, hot_s, cold_s),)``.

    ``aten.mul.out(x, y, out=buffer)`` on ``_COLD_WRITE_SHAPE`` fp32 (``bytes``: the output's),
    timed into one buffer again and again (``hot_s``), and cycling through as many such buffers
    as fill ``cycle_bytes`` (``cold_s``: calibrate passes twice the measured resident bytes, at
    least 256 MiB, so each buffer has left the last-level cache when it is written again).
    Medians of single calls. In eager torch a node's output is a block the allocator hands back;
    in a model whose data does not stay in the cache (the Llama layer's 800 MiB of weights stream
    through it on every run) that block was last touched before the cache turned over. Here: 20
    us into one buffer; 35 us cycling 64 MiB (still in the L3), 78 us cycling 256 MiB, 77 us 512.
    """
    sync = sync or (lambda: None)
    rows, cols = _COLD_WRITE_SHAPE
    x, y = torch.randn(rows, cols, device=device), torch.randn(rows, cols, device=device)
    out_bytes = x.numel() * x.element_size()
    buffers = [torch.zeros(rows, cols, device=device) for _ in range(max(2, cycle_bytes // out_bytes))]
    mul = torch.ops.aten.mul.out

    def timed(pick: Callable[[int], torch.Tensor], seconds: float) -> float:
        times: list[float] = []
        deadline = time.perf_counter() + seconds
        i = 0
        while (len(times) < 20 or time.perf_counter() < deadline) and len(times) < _COLD_WRITE_MAX_REPS:
            out = pick(i)
            sync()
            start = time.perf_counter()
            mul(x, y, out=out)
            sync()
            times.append(time.perf_counter() - start)
            i += 1
        return statistics.median(times)

    for b in buffers:  # every buffer touched once: no page faults in what is timed
        mul(x, y, out=b)
    hot = timed(lambda i: buffers[0], budget_s / 2)
    cold = timed(lambda i: buffers[i % len(buffers)], budget_s / 2)
    return ((out_bytes, hot, cold),)


# (batch, C_in, H = W, C_out, kernel): ResNet-shaped 1x1 and 3x3 convolutions, stride 1, "same" padding
# (ResNet-50's first stage at 56 x 56: its 1x1 reductions and expansions and its 3x3; the same at 28 x 28; a 14 x 14 3x3)
_CONV_SHAPES = (
    (1, 256, 28, 64, 1),
    (1, 64, 28, 64, 3),
    (1, 64, 28, 256, 1),
    (1, 64, 56, 64, 3),
    (1, 128, 14, 128, 3),
    (1, 256, 56, 64, 1),
    (1, 64, 56, 256, 1),
)


def conv_points(device: str, budget_s: float, sync=None, channels_last: bool = False) -> tuple[GemmRate, ...]:
    """FLOP/s of ``aten.convolution`` (fp32, NCHW, as a model calls it) at ResNet-shaped 1x1 and 3x3 layers.

    Each is reported as its implicit GEMM (rows = output pixels, k = C_in x kernel elements, n =
    C_out) so that :class:`dfx.measure.machine.MachineModel` can compare it with the GEMM table at
    the same shape: convolutions pay layout reorders and im2col-style work a GEMM does not. FLOPs
    are ``2 * rows * k * n`` (dfx's convention, no bias); the tiny conv's own time is taken out,
    at most half.

    ``channels_last``: input and weight in ``torch.channels_last``, the layout Inductor runs every
    convolution in on a CPU (it converts the graph's NCHW input first, and each 3x3 weight).
    oneDNN then skips its own reorders: on the machine of ``docs/validation.md`` the 56 x 56 1x1
    layers take 312 and 321 us against 520 to 550 in NCHW, the 3x3 one 601 against 770.
    """
    conv = torch.ops.aten.convolution.default
    img, one = torch.ones(1, 1, 2, 2, device=device), torch.ones(1, 1, 1, 1, device=device)
    fixed, _ = time_call(
        lambda: conv(img, one, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), budget_s / 20, sync, max_reps=2_000
    )
    share = budget_s * 0.95 / len(_CONV_SHAPES)
    points = []
    layout = torch.channels_last if channels_last else torch.contiguous_format
    for batch, c_in, side, c_out, kernel in _CONV_SHAPES:
        x = torch.randn(batch, c_in, side, side, device=device).contiguous(memory_format=layout)
        w = torch.randn(c_out, c_in, kernel, kernel, device=device).contiguous(memory_format=layout)
        pad = kernel // 2
        t, _ = time_call(
            lambda: conv(x, w, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1), share, sync, max_reps=500
        )
        rows, k = batch * side * side, c_in * kernel * kernel
        points.append(GemmRate(rows, k, c_out, _net_rate(FMA_FLOPS * rows * k * c_out, t, fixed)))
    return tuple(points)


_LAYOUT_SHAPE = (1, 128, 56, 56)  # 1.6 MB fp32: between the 64- and 256-channel maps of ResNet-50's first stage
LAYOUT_MIN_S = 4.0  # importing Inductor and compiling one kernel: 3.6 s here with its C++ in the on-disk cache
_LAYOUT_TIMING_MIN_S = 0.25  # timed for at least this long whatever the compile took: the first calls fault pages in


def _to_channels_last(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last)


def inductor_compile(fn: Callable[[torch.Tensor], torch.Tensor], example: torch.Tensor) -> Callable[..., object]:
    """``fn`` traced (``torch.fx.symbolic_trace``) and compiled by Inductor for ``example`` (C++ on the CPU).

    Inductor's graph cache is on, and its C++ cache is on disk: a second calibration loads the
    kernel instead of building it again (3.6 s with Inductor's import against about 10 on the machine
    of ``docs/validation.md``). One compile thread: no worker processes, whose CPU time the busy
    watch (:func:`dfx.measure.busy.left_share`) would count as another tenant's.
    """
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch({"fx_graph_cache": True, "compile_threads": 1}), torch.no_grad():
        return compile_fx(torch.fx.symbolic_trace(fn), [example])


def compile_layout_copy() -> Callable[..., object]:
    """Inductor's NCHW -> channels-last copy of a ``_LAYOUT_SHAPE`` fp32 tensor, compiled (:func:`inductor_compile`)."""
    return inductor_compile(_to_channels_last, torch.empty(*_LAYOUT_SHAPE))


def layout_copy_points(
    device: str,
    budget_s: float,
    sync=None,
    compile_fn: Callable[..., Callable[..., object]] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[tuple[int, float], ...]:
    """What Inductor's generated NCHW -> channels-last copy costs: ``((bytes, seconds),)``, bytes read + written.

    Inductor runs every convolution channels-last on a CPU, so it copies a graph's NCHW input
    into channels-last before the first convolution (``cpp_fused_convolution_0``: a kernel of its
    own, 16 x 16 blocks transposed), which neither eager torch nor dfx's compiled program runs.
    ``x.contiguous(memory_format=torch.channels_last)`` on ``_LAYOUT_SHAPE`` fp32 is compiled by
    ``compile_fn`` (default :func:`inductor_compile`; the compile time counts against
    ``budget_s``) and the compiled call (its output allocated, as in a run) timed with the rest
    of the budget, at least ``_LAYOUT_TIMING_MIN_S`` (the first calls of a new 1.6 MB output fault
    its pages in: 780 us against 125 us when only three calls were left). Eager torch's own copy is no stand-in: ATen's strided
    copy took 406 us where Inductor's kernel took 204 to 229 us on a ``[1, 256, 56, 56]`` tensor.
    Empty on a GPU.
    """
    if device != "cpu":
        return ()
    start = clock()
    x = torch.randn(*_LAYOUT_SHAPE)
    compiled = (compile_fn or inductor_compile)(_to_channels_last, x)
    left = max(_LAYOUT_TIMING_MIN_S, budget_s - (clock() - start))
    t, _ = time_call(lambda: compiled(x), left, sync, max_reps=2_000)
    return ((2 * x.numel() * x.element_size(), t),)


_TINY_WIDTH = 32  # Inductor decomposes an addmm of at most 16 x 16 into generated code on a CPU; 32 stays extern
_TINY_ROUND = (3, 20)  # warm-up and timed runs per round: dfx validate --compiled's defaults (bench: 20 timed)


class _TinyLinears(torch.nn.Module):
    """``Linear(32, 32) -> ReLU -> Linear(32, 32) -> ReLU -> Linear(32, 16, bias=False)`` on a ``[1, 1, 32]``
    input: a (batch, tokens, features) activation, as a transformer's or the MLP's linears see it, so
    that Inductor's wrapper views it to 2-D and back (``reinterpret_tensor``) around each call as it
    does in those models. Inductor runs it as ``extern_kernels.addmm``, a generated ReLU kernel,
    ``addmm``, ReLU, ``extern_kernels.mm``."""

    def __init__(self) -> None:
        super().__init__()
        w = _TINY_WIDTH
        self.a, self.b, self.c = torch.nn.Linear(w, w), torch.nn.Linear(w, w), torch.nn.Linear(w, w // 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def compile_tiny_linears() -> tuple[object, list]:
    """:class:`_TinyLinears` exported and compiled by Inductor with its kernel calls stamped
    (:func:`dfx.measure.compiled.compile_real`, as ``dfx validate --compiled`` compiles a model; one
    compile thread); returns the :class:`~dfx.measure.compiled.CompiledRun` and its inputs. About
    0.1 s once Inductor is imported and its C++ is in the on-disk cache."""
    import torch._inductor.config as inductor_config

    from dfx.measure.compiled import compile_real
    from dfx.measure.realrun import export_real

    with torch.no_grad():
        exported = export_real(_TinyLinears().eval(), (torch.ones(1, 1, _TINY_WIDTH),))
    with inductor_config.patch({"compile_threads": 1}):
        run = compile_real(exported.gm, exported.inputs, [n.name for n in exported.gm.graph.nodes])
    return run, exported.inputs


def compiled_overheads(
    budget_s: float, compiled: tuple[object, list] | None = None, clock: Callable[[], float] = time.perf_counter
) -> dict[str, float]:
    """What a call costs in Inductor's compiled code (CPU), timed as ``dfx validate --compiled`` times a
    model's calls (:func:`dfx.measure.compiled.time_kernel_calls`: a clock stamp after each call in the
    wrapper, each call the time between its stamps, its glue included: the output's allocation,
    the views of its operands, the checks of inputs it is the first to use), seconds:

    - ``generated``: the median of :class:`_TinyLinears`' two ReLU kernels (Inductor's C++ on 32 floats);
    - ``addmm``: its second ``extern_kernels.addmm`` (``[1, 32] x [32, 32]`` and a bias);
    - ``mm``: its ``extern_kernels.mm`` (``[1, 32] x [32, 16]``);
    - ``first_addmm``: its first call, an addmm: the wrapper's entry (unpacking and checking its
      inputs) runs in its window.

    Rounds of 3 warm-up and 20 timed runs (``dfx validate --compiled``'s protocol), each call's
    median per round, then the median over rounds, for ``budget_s`` (at least three rounds).
    ``compiled`` is :func:`compile_tiny_linears`' result (compiled now when not given).
    On the machine of ``docs/validation.md`` (2026-12-02) a ReLU took 1.6 to 2.1 us, an addmm 5.0
    to 6.5 us, the first 6.2 to 8.4: the MLP's compiled ReLUs measured 1.9 to 2.2 us and its last
    addmm 5.2 to 5.7, where an eager tiny ReLU takes 1.6 in a hot loop.
    """
    from dfx.measure.compiled import time_kernel_calls

    run, inputs = compiled or compile_tiny_linears()
    handles = [h for h, _ in run.calls]  # type: ignore[attr-defined]
    warmup, repeat = _TINY_ROUND
    rounds: list[dict[str, float]] = []
    deadline = clock() + budget_s
    while len(rounds) < _MIN_REPS or clock() < deadline:
        rounds.append(time_kernel_calls(run, inputs, repeat=repeat, warmup=warmup))
    each = {h: statistics.median(r[h] for r in rounds) for h in handles}
    addmms = [h for h in handles if h.startswith("extern_kernels.addmm")]
    generated = [each[h] for h in handles if not h.startswith("extern_kernels.")]
    mms = [each[h] for h in handles if h.startswith("extern_kernels.mm")]
    out = {"first_addmm": each[handles[0]]}
    if len(addmms) > 1:
        out["addmm"] = statistics.median(each[h] for h in addmms[1:])
    if generated:
        out["generated"] = statistics.median(generated)
    if mms:
        out["mm"] = statistics.median(mms)
    return out


_SWEEP_FRACTIONS = (1 / 8, 1 / 4, 3 / 8, 1 / 2, 3 / 4, 1.0, 3 / 2, 2.0)  # of the last-level cache's capacity


def resident_bytes(cache_bytes: int, dram_bytes_per_s: float, device: str, budget_s: float, sync=None) -> Sample:
    """The largest working set the last-level cache keeps when it is streamed again and again.

    ``c = a + b`` (fp32, preallocated) is timed at working sets of 1/8 to 2 x ``cache_bytes``;
    the answer is the largest one, below the first that falls under the geometric mean of the
    fastest bandwidth seen and ``dram_bytes_per_s``. On a virtual machine sharing its cache with
    other tenants, or with a victim-cache design, it is well below the cache's capacity (half of it
    on the machine of ``docs/validation.md``). A model whose weights and activations exceed it
    reads its weights from DRAM on every run.
    """
    sizes = [max(4096, int(cache_bytes * f)) for f in _SWEEP_FRACTIONS]
    bandwidth = []
    for nbytes in sizes:
        numel = nbytes // (_ADD_TENSORS * 4)
        t, _ = _add_time(numel, device, budget_s / len(sizes), sync)
        bandwidth.append(_ADD_TENSORS * 4 * numel / t)
    threshold = (max(bandwidth) * dram_bytes_per_s) ** 0.5
    kept = 0
    for nbytes, bw in zip(sizes, bandwidth):
        if bw < threshold:
            break
        kept = nbytes
    listed = ", ".join(f"{n / 2**20:.1f} MiB {bw / 1e9:.0f}" for n, bw in zip(sizes, bandwidth))
    how = f"largest torch.add(a, b, out=c) working set at or above {threshold / 1e9:.0f} GB/s (geometric mean of fastest and DRAM), GB/s: {listed}"
    return Sample(float(kept), 0.0, len(sizes), how)


REFERENCE_SHAPE = (256, 512, 512)  # rows, k, n: a GEMM of a few hundred microseconds on a CPU core


def reference_flop_per_s(device: str, budget_s: float, sync=None) -> float:
    """FLOP/s of one reference GEMM ``[256,512] x [512,512]`` (median of repeated calls).

    ``dfx calibrate`` records it; ``dfx validate`` measures it again before and after the model
    runs, so that a machine that got slower or faster since its calibration (another tenant, a
    frequency change) is reported as such rather than blamed on the model.
    """
    rows, k, n = REFERENCE_SHAPE
    a, b = torch.randn(rows, k, device=device), torch.randn(n, k, device=device).t()
    t, _ = time_call(lambda: torch.mm(a, b), budget_s, sync, max_reps=2_000)
    return FMA_FLOPS * rows * k * n / t
