"""A cache-aware re-timing of the roofline for a calibrated cache machine (CPU, GPU L2).

The eager roofline (``docs/hardware.md``) charges every byte to the off-chip level (DRAM, HBM).
On a machine whose caches hold a node's working set, as they do when the same small model runs
again and again, the bytes stream at the cache's bandwidth instead. Without a
:class:`~dfx.measure.machine.MachineModel` this timer keeps the roofline formula and changes only
where the bytes go::

    working_set = distinct inputs + outputs + parameters read        (dfx.roofline.working_set_bytes)
    level       = the closest level, in profile order, with capacity_bytes >= working_set and a
                  bandwidth; else the off-chip level
    time        = max(flops / peak, bytes / level bandwidth) + op_overhead_s

With a machine model (``dfx calibrate --json``), the calibrated prediction::

    cold        = the model's footprint (weights + activations) > the cache's resident bytes:
                  weights come from DRAM on every run (a cyclic access pattern under LRU)
    bytes       = weight bytes at DRAM bandwidth if cold; the rest at the level holding the
                  activations' working set
    peak        = a matmul: the measured GEMM rate at its rows, k and n (a convolution: at its
                  implicit GEMM, times the convolution-to-GEMM ratio of the nearest measured
                  convolution; with a bias, divided by the nearest gemm_bias point's addmm / mm);
                  when cold, a GEMM's
                  compute time grows by weight bytes x the time its DRAM read adds per byte at its
                  rows (gemm_cold: the part the library does not hide behind the multiplication);
                  attention: the measured attention rate at its sequence length;
                  a vector op with a measured family (GELU, softmax, layer / batch norm): that
                  family's rate; any other normalization: the median family rate; else the peak
    overhead    = the node's kind's hot-loop cost (a tiny linear, add, layer norm, ...) plus what
                  the overhead curve adds at the predicted time since a node of the same kind (the
                  same aten calls) last ran, cyclically: the graph runs again and again
                  (eager: a linear on an input of more than two dimensions is of kind
                  ``linear_nd``; and a node after a node of other aten calls pays at least its kind's
                  cost when the tiny calls run in turn, ``overhead_mixed``)
    after GEMM  = a node that is not a GEMM or convolution, moves bytes at the closest cache and
                  is one of the two working nodes right after a GEMM takes the larger of the curve's
                  increment and after_gemm(those bytes, the bytes that GEMM moved): what an add
                  measured right after GEMMs that streamed 1 to 64 MiB pays over its hot-loop time
    time        = max(flops / peak, bytes / bandwidth) + overhead

The gaps depend on the predicted times, overheads included; they are found by iterating from
zero overheads (three passes: each changes the gaps by at most the previous change in overheads,
which the curve's slope shrinks). Approximations: the whole capacity of a cache is usable for the
activations; the cold first run is not modelled; the time between runs is not modelled.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any, Callable, Mapping

from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile, MemoryLevel
from dfx.measure.machine import (
    MachineModel,
    attention_call,
    gemm_dims,
    has_bias,
    is_convolution,
    model_footprint_bytes,
    op_kind,
    overhead_kind,
    vector_family,
)
from dfx.roofline.bound import Bound
from dfx.roofline.execution import home_level, working_set_bytes
from dfx.roofline.latency import NodeTiming

__all__ = ["NAME", "cache_levels", "cache_timer", "kernel_timer"]

NAME = "cache-aware"
_PASSES = 3
_SQUARE_K = 512  # a contraction without a weight (bmm, attention) is read off the k = n = 512 column by FLOPs
_STATE_KINDS = ("parameter", "buffer", "constant")  # placeholders that hold weights, not activations


def cache_levels(profile: HardwareProfile) -> tuple[MemoryLevel, ...]:
    """The levels a working set can sit in, closest first: known capacity and bandwidth, on chip."""
    return tuple(lv for lv in profile.memory if lv.on_chip and lv.capacity_bytes and lv.bandwidth_bytes_per_s)


def _level_for(levels: tuple[MemoryLevel, ...], need: int, fallback: MemoryLevel) -> MemoryLevel:
    return next((lv for lv in levels if lv.capacity_bytes >= need), fallback)


def cache_timer(
    costed: CostedGraph, profile: HardwareProfile, machine: MachineModel | None = None, eager: bool = False
) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
    """A ``node_timer`` for :func:`dfx.roofline.evaluate` that charges bytes to the cache that holds them.

    With ``machine`` (:meth:`MachineModel.from_calibration`), the calibrated prediction of the
    module docstring: measured GEMM and vector rates, weights from DRAM when the model does not
    stay in cache, and the overhead curve. ``eager``: the nodes run one by one in eager torch, so
    a view node (category ``view``: 0 FLOPs, 0 bytes) costs :meth:`MachineModel.view_s` (the
    dispatch of a view; its bound stays ``none``), plus :meth:`MachineModel.after_gemm_fixed_s`
    when it runs right after a GEMM (the Llama layer's ``view`` after each projection measured
    54 to 66 us, the fixed part after a 64 MiB GEMM 62 us); in a compiled program views are
    free. Also in eager, when the model does not stay in the cache (its footprint over
    ``resident_bytes``, the test that sends its weights to DRAM), each working node's output
    bytes cost :meth:`MachineModel.cold_write_s_per_byte` more: the block the allocator hands
    back was last touched before GEMMs streamed more than the cache keeps; a node charged the
    after-GEMM chain (:func:`_chain_s`) or its kind's own curve (``mean``, ``cat``: both timed on
    calls with no output block to speak of) pays it on top, any other the larger of the two.
    Times are seconds.
    """
    from dfx.roofline import evaluate

    levels = cache_levels(profile)
    fallback = home_level(profile)
    if machine is None:

        def plain(node: CostedNode, timing: NodeTiming) -> NodeTiming:
            if timing.bound is Bound.NONE or not levels:
                return timing
            activations, params = working_set_bytes(node, costed.graph)
            level = _level_for(levels, activations + params, fallback)
            return _retime(timing, timing.compute_time_s, {level: timing.bytes}, timing.overhead_s)

        return plain

    base = {t.name: t for t in evaluate(costed, profile).nodes}
    cold = machine.resident_bytes is not None and model_footprint_bytes(costed.graph) > machine.resident_bytes
    off = profile.off_chip_level() or fallback
    work: dict[str, tuple[float, dict[MemoryLevel, int]]] = {}
    for node in costed.nodes:
        timing = base[node.name]
        if timing.bound is Bound.NONE:
            continue
        compute_s = _compute_s(node, timing, machine)
        if cold:
            compute_s += _exposed_weight_s(node, costed, machine)
        work[node.name] = (compute_s, _traffic(node, costed, timing, levels, fallback, off, cold))
    order = [n for n in costed.nodes if n.name in work]
    kinds = [op_kind(n) for n in order]
    fixed_kinds = [_eager_kind(n, machine) if eager else overhead_kind(n) for n in order]
    floors = [0.0] * len(order)
    if eager:  # the node before each one counts views: their dispatches run between too
        run = [n for n in costed.nodes if n.name in work or _is_view(n, base[n.name])]
        fixed = dict(zip((n.name for n in order), fixed_kinds))
        mixed = _mixed_floors([op_kind(n) for n in run], [fixed.get(n.name) for n in run], machine)
        floors = [f for n, f in zip(run, mixed) if n.name in work]
    work_s = [max(c, _memory_s(traffic)) for c, traffic in (work[n.name] for n in order)]
    after = _after_gemm_s(costed, order, {n: w[1] for n, w in work.items()}, levels, machine)
    hot_s = [machine.overhead_s(0.0, base[n.name].overhead_s, kind) for n, kind in zip(order, fixed_kinds)]
    moved = {n: sum(w[1].values()) for n, w in work.items()}
    chain = _chain_s(order, moved, fixed_kinds, hot_s, machine) if eager else {}
    overheads = [0.0] * len(order)
    for _ in range(_PASSES):
        totals = [w + o for w, o in zip(work_s, overheads)]
        gaps = _reuse_gaps(kinds, totals)
        overheads = [
            max(floor, chain[n.name])
            if n.name in chain
            else max(floor, _overhead(machine, g, base[n.name].overhead_s, kind, after.get(n.name)))
            for n, g, kind, floor in zip(order, gaps, fixed_kinds, floors)
        ]
    timed = {n.name: _retime(base[n.name], work[n.name][0], work[n.name][1], o) for n, o in zip(order, overheads)}
    per_byte = machine.cold_write_s_per_byte() if eager and cold else 0.0
    if per_byte:  # every output is a block the allocator hands back, last touched before the cache turned over
        for n, kind in zip(order, fixed_kinds):
            extra = per_byte * sum(spec.nbytes for spec in n.node.outputs)
            t = timed[n.name]
            hot = machine.overhead_s(0.0, base[n.name].overhead_s, kind)
            new = max(t.overhead_s, hot + extra)  # the same kind of cost as the curve's and after_gemm's: the larger
            if n.name in chain:  # code re-fetched after a GEMM (the chain), then the data written: both
                new = max(t.overhead_s, chain[n.name] + extra)
            elif kind in machine.overhead_curve_by_kind and not after.get(n.name):
                new = t.overhead_s + extra  # its own curve was timed on 8-element calls: the block comes on top
            timed[n.name] = replace(t, time_s=t.time_s - t.overhead_s + new, overhead_s=new)
    view_s = machine.view_s() if eager else None
    if view_s:
        run = [n for n in costed.nodes if n.name in work or _is_view(n, base[n.name])]
        for j, n in enumerate(run):
            if n.name in work:
                continue
            before = run[(j - 1) % len(run)]  # cyclically: the graph runs again and again
            cost = view_s if before.name not in work else max(view_s, machine.mixed_s("view") or 0.0)
            if machine.after_gemm and before is not n and _is_gemm(before):
                cost += machine.after_gemm_fixed_s(sum(work[before.name][1].values())) or 0.0
            timed[n.name] = replace(base[n.name], time_s=cost, overhead_s=cost)

    def calibrated(node: CostedNode, timing: NodeTiming) -> NodeTiming:
        return timed.get(node.name, timing)

    return calibrated


def _eager_kind(node: CostedNode, machine: MachineModel) -> str | None:
    """:func:`overhead_kind`, but ``linear_nd`` for an ``aten.linear`` on an input of more than two
    dimensions when the machine measured it: eager ``aten.linear`` flattens such an input, calls
    ``addmm`` and views the result back, which the 2-D tiny linear does not pay. (Inductor calls
    ``addmm`` on 2-D operands itself, so a compiled program keeps ``linear``.)"""
    kind = overhead_kind(node)
    if kind != "linear" or "linear_nd" not in machine.overhead_by_kind or not node.node.outputs:
        return kind
    linear = node.node.target.startswith("aten.linear")  # a linear's output has as many dims as its input
    return "linear_nd" if linear and len(node.node.outputs[0].shape) > 2 else kind


_PARALLEL_GRAIN = 32_768  # torch's at::internal::GRAIN_SIZE: an element-wise op on fewer elements runs on one thread


def _chain_s(
    order: list[CostedNode],
    moved: Mapping[str, int],
    fixed_kinds: list[str | None],
    hot: list[float],
    machine: MachineModel,
) -> dict[str, float]:
    """Eager: the fixed cost, seconds, of each element-wise node that runs as the second or a later
    working node after a GEMM that moved at least the chain's GEMM did (cyclically: the graph runs
    again and again), from :meth:`MachineModel.chain_s` at its position ``p``. In the prediction it
    takes the place of the overhead curve and of ``after_gemm``; a cold output block
    (``cold_write``) adds to it rather than competing with it (code re-fetched, then data).

    - A tiny node (every output under ``_PARALLEL_GRAIN`` elements: it runs on the calling thread
      and its kernel has next to nothing to do, as the chain's calls do): the chain at ``p``.
    - Any other element-wise node: the chain at ``p`` when no node of its aten calls (``op_kind``)
      ran since the GEMM, else its ``hot`` cost: its own code is still in the caches.

    Nodes whose kind has a curve of its own (``mean``, ``cat``) keep it. The curve is what a call
    pays as the first op after a gap filled with GEMMs: in a model the ops after a GEMM each
    re-fetch part of what the stream evicted, so the fourth pays far less than the first (the
    Llama layer's ``add`` of the epsilon and ``rsqrt`` on ``[1, 64, 1]``, fourth and fifth after a
    GEMM, 17 to 25 us in every run, where the curve charged the ``rsqrt`` 80 to 129 us, its kind
    having last run 120 ms before, and the ``add`` its hot 2 to 8 us); its rotary ``mul_3`` to
    ``mul_5``, each after a ``mul``, pay about their cold output block alone (53 to 63 us over their
    work against 55), its ``neg``, ``pow_2`` and ``add_1``, the first of their kinds, that and a
    chain's worth more. A tiny node ignores the kind: an ``add`` of a number after an ``add`` of two
    tensors still pays the chain. Empty without ``after_gemm_chain``.

    Examples
    --------
    >>> class N:  # stand-ins: a GEMM is a matmul with a weight, here by name; outputs of `numel` elements
    ...     def __init__(self, name, cat="elementwise", numel=64, op=None):
    ...         self.name, self.category = name, type("C", (), {"value": cat})()
    ...         self.node = type("G", (), {"outputs": (type("S", (), {"numel": numel})(),)})()
    ...         self.op = (op or name,)
    >>> import dfx.measure.cache_model as cm
    >>> real = cm._is_gemm, cm.op_kind
    >>> cm._is_gemm, cm.op_kind = (lambda n: n.name.startswith("linear")), (lambda n: n.op)
    >>> chain = ((1, 100, 130e-6), (2, 100, 33e-6), (3, 100, 26e-6))
    >>> m = MachineModel(after_gemm_chain=chain, overhead_curve_by_kind={"mean": ((1e-5, 4e-6),)})
    >>> order = [N("linear", "matmul"), N("add"), N("mean"), N("rsqrt"), N("mul", numel=10**6),
    ...          N("mul_1", numel=10**6, op="mul"), N("add_1", numel=10**6, op="add")]
    >>> kinds, hot = [None, "add", "mean", None, "add", "add", "add"], [3e-6] * 7
    >>> got = cm._chain_s(order, {"linear": 100}, kinds, hot, m)
    >>> {k: round(v * 1e6, 6) for k, v in got.items()}  # add: first after the GEMM; mean: its own curve
    {'rsqrt': 26.0, 'mul': 26.0, 'mul_1': 3.0, 'add_1': 3.0}
    >>> cm._chain_s(order, {"linear": 99}, kinds, hot, m)  # after a GEMM smaller than the chain's: none
    {}
    >>> cm._is_gemm, cm.op_kind = real
    """
    if not machine.after_gemm_chain:
        return {}
    own = machine.overhead_curve_by_kind
    count = len(order)
    out: dict[str, float] = {}
    for j, (node, kind) in enumerate(zip(order, fixed_kinds)):
        if node.category.value != "elementwise" or kind in own or _is_gemm(node):
            continue
        tiny = all(spec.numel < _PARALLEL_GRAIN for spec in node.node.outputs)
        since: set[tuple[str, ...]] = set()  # the aten calls of the nodes between the GEMM and this one
        for back in range(1, count):
            before = order[(j - back) % count]
            if not _is_gemm(before):
                since.add(op_kind(before))
                continue
            value = machine.chain_s(back, moved.get(before.name, 0)) if back >= 2 else None
            if value is not None:
                out[node.name] = value if tiny or op_kind(node) not in since else hot[j]
            break
    return out


def _mixed_floors(kinds: list[tuple[str, ...]], fixed_kinds: list[str | None], machine: MachineModel) -> list[float]:
    """For each working node, the least fixed cost it pays in an eager run: :meth:`MachineModel.mixed_s`
    of its kind when the node before it (cyclically: the graph runs again and again) is of another
    kind (other aten calls), else 0 (it follows itself, as in the hot loop). Seconds.

    Examples
    --------
    >>> m = MachineModel(overhead_mixed={"add": 2e-6, "relu": 3e-6})
    >>> _mixed_floors([("add",), ("add",), ("relu",)], ["add", "add", "relu"], m)  # the first add follows the relu
    [2e-06, 0.0, 3e-06]
    """
    count = len(kinds)
    return [
        (machine.mixed_s(fixed) or 0.0) if count > 1 and kinds[(j - 1) % count] != kind else 0.0
        for j, (kind, fixed) in enumerate(zip(kinds, fixed_kinds))
    ]


def _overhead(machine: MachineModel, gap_s: float, default_s: float, kind: str | None, after_s: float | None) -> float:
    """The node's fixed cost: :meth:`MachineModel.overhead_s` at ``gap_s``, or, for a node that runs
    after streaming GEMMs (``after_s`` not ``None``), at least its hot cost plus ``after_s``: both
    are the same kind of cost (code, data and threads gone cold), so the larger is kept, not the sum.

    Examples
    --------
    >>> m = MachineModel(overhead_curve=((1e-5, 5e-6), (1e-3, 5e-5)), overhead_by_kind={"add": 2e-6})
    >>> round(_overhead(m, 1e-3, 0.0, "add", 10e-6) * 1e6, 6)  # curve: 2 + 45 us; after: 2 + 10 us
    47.0
    >>> round(_overhead(m, 1e-5, 0.0, "add", 10e-6) * 1e6, 6)  # hot: 2 us; after: 2 + 10 us
    12.0
    """
    curve = machine.overhead_s(gap_s, default_s, kind)
    if after_s is None:
        return curve
    return max(curve, machine.overhead_s(0.0, default_s, kind) + after_s)


def _is_view(node: CostedNode, timing: NodeTiming) -> bool:
    """A view node (category ``view``) that the roofline gives no work."""
    return node.category.value == "view" and timing.bound is Bound.NONE


def _is_gemm(node: CostedNode) -> bool:
    """A linear or matmul with a weight operand (not a convolution, not attention)."""
    return node.category.value == "matmul" and gemm_dims(node) is not None and not is_convolution(node)


def _exposed_weight_s(node: CostedNode, costed: CostedGraph, machine: MachineModel) -> float:
    """Seconds a GEMM's weight read from DRAM adds to its compute: weight bytes x
    :meth:`MachineModel.exposed_s_per_weight_byte` at its rows; 0 for any other node."""
    if not _is_gemm(node):
        return 0.0
    rows = gemm_dims(node)[0]  # type: ignore[index]
    weight_bytes = working_set_bytes(node, costed.graph)[1]
    return weight_bytes * machine.exposed_s_per_weight_byte(rows)


_AFTER_WITHIN = 2  # a GEMM's aftermath reaches the two working nodes after it (docs/validation.md: the op chain)


def _after_gemm_streamed(
    order: list[CostedNode],
    moved: Mapping[str, int],
    within: int = _AFTER_WITHIN,
    streams: Callable[[CostedNode], bool] | None = None,
) -> dict[str, int]:
    """For each node of ``order``, the bytes ``moved`` by the closest GEMM among the ``within`` nodes
    before it (cyclically: the graph runs again and again), or 0 when none of them is a GEMM.

    A chain of ``[64, 4096]`` multiplies right after a 64 MiB GEMM took 88, 54, 24, 19, 17, 16 us
    against 19, 19, 19, 16, 16, 16 in a hot loop (``docs/validation.md``): the first two ops after
    the GEMM pay, whether or not their inputs are fresh, the third hardly. ``order`` holds the
    nodes that do work (views are not counted). ``streams`` says which nodes count as the GEMM
    (default :func:`_is_gemm`; the compiled prediction counts convolutions too).

    Examples
    --------
    >>> class N:  # stand-ins: a GEMM is a matmul with a weight, here by name
    ...     def __init__(self, name): self.name = name
    >>> import dfx.measure.cache_model as cm
    >>> real, cm._is_gemm = cm._is_gemm, lambda n: n.name.startswith("linear")
    >>> order = [N("linear"), N("relu"), N("add"), N("mul"), N("linear_1"), N("gelu")]
    >>> moved = {"linear": 100, "relu": 1, "add": 1, "mul": 1, "linear_1": 7, "gelu": 1}
    >>> cm._after_gemm_streamed(order, moved)  # gelu is first after linear_1; linear second after it, cyclically
    {'linear': 7, 'relu': 100, 'add': 100, 'mul': 0, 'linear_1': 0, 'gelu': 7}
    >>> cm._is_gemm = real
    """
    streams = streams or _is_gemm
    out: dict[str, int] = {}
    count = len(order)
    for j, node in enumerate(order):
        value = 0
        for back in range(1, min(within, count - 1) + 1):
            before = order[(j - back) % count]
            if streams(before):
                value = moved[before.name]
                break
        out[node.name] = value
    return out


def _after_gemm_s(
    costed: CostedGraph,
    order: list[CostedNode],
    traffic: Mapping[str, Mapping[MemoryLevel, int]],
    levels: tuple[MemoryLevel, ...],
    machine: MachineModel,
) -> dict[str, float]:
    """For each node that is not a GEMM or convolution and moves bytes at the closest cache,
    :meth:`MachineModel.after_gemm_s` of those bytes and of the bytes moved by a GEMM among the
    two nodes before it (:func:`_after_gemm_streamed`). A node whose working set is already
    charged to a farther cache pays nothing more (its bandwidth is that cache's). Empty without
    the table or the levels.
    """
    if not machine.after_gemm or not levels:
        return {}
    closest = levels[0]
    moved = {n.name: sum(traffic[n.name].values()) for n in order}
    streamed = _after_gemm_streamed(order, moved)
    out = {}
    for n in order:
        near = traffic[n.name].get(closest, 0)
        if near and not _is_gemm(n) and not is_convolution(n):
            out[n.name] = machine.after_gemm_s(near, streamed[n.name]) or 0.0
    return out


def _compute_s(node: CostedNode, timing: NodeTiming, machine: MachineModel, channels_last: bool = False) -> float:
    """Seconds of the node's FLOPs at the rate the machine model gives it (the profile's peak otherwise);
    a convolution's rate is the table's times :meth:`MachineModel.conv_factor_at` its implicit GEMM
    (``channels_last``: the channels-last points', as Inductor runs it on a CPU)."""
    rate = None
    category = node.category.value
    attention = attention_call(node) if category == "matmul" else None
    if attention is not None and timing.dtype == machine.gemm_dtype:
        rate = machine.attention_flop_per_s(*attention)
    if rate is None and category == "matmul" and timing.dtype == machine.gemm_dtype:
        dims = gemm_dims(node)
        if dims is None:  # no weight operand (bmm): the k = n = 512 column at the same FLOPs
            dims = (max(1.0, timing.flops / (2 * _SQUARE_K * _SQUARE_K)), _SQUARE_K, _SQUARE_K)
        rate = machine.gemm_flop_per_s(*dims)
        if rate is not None and is_convolution(node):
            factor = machine.conv_factor_at(*dims, channels_last=channels_last)
            rate *= factor if factor is not None else 1.0
        elif rate is not None and attention is None and has_bias(node):  # the table times mm; a bias costs more
            rate /= machine.bias_factor_at(*dims) or 1.0
        if rate is not None and timing.peak_flop_per_s:
            rate = min(rate, timing.peak_flop_per_s)
    elif category in ("elementwise", "normalization"):
        rate = machine.vector_rate(vector_family(node))
        if rate is None and category == "normalization":
            rate = machine.median_vector_rate()
    if rate:
        return timing.flops / rate
    return timing.compute_time_s


def _traffic(
    node: CostedNode,
    costed: CostedGraph,
    timing: NodeTiming,
    levels: tuple[MemoryLevel, ...],
    fallback: MemoryLevel,
    off: MemoryLevel,
    cold: bool,
) -> dict[MemoryLevel, int]:
    """Bytes per memory level: weights at DRAM when ``cold``, the rest where the working set fits."""
    activations, params = working_set_bytes(node, costed.graph)
    if not levels:
        return {fallback: timing.bytes}
    if not cold:
        return {_level_for(levels, activations + params, fallback): timing.bytes}
    weight_bytes = min(params, timing.bytes)
    traffic: dict[MemoryLevel, int] = {}
    for level, nbytes in (
        (off, weight_bytes),
        (_level_for(levels, activations, fallback), timing.bytes - weight_bytes),
    ):
        if nbytes:
            traffic[level] = traffic.get(level, 0) + nbytes
    return traffic or {fallback: 0}


def _reuse_gaps(kinds: list[tuple[str, ...]], totals: list[float]) -> list[float]:
    """For each node, the seconds from the end of the previous node of its kind to its start, cyclically.

    The graph runs again and again, so the first node of a kind follows the last one of the run
    before; a kind that occurs once waits for every other node of the run.

    Examples
    --------
    >>> _reuse_gaps([("a",), ("b",), ("a",)], [1.0, 2.0, 4.0])  # a ends the run before; b waits for a, a; a for b
    [0.0, 5.0, 2.0]
    """
    prefix = [0.0]
    for t in totals:
        prefix.append(prefix[-1] + t)
    run = prefix[-1]
    last = {kind: i for i, kind in enumerate(kinds)}  # the previous run's last node of each kind
    gaps = []
    for j, kind in enumerate(kinds):
        prev = last[kind]
        gaps.append(prefix[j] - prefix[prev + 1] if prev < j else run - prefix[prev + 1] + prefix[j])
        last[kind] = j
    return gaps


def _memory_s(traffic: Mapping[MemoryLevel, int]) -> float:
    """Seconds to move each level's bytes at that level's bandwidth, summed."""
    return sum(nbytes / lv.bandwidth_bytes_per_s for lv, nbytes in traffic.items())


def _retime(timing: NodeTiming, compute_s: float, traffic: Mapping[MemoryLevel, int], overhead_s: float) -> NodeTiming:
    memory_s = _memory_s(traffic)
    return replace(
        timing,
        time_s=max(compute_s, memory_s) + overhead_s,
        compute_time_s=compute_s,
        memory_time_s=memory_s,
        overhead_s=overhead_s,
        bound=Bound.COMPUTE if compute_s >= memory_s else Bound.MEMORY,
        bytes_by_level=MappingProxyType({lv.name: nbytes for lv, nbytes in traffic.items()}),
    )


_LIBRARY_KINDS = (
    "gemm",
    "attention",
)  # Inductor calls these from Python as ATen ops (extern_kernels.addmm, SDPA), as eager does


def _streams(node: CostedNode) -> bool:
    """A node whose run streams its operands through the caches as a GEMM does: a GEMM or a convolution.

    Timed alone, a generated batch-norm kernel on a ``[1, 64, 56, 56]`` channels-last tensor took
    37 us in a hot loop and 45 us right after a 1x1 convolution, an eager add on it 10 and 41 us
    (``docs/validation.md``, 2026-12-01 20:00): a convolution leaves the next op the aftermath a
    GEMM does, and :meth:`MachineModel.after_gemm_s` (measured after GEMMs) is read at its bytes.
    """
    return _is_gemm(node) or is_convolution(node)


def _channels_last_delta_s(
    order: list[CostedNode], base: Mapping[str, NodeTiming], machine: MachineModel
) -> dict[str, float]:
    """For each convolution of ``order``: its compute seconds channels-last minus NCHW (:func:`_compute_s`
    of its roofline timing in ``base``), seconds; empty without the channels-last table.

    Inductor runs every convolution channels-last on a CPU where oneDNN is available
    (``torch._inductor.graph.GraphLowering.decide_layout_opt``); eager torch runs them NCHW.
    """
    if not machine.conv_points_cl:
        return {}
    return {
        n.name: _compute_s(n, base[n.name], machine, channels_last=True) - _compute_s(n, base[n.name], machine)
        for n in order
        if is_convolution(n)
    }


_CHANNELS_LAST_FOLLOWERS = ("elementwise", "normalization", "view")  # take their input's layout in Inductor


def layout_copy_bytes(costed: CostedGraph) -> dict[str, int]:
    """The tensors Inductor converts between NCHW and channels-last on a CPU: node name -> bytes
    its kernel moves for the conversions, at the cost per byte of Inductor's copy kernel
    (:meth:`MachineModel.layout_copy_s_per_byte`); empty for a graph without convolutions.

    Inductor runs every convolution channels-last on a CPU (``decide_layout_opt``), and a
    pointwise or normalization node on a channels-last tensor writes channels-last; the graph's
    inputs arrive NCHW, and its outputs leave with eager torch's strides (``keep_output_stride``):

    - a convolution whose input is a graph input is charged twice that input's bytes: Inductor
      copies it into channels-last first (``cpp_fused_convolution_0``, a kernel dfx's program
      does not have, paired with the convolution's unit), reading and writing it;
    - a node that writes a graph output from a channels-last tensor (a convolution's output, or
      what a pointwise chain made of it) is charged that output's bytes once: its kernel reads
      the channels-last data across, the copy's read, and writes NCHW in its own pass (its write
      is the kernel's own, already charged). In the ResNet block's runs the last kernel took 90
      to 140 us more than dfx's plain kernel; a whole copy of its 3.2 MB is 230 to 260 us.

    Approximations: a graph input that reaches a convolution through other nodes is not
    counted (Inductor fuses its conversion into them); each 3x3 weight's conversion (Inductor
    copies it into channels-last on every run, 147 KB for a 64-channel 3x3) is left out.

    Examples
    --------
    A graph input of 4 x 8 x 8 floats (1,024 B) into a convolution whose relu output (4 x 8 x 8
    again) is the graph output: 1,024 B copied on the way in (2,048 B moved), read across on the way out.

    >>> import torch
    >>> from dfx.capture import capture
    >>> from dfx.costs import annotate
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1), torch.nn.ReLU())
    >>> g = annotate(capture(net, (torch.ones(1, 4, 8, 8),), method="export"))
    >>> sorted(layout_copy_bytes(g).items())
    [('conv2d', 2048), ('relu', 1024)]
    """
    cats = {n.name: n.category.value for n in costed.nodes}
    convs = {n.name for n in costed.nodes if is_convolution(n)}
    if not convs:
        return {}
    graph = costed.graph
    channels_last = set(convs)
    out: dict[str, int] = {}
    for node in graph.nodes:
        if node.name in convs and node.inputs:
            src = graph.node(node.inputs[0].src)
            if src.op == "placeholder" and src.input_kind not in _STATE_KINDS:
                out[node.name] = out.get(node.name, 0) + 2 * src.outputs[node.inputs[0].index].nbytes
        elif cats.get(node.name) in _CHANNELS_LAST_FOLLOWERS and any(e.src in channels_last for e in node.inputs):
            channels_last.add(node.name)
        elif node.op == "output":
            for e in node.inputs:
                if e.src in channels_last:
                    out[e.src] = out.get(e.src, 0) + graph.node(e.src).outputs[e.index].nbytes
    return out


def _library_overhead(node: CostedNode, eager_s: float, machine: MachineModel) -> float:
    """The fixed cost of a library call Inductor makes for ``node``, seconds: ``eager_s`` (its node's
    calibrated overhead, :func:`cache_timer`: its kind's hot-loop cost plus the curve's rise) with the
    hot-loop cost of the eager tiny linear replaced by the compiled call's own
    (:meth:`MachineModel.compiled_s` of ``addmm`` for a GEMM with a bias, else ``mm``) when both
    were measured; ``eager_s`` for anything else (attention, a convolution, an older calibration).

    The compiled call is dearer than the eager one: the wrapper allocates its output and views
    its operands (``reinterpret_tensor``) in Python around it (on the machine of
    ``docs/validation.md`` a tiny ``extern_kernels.addmm`` took 5.0 to 5.6 us where a tiny eager
    linear took 3.3 to 3.5).

    Examples
    --------
    >>> class Call:  # a stand-in aten call: an addmm, so a GEMM with a bias
    ...     packet, args, op = "aten.addmm", (), "aten.addmm.default"
    >>> class Node:
    ...     class node: aten_calls = (Call(),)
    ...     class category: value = "matmul"
    >>> m = MachineModel(overhead_by_kind={"linear": 3e-6}, compiled_overhead={"addmm": 5e-6})
    >>> import dfx.measure.cache_model as cm
    >>> real, cm._is_gemm = cm._is_gemm, lambda n: True
    >>> round(_library_overhead(Node(), 10e-6, m) * 1e6, 6)  # 10 us = 3 us hot + 7 us of the curve's rise; 5 + 7
    12.0
    >>> round(_library_overhead(Node(), 10e-6, MachineModel(overhead_by_kind={"linear": 3e-6})) * 1e6, 6)  # not measured
    10.0
    >>> cm._is_gemm = real
    """
    compiled = machine.compiled_s("addmm" if has_bias(node) else "mm")
    hot = machine.overhead_by_kind.get("linear")
    if compiled is None or hot is None or not _is_gemm(node):
        return eager_s
    return compiled + max(0.0, eager_s - hot)


def kernel_timer(costed: CostedGraph, profile: HardwareProfile, machine: MachineModel) -> Callable[[Any, Any], Any]:
    """A ``kernel_timer`` for :func:`dfx.roofline.evaluate` (compiled): a compiled kernel on a calibrated cache machine.

    The shared kernel time (:func:`dfx.roofline.program.kernel_timing`) charges a kernel's off-chip
    bytes at DRAM bandwidth and one ``op_overhead_s``. On a CPU running Inductor's code, a kernel's
    external tensors sit in the cache that holds them, as an eager node's do, and the fixed cost
    depends on what is called::

        compute  = the sum of its nodes' calibrated compute times (as the shared kernel time)
        bytes    = its off-chip bytes (external inputs, parameters, outputs that leave it): parameters
                   at DRAM bandwidth when the model is cold (see cache_timer), the rest at the level
                   holding them
        overhead = a library call (a GEMM, attention: ``extern_kernels.addmm``, SDPA, called from
                   Python as eager calls them): its node's calibrated overhead (kind, gap curve,
                   after-GEMM cost, as :func:`cache_timer`), a GEMM's with the tiny eager linear's
                   hot cost replaced by the compiled ``addmm`` (with a bias) or ``mm`` call's
                   (``compiled_overhead``, :func:`_library_overhead`);
                   a generated C++ kernel: ``compiled_overhead["generated"]``, a tiny generated
                   kernel timed in a compiled graph as ``dfx validate --compiled`` times one (a
                   calibration written before 2026-12-02: the cheapest tiny op's hot-loop time),
                   plus after_gemm(its bytes at the closest cache, the bytes of a GEMM or
                   convolution among the two nodes before any of its nodes), as :func:`cache_timer`;
                   the kernel of the program's first working node: plus the wrapper's entry
                   (:meth:`MachineModel.compiled_entry_s`)
        layout   = Inductor's layout conversions in a graph with convolutions (:func:`layout_copy_bytes`):
                   the bytes they move x :meth:`MachineModel.layout_copy_s_per_byte`; 0 without the table
        time     = max(compute, bytes / bandwidth) x (all cores / its cores) + overhead + layout

    A convolution's compute is at the channels-last points (``conv_points_cl``, Inductor's layout
    on a CPU) when the machine model has them.

    Times are seconds.
    """
    from dfx.roofline import evaluate

    levels = cache_levels(profile)
    fallback = home_level(profile)
    off = profile.off_chip_level() or fallback
    cold = machine.resident_bytes is not None and model_footprint_bytes(costed.graph) > machine.resident_bytes
    nodes = {n.name: n for n in costed.nodes}
    calibrated = {t.name: t for t in evaluate(costed, profile, node_timer=cache_timer(costed, profile, machine)).nodes}
    generated_s = machine.compiled_s("generated") or min(machine.work_overheads(), default=profile.op_overhead_s)
    order = [n for n in costed.nodes if calibrated[n.name].bound is not Bound.NONE]
    first = order[0].name if order else None
    moved = {n.name: calibrated[n.name].bytes for n in order}
    streamed = _after_gemm_streamed(order, moved, streams=_streams) if machine.after_gemm else {}
    conv_cl_s = _channels_last_delta_s(order, {t.name: t for t in evaluate(costed, profile).nodes}, machine)
    per_byte = machine.layout_copy_s_per_byte()
    converted = layout_copy_bytes(costed) if per_byte else {}

    def timed(kernel: Any, timing: Any) -> Any:
        if timing.bound is Bound.NONE or not levels:
            return timing
        params = min(
            sum(working_set_bytes(nodes[n], costed.graph)[1] for n in kernel.nodes if n in nodes), kernel.offchip_bytes
        )
        traffic: dict[MemoryLevel, int] = {}
        split = (
            (
                (off, params),
                (_level_for(levels, kernel.offchip_bytes - params, fallback), kernel.offchip_bytes - params),
            )
            if cold
            else ((_level_for(levels, kernel.offchip_bytes, fallback), kernel.offchip_bytes),)
        )
        for level, nbytes in split:
            if nbytes:
                traffic[level] = traffic.get(level, 0) + nbytes
        memory = _memory_s(traffic)
        if kernel.kind.value in _LIBRARY_KINDS:
            overhead = max(
                (
                    _library_overhead(nodes[n], calibrated[n].overhead_s, machine)
                    for n in kernel.nodes
                    if n in calibrated and calibrated[n].flops
                ),
                default=generated_s,
            )
        else:
            overhead = generated_s
            near = traffic.get(levels[0], 0)
            if near and streamed:  # the GEMM closest before any of its nodes
                far = max((streamed.get(n, 0) for n in kernel.nodes), default=0)
                overhead += machine.after_gemm_s(near, far) or 0.0
        share = core_total / kernel.cores if kernel.cores else 1.0
        compute = timing.compute_time_s + sum(conv_cl_s.get(n, 0.0) for n in kernel.nodes)
        layout = per_byte * sum(converted.get(n, 0) for n in kernel.nodes)
        if first is not None and first in kernel.nodes:  # the wrapper's entry runs in its first call's window
            overhead += machine.compiled_entry_s()
        return replace(
            timing,
            time_s=max(compute, memory) * share + overhead + layout,
            compute_time_s=compute,
            memory_time_s=memory + layout,
            overhead_s=overhead,
            bound=Bound.COMPUTE if compute >= memory else Bound.MEMORY,
        )

    from dfx.compile import core_count

    core_total = core_count(profile)
    return timed
