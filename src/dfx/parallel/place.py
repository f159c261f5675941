"""Place a model over several chips: per-chip work, collectives, a per-chip timeline, the latency.

Composed at the result level (NB: not yet as COLLECTIVE kernels in the compiled program): a
:class:`~dfx.roofline.HardwareResult` for the whole graph on one chip is split by the plan.

**GPUs, TPUs** (weights in off-chip memory). Layers are the nodes under ``layers.N`` (``h.N``,
``layer.N``, ``blocks.N``); nodes before the first layer join stage 0, nodes after the last join
the last stage; a model with no such nodes (one block: ``gpt2-block``, ``mlp``) is one layer. With
tensor parallelism each matmul node (linears, attention, the LM head) runs its Megatron-LM share on
each chip (Shoeybi et al. 2019, section 3): a linear on the whole activation ``N / tp`` of its
columns, one on a split activation ``K / tp`` of its rows, attention's products ``1 / tp`` of their
heads; norms, residual adds and other elementwise nodes are replicated (NB: the LM head's
all-gather of logits is not charged). A share is timed by the machine's own model of its shape
where one exists (:mod:`dfx.parallel.shard`: the GPU's tile waves, the TPU's MXU folds), else as
the roofline's ``1/tp``::

    node_s    = time_s x T(sharded GEMMs) / T(full GEMMs)               # matmul nodes, GPU and TPU
              = max(compute_s / tp, memory_s / tp) + overhead_s        # matmul nodes elsewhere
    layer_s   = sum(node_s) + 2 * all_reduce(layer output bytes, tp)   # Megatron: 2 per layer, forward
    stage_s   = sum(layer_s of its layers)        # pp stages, consecutive layers, as equal as they come
    latency_s = sum(stage_s) + (pp - 1) * send_recv(layer output bytes)

Expert parallelism: each chip holds ``E / ep`` of a layer's experts and runs the nodes under
``experts`` on the slots routed to them, and each MoE layer pays two all-to-alls over ``ep`` chips
(GShard, Lepikhin et al. 2020, arXiv 2006.16668, section 3.2: dispatch tokens to their experts'
chips, combine the results back). For a grouped-GEMM layer (:func:`dfx.costs.moe.find_moe_layers`)
the all-to-alls move the routed activations, and the busiest chip sets the pace::

    dispatch  = all_to_all(T*k*D bytes: the experts' input rows [T*k, D], ep)
    combine   = all_to_all(T*k*D bytes: the experts' output rows [T*k, D], ep)
    experts_s = (expert nodes' time / ep) x ep * max_chip share of the T*k slots  (1 under uniform routing)

with chip c holding experts ``c*E/ep .. (c+1)*E/ep - 1`` and the shares from the request's routing
(``costed.meta["moe"]``; zipf puts the busiest experts on chip 0). ``all_to_all`` sends ``(ep-1)/ep``
of the bytes from each chip (:mod:`dfx.parallel.collectives`). An MoE written as a per-expert loop
(no grouped GEMM) keeps two all-to-alls of the layer's output and the plain ``1/ep`` share.
One request passes the stages in turn (no micro-batching), which is what a decode
step's time per output token is.

**Data parallelism** (a training step, ``plan.dp > 1``): one replica's step as above (or one
chip's), plus the gradient collectives of :mod:`dfx.parallel.data` where the compute does not hide
them, less FSDP's sharded optimizer step.

**Groq** (weights on chip; the TSP model already places nodes on chips in graph order): the
latency is the compile-time schedule's makespan (:mod:`dfx.arch.spatial.groq_schedule`), which
charges every chip-to-chip crossing where the data is needed.

**Cerebras** (weights on chip): the wafer mapping spreads stages over wafers
(:func:`dfx.arch.spatial.wafer.map_layers`); the latency is one sample through every stage, plus
one send/recv over the systems' links between consecutive wafers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from dfx.costs.record import Category, CostedGraph
from dfx.errors import DfxError
from dfx.frozen import copy_with
from dfx.parallel.collectives import Collective, collective_s, interconnect_of
from dfx.parallel.plan import ParallelPlan, layer_of, recomputed
from dfx.parallel.shard import shard_timer

__all__ = ["ParallelResult", "Span", "layer_of", "place"]

_EXPERTS = re.compile(r"(?:^|\.)experts(?:\.|$)")
_TP_ALL_REDUCES_PER_LAYER = 2  # Megatron-LM: after attention's output projection and after the MLP
_EP_ALL_TO_ALLS_PER_LAYER = 2  # GShard: dispatch tokens to their experts, and combine them back


@dataclass(frozen=True)
class Span:
    """One interval of a chip group's timeline."""

    chips: tuple[int, int]  # first and last chip of the group doing it
    kind: str  # "compute" or "communication"
    name: str
    start_s: float
    end_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "chips": list(self.chips),
            "kind": self.kind,
            "name": self.name,
            "start_s": self.start_s,
            "end_s": self.end_s,
        }


@dataclass(frozen=True)
class ParallelResult:
    """A model over ``plan.chips`` chips: the latency and the per-chip timeline."""

    plan: ParallelPlan
    latency_s: float
    compute_s: float  # summed over the timeline's compute spans
    communication_s: float
    timeline: tuple[Span, ...]
    model: str  # how the split was timed
    data_parallel: Any = None  # a training step's DataParallelStep (dfx.parallel.data), dp > 1 only
    memory: Any = None  # a training step's TrainingMemory per chip (dfx.parallel.plan)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "plan": self.plan.to_dict(),
            "model": self.model,
            "latency_s": self.latency_s,
            "compute_s": self.compute_s,
            "communication_s": self.communication_s,
            "timeline": [s.to_dict() for s in self.timeline],
        }
        if self.data_parallel is not None:
            out["data_parallel"] = self.data_parallel.to_dict()
        if self.memory is not None:
            out["memory"] = self.memory.to_dict()
        return out


def _result(plan: ParallelPlan, spans: list[Span], latency: float, model: str) -> ParallelResult:
    compute = sum(s.end_s - s.start_s for s in spans if s.kind == "compute")
    comm = sum(s.end_s - s.start_s for s in spans if s.kind == "communication")
    return ParallelResult(plan, latency, compute, comm, tuple(spans), model)


# -- GPUs and TPUs: tensor, pipeline and expert parallelism ------------------------------------------
def _layer_groups(costed: CostedGraph) -> tuple[list[int], dict[int, float], set[int], dict[int, bool]]:
    """Per node its layer (``first - 1`` before the first, ``last + 1`` after); per layer its output
    bytes (the last working node's output), the real layers, and whether a layer has experts."""
    raw = [layer_of(cn.node.module_path) for cn in costed.nodes]
    if all(r is None for r in raw):  # one block (gpt2-block, mlp) with no layers.N: the model is one layer
        raw = [0] * len(raw)
    seen = [r for r in raw if r is not None]
    first, last = (min(seen), max(seen)) if seen else (0, -1)
    layers, current = [], None
    for r in raw:
        current = r if r is not None else current
        layers.append(r if r is not None else (first - 1 if current is None else last + 1))
    out_bytes: dict[int, float] = {}
    moe: dict[int, bool] = {}
    for cn, layer in zip(costed.nodes, layers):
        if cn.cost.flops or cn.cost.bytes:
            out_bytes[layer] = sum(o.nbytes for o in cn.node.outputs)  # the last working node's output
        moe[layer] = moe.get(layer, False) or bool(_EXPERTS.search(cn.node.module_path or ""))
    return layers, out_bytes, set(seen), moe


@dataclass(frozen=True)
class _EpLayer:
    """A grouped-GEMM MoE layer under expert parallelism: its all-to-all bytes and load imbalance."""

    dispatch_bytes: float  # the experts' input rows [T*k, D]
    combine_bytes: float  # the experts' output rows [T*k, D]
    imbalance: float  # ep x the busiest chip's share of the routed slots (1.0: balanced)


def _ep_layers(costed: CostedGraph, ep: int) -> dict[int, _EpLayer]:
    """Per layer index, its grouped-GEMM MoE layer under ``ep`` chips (module docstring).

    Raises
    ------
    DfxError
        If ``ep`` does not divide a layer's experts.
    """
    from dfx.costs.moe import UNIFORM, find_moe_layers

    if ep <= 1:
        return {}
    routing = costed.meta["moe"]["routing"] if "moe" in costed.meta else UNIFORM
    graph = costed.graph
    out: dict[int, _EpLayer] = {}
    for layer in find_moe_layers(graph):
        index = layer_of(layer.module_path)
        if index is None:
            index = 0
        if layer.num_experts % ep:
            valid = ", ".join(str(d) for d in range(1, layer.num_experts + 1) if layer.num_experts % d == 0)
            raise DfxError(f"ep={ep} does not divide the model's {layer.num_experts} experts; use ep in {valid}")
        first, last = graph.node(layer.experts[0]), graph.node(layer.experts[-1])
        call = next(c for c in first.aten_calls if c.inputs)
        counts = routing.expert_counts(layer.num_experts, layer.routed_slots)
        per_chip = layer.num_experts // ep
        busiest = max(sum(counts[c * per_chip : (c + 1) * per_chip]) for c in range(ep))
        out[index] = _EpLayer(
            call.inputs[0].nbytes,
            sum(o.nbytes for o in last.outputs),
            ep * busiest / layer.routed_slots if layer.routed_slots else 1.0,
        )
    return out


def _split_layers(ordered: list[int], pp: int, plan: ParallelPlan | None = None) -> list[list[int]]:
    """``pp`` runs of consecutive layers, sizes differing by at most one.

    Raises
    ------
    DfxError
        If ``pp`` exceeds the layer groups, naming what chose ``pp`` (``plan.source``): the user's
        ``--parallel``, their ``--chips``, or the fewest chips the model fits on (weights, activations
        and KV cache, as ``dfx capacity`` counts them).
    """
    if pp > len(ordered):
        layers = len(ordered)
        source = plan.source if plan is not None else "--parallel"
        if source == "--chips":
            raise DfxError(
                f"--chips {plan.chips} splits as tp {plan.tp} x pp {pp}, but the model has {layers} layer group(s) "
                f"to pipeline; use --chips <= {plan.tp * layers}, or --parallel tp=N,pp=M"
            )
        if source.startswith("fewest"):
            raise DfxError(
                f"the model needs {plan.chips} chips to fit ({source}), split as tp {plan.tp} x pp {pp}, but it "
                f"has {layers} layer group(s) to pipeline; give --parallel tp=N with more chips per layer, or a "
                "profile with more memory per chip"
            )
        raise DfxError(f"pp={pp} stages but the model has {layers} layer groups; use pp <= {layers}")
    base, extra = divmod(len(ordered), pp)
    out, i = [], 0
    for s in range(pp):
        n = base + (1 if s < extra else 0)
        out.append(ordered[i : i + n])
        i += n
    return out


def _tp_limit(costed: CostedGraph) -> tuple[int, str] | None:
    """The most chips tensor parallelism can split this graph over, and what bounds it.

    Megatron-LM (Shoeybi et al. 2019, section 3) splits attention by heads and each MLP's matmuls
    by their features: with attention, the fewest heads of any attention node (its output is
    ``[B, H, S, D]``); without, the widest matmul output's last dimension. ``None`` when the graph
    has neither (no split to bound).

    >>> from dfx.costs.record import CostedGraph
    >>> _tp_limit(CostedGraph(graph=None, nodes=())) is None
    True
    """
    heads = _query_heads(costed)
    if heads is not None:
        return heads, "attention heads"
    widths = [
        cn.node.outputs[0].shape[-1]
        for cn in costed.nodes
        if cn.category is Category.MATMUL
        and cn.node.outputs
        and cn.node.outputs[0].shape
        and isinstance(cn.node.outputs[0].shape[-1], int)
    ]
    return (max(widths), "output features in its widest matmul") if widths else None


_VIEWS = ("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default")
_ATTENTION = re.compile(r"attn|attention", re.IGNORECASE)
_FFN = re.compile(r"(?:^|\.)(?:mlp|ffn|feed_forward|intermediate)(?:\.|$)")


def _query_heads(costed: CostedGraph) -> int | None:
    """The fewest query heads of any attention in the graph, ``None`` when it shows none.

    An SDPA node's output is ``[B, H, S, D]`` (``H`` the query heads); an attention written out as
    matmuls (dfx's decode step, GQA's grouped products) shows its heads where a linear's output
    ``[..., H * D]`` is viewed as ``[B, S, H, D]`` inside an attention module: the widest such ``H``
    of a module is its query heads (the k and v views have the KV heads).
    """
    sdpa = [
        cn.node.outputs[0].shape[-3]
        for cn in costed.nodes
        if "scaled_dot_product" in cn.node.target and cn.node.outputs and len(cn.node.outputs[0].shape) == 4
    ]
    sdpa = [h for h in sdpa if isinstance(h, int)]
    if sdpa:
        return min(sdpa)
    width = {
        cn.node.name: cn.node.outputs[0].shape[-1]
        for cn in costed.nodes
        if cn.category is Category.MATMUL and cn.node.outputs and cn.node.outputs[0].shape
    }
    per_module: dict[str, int] = {}
    for cn in costed.nodes:
        n = cn.node
        if n.target not in _VIEWS or not n.inputs or not _ATTENTION.search(n.module_path or ""):
            continue
        shape = n.outputs[0].shape if n.outputs else ()
        src = width.get(n.inputs[0].src)
        if len(shape) == 4 and all(isinstance(d, int) for d in shape[-2:]) and src == shape[-2] * shape[-1]:
            per_module[n.module_path] = max(per_module.get(n.module_path, 0), shape[-2])
    return min(per_module.values()) if per_module else None


def _ffn_width(costed: CostedGraph) -> int | None:
    """The widest output of a linear under an MLP module (``mlp``, ``ffn``, ``feed_forward``,
    ``intermediate``): the FFN's inner width that Megatron-LM splits; ``None`` when there is none."""
    widths = [
        cn.node.outputs[0].shape[-1]
        for cn in costed.nodes
        if cn.category is Category.MATMUL
        and _FFN.search(cn.node.module_path or "")
        and cn.node.outputs
        and cn.node.outputs[0].shape
        and isinstance(cn.node.outputs[0].shape[-1], int)
    ]
    return max(widths) if widths else None


def check_tp_divides(costed: CostedGraph, tp: int) -> None:
    """Refuse a ``tp`` that does not split the model's heads and FFN width evenly.

    Megatron-LM (Shoeybi et al. 2019, section 3) gives each chip ``heads / tp`` query heads and
    ``ffn / tp`` of the FFN's inner features, so ``tp`` must divide both (KV heads fewer than
    ``tp`` are replicated, as vLLM and Megatron do for GQA, so they do not bound it).

    Raises
    ------
    DfxError
        One line naming ``tp`` and the valid values (the divisors of ``gcd(heads, ffn)``).
    """
    heads, ffn = _query_heads(costed), _ffn_width(costed)
    if tp <= 1 or (heads is None and ffn is None):
        return
    both = math.gcd(heads or 0, ffn or 0)
    valid = ", ".join(str(d) for d in range(1, both + 1) if both % d == 0)
    if heads is not None and heads % tp:
        what = f"the model's {heads} attention heads"
    elif ffn is not None and ffn % tp:
        what = f"the model's FFN width of {ffn}"
    else:
        return
    raise DfxError(f"tp={tp} does not divide {what}; use tp in {valid}")


def check_tp(costed: CostedGraph, plan: ParallelPlan) -> None:
    """Refuse a ``plan.tp`` above the model's heads (:func:`_tp_limit`), and one the user asked for
    (``--parallel``) that does not split its heads and FFN width evenly (:func:`check_tp_divides`).

    Raises
    ------
    DfxError
        One line naming ``tp`` and the values to use.
    """
    limit = _tp_limit(costed) if plan.tp > 1 else None
    if limit is not None and plan.tp > limit[0]:
        raise DfxError(
            f"tp={plan.tp}: the model has {limit[0]} {limit[1]}, which tensor parallelism splits "
            f"over the chips; use tp <= {limit[0]}"
            + (
                ""
                if plan.source == "--parallel"
                else f" (this split came from {plan.source}; choose one with --parallel)"
            )
        )
    if plan.tp > 1 and plan.source == "--parallel":
        check_tp_divides(costed, plan.tp)


def _tensor_pipeline(result, costed: CostedGraph, plan: ParallelPlan) -> ParallelResult:
    check_tp(costed, plan)
    link = interconnect_of(result.profile)
    layers, out_bytes, real, moe = _layer_groups(costed)
    per_layer: dict[int, float] = {}
    # a training step under full activation recomputation (dfx.training.recompute) runs each layer's
    # forward nodes twice: once in the forward, again in the backward
    again = set(recomputed(result).nodes) if "recompute" in result.extras else set()
    sharded_s = shard_timer(result, costed, plan.tp, plan.ep)
    ep_layers = _ep_layers(costed, plan.ep)
    for cn, timing, layer in zip(costed.nodes, result.nodes, layers):
        experts = bool(_EXPERTS.search(cn.node.module_path or ""))
        node_s = sharded_s(cn, timing, experts)
        if experts and layer in ep_layers:
            node_s *= ep_layers[layer].imbalance  # the busiest chip's experts set the pace
        per_layer[layer] = per_layer.get(layer, 0.0) + (2 * node_s if cn.node.name in again else node_s)
    ordered = sorted(per_layer)
    stages = _split_layers(ordered, plan.pp, plan)
    spans: list[Span] = []
    t = 0.0
    for s, group in enumerate(stages):
        chips = (s * plan.tp * plan.ep, (s + 1) * plan.tp * plan.ep - 1)
        for layer in group:
            name = (
                f"layer {layer}"
                if layer in real
                else ("before the layers" if layer == ordered[0] else "after the layers")
            )
            if per_layer[layer] > 0 or layer in real:
                spans.append(Span(chips, "compute", name, t, t + per_layer[layer]))
            t += per_layer[layer]
            if plan.tp > 1 and layer in real:
                ar = _TP_ALL_REDUCES_PER_LAYER * collective_s(link, Collective.ALL_REDUCE, out_bytes[layer], plan.tp)
                spans.append(
                    Span(
                        chips, "communication", f"tp all-reduce x{_TP_ALL_REDUCES_PER_LAYER}, layer {layer}", t, t + ar
                    )
                )
                t += ar
            if plan.ep > 1 and layer in ep_layers:
                e = ep_layers[layer]
                a2a = collective_s(link, Collective.ALL_TO_ALL, e.dispatch_bytes, plan.ep) + collective_s(
                    link, Collective.ALL_TO_ALL, e.combine_bytes, plan.ep
                )
                spans.append(
                    Span(chips, "communication", f"ep all-to-all dispatch + combine, layer {layer}", t, t + a2a)
                )
                t += a2a
            elif plan.ep > 1 and moe.get(layer):
                a2a = _EP_ALL_TO_ALLS_PER_LAYER * collective_s(link, Collective.ALL_TO_ALL, out_bytes[layer], plan.ep)
                spans.append(Span(chips, "communication", f"ep all-to-all x2, layer {layer}", t, t + a2a))
                t += a2a
        if s < len(stages) - 1:
            hop = collective_s(link, Collective.SEND_RECV, out_bytes.get(group[-1], 0.0), 2)
            spans.append(Span(chips, "communication", f"pp send to stage {s + 1}", t, t + hop))
            t += hop
    return _result(plan, spans, t, "tensor/pipeline/expert split of the single-chip node times")


# -- weights on chip: the architecture models place the layers --------------------------------------
def _groq(result, plan: ParallelPlan) -> ParallelResult:
    schedule = result.extras["schedule"]
    clock = schedule["clock_hz"]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for node in schedule["nodes"].values():
        if node["end_cycle"] > node["start_cycle"]:
            c = node["chip"]
            first[c] = min(first.get(c, node["start_cycle"]), node["start_cycle"])
            last[c] = max(last.get(c, node["end_cycle"]), node["end_cycle"])
    spans: list[Span] = []
    prev_end = None
    for c in sorted(first):
        if prev_end is not None and first[c] > prev_end:
            spans.append(Span((c, c), "communication", f"C2C into chip {c}", prev_end / clock, first[c] / clock))
        spans.append(Span((c, c), "compute", f"chip {c}", first[c] / clock, last[c] / clock))
        prev_end = last[c]
    chips = schedule["chips"]
    used = ParallelPlan(
        pp=chips,
        source=f"{plan.source}; the TSP model needs {chips} chips (weights in SRAM, graph order)" + _asked(plan, chips),
    )
    return _result(used, spans, schedule["makespan_s"], "Groq compile-time schedule over the chips (groq_schedule)")


def _wafers(result, costed: CostedGraph, plan: ParallelPlan) -> ParallelResult:
    from dfx.arch.spatial.wafer import map_graph

    mapping = map_graph(costed, result.profile)
    # NB: one row through every stage (latency_s(1)), not the streamed latency_s(rows): a stage's
    # work charges its weight reads once per sample, so dividing it by the rows made a bigger batch
    # faster than a smaller one. Streaming needs per-row work (a weight read per row) first.
    by_wafer: dict[int, list] = {}
    for stage in mapping.stages:
        by_wafer.setdefault(stage.wafer, []).append(stage)
    total = mapping.latency_s(1)
    stage_sum = sum(s.time_s for s in mapping.stages) or 1.0
    hop = 0.0
    if mapping.wafers > 1:  # only then do the systems' links matter
        hop = collective_s(interconnect_of(result.profile), Collective.SEND_RECV, _boundary_bytes(costed), 2)
    spans: list[Span] = []
    t = 0.0
    for w in sorted(by_wafer):
        share = total * sum(s.time_s for s in by_wafer[w]) / stage_sum  # its part of the pipeline's latency
        spans.append(Span((w, w), "compute", f"wafer {w}: {len(by_wafer[w])} stages", t, t + share))
        t += share
        if w < mapping.wafers - 1:
            spans.append(Span((w, w + 1), "communication", f"send to wafer {w + 1}", t, t + hop))
            t += hop
    used = ParallelPlan(
        pp=mapping.wafers,
        source=f"{plan.source}; the wafer mapping needs {mapping.wafers} wafer(s)" + _asked(plan, mapping.wafers),
    )
    return _result(used, spans, t, "Cerebras layer pipeline over wafers, one sample through every stage")


def _one_replica(result, plan: ParallelPlan) -> ParallelResult:
    """One chip's step as a replica's timeline (data parallelism without model parallelism)."""
    span = Span((0, 0), "compute", "training step (replica 0)", 0.0, result.latency_s)
    return _result(plan, [span], result.latency_s, "one chip's step per replica")


def _data_parallel(
    placed: ParallelResult, result, costed: CostedGraph, plan: ParallelPlan, training: Any
) -> ParallelResult:
    """``placed`` (one replica) with the data-parallel collectives and FSDP's sharded optimizer step."""
    from dfx.parallel.data import data_parallel_step

    step = data_parallel_step(result, costed, plan, placed.latency_s, training)
    spans = list(placed.timeline)
    saved = step.optimizer_saved_s
    last = max((i for i, s in enumerate(spans) if s.kind == "compute"), default=None)
    if saved and last is not None:  # the optimizer node ends the step: its span shrinks, later ones move
        s = spans[last]
        cut = min(saved, s.end_s - s.start_s)
        spans[last] = replace(s, end_s=s.end_s - cut)
        spans[last + 1 :] = [replace(x, start_s=x.start_s - cut, end_s=x.end_s - cut) for x in spans[last + 1 :]]
        saved = cut
    t = placed.latency_s - saved
    if step.exposed_s > 0:
        kinds = "all-gather + reduce-scatter" if step.sharding == "fsdp" else "gradient all-reduce"
        spans.append(
            Span((0, plan.chips - 1), "communication", f"{step.sharding} {kinds}, exposed", t, t + step.exposed_s)
        )
    model = f"{placed.model}; {step.sharding} data parallelism over {plan.dp} replicas (collectives hidden per phase)"
    out = _result(plan, spans, t + step.exposed_s, model)
    return replace(out, data_parallel=step)


def _asked(plan: ParallelPlan, used: int) -> str:
    """Where an architecture model places the model itself: say so when the plan asked for other chips."""
    return "" if plan.chips == used else f", not the {plan.chips} asked"


def _boundary_bytes(costed: CostedGraph) -> float:
    """The activation passed between wafers: the largest output of a layer's last working node."""
    _, out_bytes, real, _ = _layer_groups(costed)
    return max((b for layer, b in out_bytes.items() if layer in real), default=0.0)


_OPERATOR_PLACEMENTS = ("groq-tsp", "cerebras-wafer")  # models that place every operator themselves


def place(result, costed: CostedGraph, plan: ParallelPlan, training: Any = None, memory: Any = None):
    """``result`` (one chip) spread over ``plan``'s chips: a new result whose latency is the split's.

    The returned :class:`~dfx.roofline.HardwareResult` has ``makespan_s`` set to the parallel
    latency (so ``latency_s`` quotes it) and export fields ``chips`` and ``parallel``
    (:meth:`ParallelResult.to_dict`). One chip on a GPU or TPU returns ``result`` with
    ``chips: 1``. On Groq and Cerebras the latency is never below the compiled program's critical
    path, whose kernels carry the same operator times (``docs/compile.md``).

    With ``plan.dp > 1`` (a training step only) each of ``dp`` replicas runs the step on its share
    of the batch and synchronises gradients (:mod:`dfx.parallel.data`); ``parallel.data_parallel``
    then holds the collectives and what of them the compute does not hide. ``training`` is then the
    step's :class:`dfx.training.TrainingStep` (:func:`dfx.parallel.data.data_parallel_step`).
    ``memory`` (a training step's :class:`dfx.parallel.plan.TrainingMemory`) is exported as
    ``parallel.memory`` where the result is spread over more than one chip.

    Raises
    ------
    DfxError
        If the profile has no interconnect, ``pp`` exceeds the model's layer groups, or ``dp > 1``
        for a graph that is not a training step or on a profile whose architecture model places
        the model itself (Groq, Cerebras).
    """
    if plan.dp > 1 and result.arch_model in _OPERATOR_PLACEMENTS:
        raise DfxError(
            f"--parallel dp={plan.dp} on {result.profile.id}: its architecture model ({result.arch_model}) places "
            "the model on chips itself and data parallelism is not modelled there; analyse one replica (drop dp)"
        )
    if result.arch_model == "groq-tsp" and "schedule" in result.extras:
        placed = _groq(result, plan)
    elif result.arch_model == "cerebras-wafer":
        placed = _wafers(result, costed, plan)
    elif plan.chips == 1:
        return copy_with(result, {"extras": MappingProxyType({**result.extras, "chips": 1})})
    else:
        placed = _tensor_pipeline(result, costed, plan) if plan.model_chips > 1 else _one_replica(result, plan)
        if plan.dp > 1:
            placed = _data_parallel(placed, result, costed, plan, training)
    if memory is not None:
        placed = replace(placed, memory=memory)
    extras = {**result.extras, "chips": placed.plan.chips, "parallel": placed.to_dict()}
    latency = placed.latency_s
    if result.arch_model in _OPERATOR_PLACEMENTS and result.program is not None:
        # the architecture model's latency, never below the program's critical path over the same
        # operator times (a wafer stage takes the larger of its operators' summed compute and summed
        # traffic, so a chain of differently bound operators inside one stage can take longer)
        latency = max(latency, result.critical_path.time_s)
    return copy_with(result, {"makespan_s": latency, "extras": MappingProxyType(extras)})
