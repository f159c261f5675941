"""A node's time on one chip of a tensor- or expert-parallel group, from the machine's own model of its share.

Megatron-LM (Shoeybi et al. 2019, section 3) splits each transformer layer's matmuls so that one
all-reduce follows attention and one the MLP:

- **column-parallel** (``N / tp``): a linear whose input is the whole activation (replicated on
  every chip): the MLP's first GEMM ``Y = GeLU(XA)`` with ``A = [A_1, A_2]`` split along its
  columns, attention's query, key and value projections (split by heads), and the output
  embedding (the LM head, split along the vocabulary);
- **row-parallel** (``K / tp``): a linear whose input is already split: the MLP's second GEMM
  ``Z = YB`` with ``B`` split along its rows, attention's output projection; each chip's partial
  sums are all-reduced (charged by :mod:`dfx.parallel.place`);
- **heads** (``batch / tp``): a contraction reading no weight, attention's ``Q K^T`` and ``P V``
  (the batch holds ``B x H``; each chip runs its ``H / tp`` heads).

Which one a matmul node is comes from the graph's data flow (:func:`shard_roles`): a tensor is
*split* once a column-parallel or heads-split node has made it, and stays split through the
nodes after it (activations, rotary embeddings, softmax, views) until a row-parallel node sums
it back whole. A tensor made from parameters, buffers and constants alone is a *weight*.

The sharded node's time (:func:`sharded_s`) comes from the model that timed the one-chip result,
asked about the node's GEMMs at full and at sharded shape::

    sharded_s = time_s x T(sharded GEMMs) / T(full GEMMs)

- **GPU** (a profile with ``simt``) with a kernel-model result (``compiled``, or ``eager`` as the
  unfused program): the node's kernel is a GEMM with a Triton plan (:func:`dfx.arch.gpu.plan.plan_of_shape`:
  tiles, waves, split-K), and ``T`` is the kernel clock's time of that GEMM alone
  (:mod:`dfx.roofline.program`): ``max(max(compute, memory) x SMs / min(tiles, SMs) + launch, waves' time)``,
  with compute and memory divided by ``tp`` at the sharded shape. So wave quantisation and tile
  efficiency at ``N / tp`` (or ``K / tp``) are the machine's own: a node alone in its kernel
  takes exactly the sharded GEMM's time, and a node fused with an epilogue scales its share.
  A GPU attention kernel (no Triton plan: FlashAttention is not modelled by tiles) keeps the kernel
  clock's other half: placement gives it one SM per 128 x 128 block of its output
  (:func:`dfx.compile.placement.estimate_tiles`) and that share of the bandwidth, so over ``1 / tp``
  of its heads ``T = max(compute, memory) / tp x SMs / cores(output elements / tp) + launch``.
- **TPU** (the systolic architecture model): ``T = max(sum of its GEMMs on the MXUs, memory) + overhead``
  (:mod:`dfx.arch.systolic.tpu`), the sharded GEMMs re-planned on the arrays (padding to the
  array's side included) and the memory divided by ``tp``.
- **Elsewhere**, or where the model has no shape to re-plan (a per-operator result timed under a
  ``runtime``, a node whose split dimension is 1): the roofline's share, ``max(compute, memory) / tp
  + overhead``.

The memory is the node's compiled kernel's (its off-chip bytes at HBM bandwidth, as the kernel
clock charges it) where the result has a program, else the node's own. NB: a TPU node's own
``memory_time_s`` is the node-level scratchpad model's, tensors read from on chip: the share
``max(compute, memory) / tp`` read it and made a decode GEMM whose weights stream from HBM (110 us
on a TPU v5e) 7.5 times faster at ``tp = 4`` (14.7 us, below the 27.6 us its quarter of the weights
takes).

Expert parallelism (GShard) does not change an expert's shape: each chip runs ``1 / ep`` of the
expert nodes whole, so an expert node's time (after its tensor-parallel split) is divided by
``ep``, its launch cost included.

NB: a split dimension that ``tp`` does not divide takes its largest share, ``ceil(dim / tp)`` (the
slowest chip sets the pace). Elementwise nodes on split tensors are still charged whole (replicated).
On a GPU a share with few tiles keeps ``tiles / SMs`` of the HBM bandwidth, as the kernel clock
gives any kernel (its stated pessimism for a lone kernel with few tiles): a decode step's attention
products over ``1 / tp`` of the KV heads then take about as long as over all of them (Llama-2-70B at
tp = 8: 16 tiles, 2.9 us either way), where a flash-decoding kernel would split the KV sequence over
the idle SMs.
"""

from __future__ import annotations

import math
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable, Mapping

from dfx.costs.record import Category, CostedGraph

__all__ = ["Role", "shard_roles", "sharded_s", "shard_timer"]


class Role(str, Enum):
    """How Megatron-LM splits a matmul node over ``tp`` chips (module docstring)."""

    COLUMN = "column"  # N / tp: input whole, weight split by its output features
    ROW = "row"  # K / tp: input split, weight split by its input features, partial sums all-reduced
    HEADS = "heads"  # batch / tp: no weight, the batch's heads split


_WEIGHT, _WHOLE, _SPLIT = 0, 1, 2  # what a node's output is on each chip
_CONSTANT_INPUTS = frozenset({"parameter", "buffer", "constant"})


def shard_roles(costed: CostedGraph) -> Mapping[str, Role]:
    """Each matmul node's :class:`Role`, read from the graph's data flow (module docstring).

    >>> from dfx.costs.record import CostedGraph
    >>> dict(shard_roles(CostedGraph(graph=None, nodes=())))
    {}
    """
    state: dict[str, int] = {}
    roles: dict[str, Role] = {}
    for cn in costed.nodes:
        node = cn.node
        if node.op == "get_attr" or (node.op == "placeholder" and node.input_kind in _CONSTANT_INPUTS):
            state[node.name] = _WEIGHT
            continue
        seen = [state.get(e.src, _WHOLE) for e in node.inputs]
        split = _SPLIT in seen
        if cn.category is Category.MATMUL:
            weight = bool(node.params) or _WEIGHT in seen
            role = (Role.ROW if split else Role.COLUMN) if weight else Role.HEADS
            roles[node.name] = role
            state[node.name] = _WHOLE if role is Role.ROW else _SPLIT
        elif split:
            state[node.name] = _SPLIT
        else:
            state[node.name] = _WEIGHT if seen and not node.params and all(s == _WEIGHT for s in seen) else _WHOLE
    return MappingProxyType(roles)


def _shard(m: int, k: int, n: int, batch: int, role: Role, tp: int) -> tuple[int, int, int, int] | None:
    """``(m, k, n, batch)`` with the dimension ``role`` splits divided by ``tp`` (its largest share);
    ``None`` where that dimension is 1 (nothing to split)."""
    if role is Role.COLUMN:
        return (m, k, math.ceil(n / tp), batch) if n > 1 else None
    if role is Role.ROW:
        return (m, math.ceil(k / tp), n, batch) if k > 1 else None
    return (m, k, n, math.ceil(batch / tp)) if batch > 1 else None


def _roofline_s(timing: Any, tp: int) -> float:
    """The share without a per-shape model: the node's compute and memory time over ``tp``, its fixed cost whole."""
    return max(timing.compute_time_s, timing.memory_time_s) / tp + timing.overhead_s


# -- the machines' models of a node's GEMMs -----------------------------------------------------------
def _kernel_memory_s(result: Any) -> dict[str, float]:
    """Node -> the memory time of the compiled kernel it runs in (its off-chip bytes at the kernel clock's
    bandwidth, :mod:`dfx.roofline.program`); empty without a program. A node's own ``memory_time_s`` is
    its node-level model's, which on a scratchpad machine (a TPU) reads its tensors from on chip."""
    program = result.program
    if program is None:
        return {}
    return {n: kt.memory_time_s for kt in program.kernels for n in kt.nodes}


def _gpu_model(result: Any, costed: CostedGraph) -> Callable[[Any, Any, Role, int], float | None] | None:
    """The GPU tile model's time of a node's GEMM at full and sharded shape, as a scale factor; ``None``
    where the result was not timed on the kernel model (no program: per-operator, under a runtime)."""
    program = result.program
    if result.profile.simt is None or program is None:
        return None
    from dfx.arch.gpu.plan import kernel_shape, plan_of_shape, profile_plans
    from dfx.compile import KernelKind, core_count
    from dfx.compile.placement import GEMM_TILE_ELEMS

    profile, memory = result.profile, _kernel_memory_s(result)
    cache, sms = profile_plans(profile), core_count(profile)
    tiled = {}  # node -> the GEMM kernel with a Triton plan it belongs to
    untiled = {}  # node -> the attention kernel placement gave cores by its output elements
    for k in program.program.kernels:
        if k.kind is KernelKind.GEMM and k.tile_time_s is not None:
            for n in k.nodes:
                tiled[n] = k
        elif k.kind is KernelKind.ATTENTION and not k.tile_shape and k.cores:
            for n in k.nodes:
                untiled[n] = k

    def attention_scale(kernel: Any, cn: Any, timing: Any, tp: int) -> float | None:
        """An attention kernel over ``1 / tp`` of its heads: its output elements over ``tp`` in 128 x 128
        tiles set its cores (:func:`dfx.compile.placement.estimate_tiles`), each with its share of HBM."""
        elems = sum(spec.numel for spec in costed[kernel.nodes[-1]].node.outputs) or 1
        cores = min(max(1, math.ceil(elems / tp / GEMM_TILE_ELEMS)), sms)
        c, m, o = timing.compute_time_s, memory.get(cn.name, timing.memory_time_s), timing.overhead_s
        before = max(c, m) * sms / kernel.cores + o
        return (max(c, m) / tp * sms / cores + o) / before if before > 0 else None

    def seconds(dims: tuple, dtype: str | None, compute_s: float, memory_s: float, overhead_s: float) -> float:
        plan = plan_of_shape(("gemm", dims), 0, 0, dtype, profile, cache)
        cores = max(1, min(plan.tiles, sms))
        # the plan's time holds the profile's op_overhead_s; a runtime's fixed cost replaces it (roofline.program)
        return max(
            max(compute_s, memory_s) * sms / cores + overhead_s, plan.time_s - profile.op_overhead_s + overhead_s
        )

    def scale(cn: Any, timing: Any, role: Role, tp: int) -> float | None:
        kernel = tiled.get(cn.name)
        if kernel is None:
            attention = untiled.get(cn.name)
            return attention_scale(attention, cn, timing, tp) if attention is not None and role is Role.HEADS else None
        shape = kernel_shape("gemm", [cn])
        if shape is None:
            return None
        full = shape[1]
        parts = tuple(_shard(m, k, n, b, role, tp) for m, k, n, b, _ in full)
        if any(p is None for p in parts):
            return None
        split = tuple((*p, g[4]) for p, g in zip(parts, full))
        c, m, o = timing.compute_time_s, memory.get(cn.name, timing.memory_time_s), timing.overhead_s
        before = seconds(full, kernel.dtype, c, m, o)
        return seconds(split, kernel.dtype, c / tp, m / tp, o) / before if before > 0 else None

    return scale


def _tpu_model(result: Any) -> Callable[[Any, Any, Role, int], float | None] | None:
    """The systolic model's time of a node's GEMMs at full and sharded shape, as a scale factor; ``None``
    where the result was not timed by it."""
    if result.arch_model != "systolic":
        return None
    from dfx.arch.systolic.chip import mxu_spec
    from dfx.arch.systolic.nodes import Gemm, node_gemms
    from dfx.arch.systolic.tpu import gemm_time_s

    spec = mxu_spec(result.profile)
    if spec is None:
        return None
    memory = _kernel_memory_s(result)

    def scale(cn: Any, timing: Any, role: Role, tp: int) -> float | None:
        gemms = node_gemms(cn.node.aten_calls)
        parts = [_shard(g.m, g.k, g.n, g.batch, role, tp) for g in gemms]
        if not gemms or any(p is None for p in parts):
            return None
        m, o = memory.get(cn.name, timing.memory_time_s), timing.overhead_s
        before = max(sum(gemm_time_s(g, spec) for g in gemms), m) + o
        after = max(sum(gemm_time_s(Gemm(*p), spec) for p in parts), m / tp) + o
        return after / before if before > 0 else None

    return scale


def shard_timer(result: Any, costed: CostedGraph, tp: int, ep: int) -> Callable[[Any, Any, bool], float]:
    """``time(costed_node, timing, experts) -> seconds``: :func:`sharded_s` of each node of ``result``
    (one chip's :class:`~dfx.roofline.HardwareResult` of ``costed``) over ``tp`` x ``ep`` chips, the
    model asked once per result."""
    from dfx.roofline.per_graph import per_graph

    roles = per_graph(costed, shard_roles) if tp > 1 else {}  # a sweep places one graph on split after split
    model = (_gpu_model(result, costed) or _tpu_model(result)) if tp > 1 else None

    def time(cn: Any, timing: Any, experts: bool) -> float:
        return sharded_s(timing, cn, roles.get(cn.name), tp, ep if experts else 1, model)

    return time


def sharded_s(
    timing: Any,
    cn: Any,
    role: Role | None,
    tp: int,
    ep: int,
    model: Callable[[Any, Any, Role, int], float | None] | None = None,
) -> float:
    """One node's time on one chip of ``tp`` x ``ep`` (module docstring).

    Parameters
    ----------
    timing : NodeTiming
        The node's one-chip timing (``time_s``, ``compute_time_s``, ``memory_time_s``, ``overhead_s``; s).
    cn : CostedNode
        The node.
    role : Role or None
        Its split under tensor parallelism; ``None``: not a matmul (replicated: its time whole).
    tp, ep : int
        Tensor-parallel chips, and expert-parallel chips (1 for a node outside the experts).
    model : callable, optional
        ``model(cn, timing, role, tp)``: the machine's time of the node's GEMMs at the sharded shape
        over its time at full shape, or ``None`` where it has no shape to re-plan; without a model or
        a ratio, the roofline's share.

    Returns
    -------
    float
        Seconds; ``timing.time_s`` itself where ``tp = ep = 1`` or the node does no work.
    """
    if timing.time_s == 0.0 or (tp == 1 and ep == 1) or (role is None and ep == 1):
        return timing.time_s
    if role is None or tp == 1:
        time_s = timing.time_s
    else:
        scale = model(cn, timing, role, tp) if model is not None else None
        time_s = timing.time_s * scale if scale is not None else _roofline_s(timing, tp)
    return time_s / ep if ep > 1 else time_s
