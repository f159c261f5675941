"""Full activation recomputation: what a training step keeps when its activations do not fit, and what it pays.

A step whose activations kept for backward do not fit a chip's memory cannot run as captured; the
training frameworks then keep less and recompute the rest in the backward: activation
checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"), Megatron-LM's
*full activation recomputation* (Korthikanti et al. 2022, arXiv:2205.05198, section 4: "store the
input to each transformer layer ... and recompute the rest"), MaxText's ``remat_policy=full``,
``torch.utils.checkpoint`` around each layer. dfx models that full form, by layer (the
``layers.N`` of the module paths, :func:`dfx.parallel.plan.layer_of`; a graph without layers is
one layer)::

    kept_bytes   = kept for backward by nodes outside the layers (embedding, head, loss)
                 + each layer's input: the tensors its forward nodes read from outside it
                   (parameters and buffers apart, which stay resident anyway)
    recompute_s  = the layers' forward node times, run again in the backward, on the step's scale
                   (times the step's latency / the sum of its node times, as dfx.parallel.data
                   shares the step out)

NB: the real frameworks often recompute less (MaxText's custom policies save the attention
projections, or offload activations to host memory; Korthikanti et al.'s *selective*
recomputation only the attention core): full recomputation is the most time they pay to fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from dfx.costs import CostedGraph
from dfx.frozen import copy_with
from dfx.parallel.plan import layer_of
from dfx.training.step import TrainingStep, base_tensor, saved_for_backward

__all__ = ["Recompute", "full_recompute", "recompute_kept_bytes"]


@dataclass(frozen=True)
class Recompute:
    """Full activation recomputation of one step (module docstring); bytes for one replica, one chip."""

    kept_bytes: int  # kept for backward under recomputation
    saved_bytes: int  # kept without it (TrainingStep.saved_activation_bytes)
    layers: int  # checkpointed layers
    recompute_s: float  # the layers' forward again, on the step's time scale
    nodes: tuple[str, ...] = ()  # the forward nodes run again

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": "full",
            "layers": self.layers,
            "kept_bytes": self.kept_bytes,
            "saved_bytes": self.saved_bytes,
            "recompute_s": self.recompute_s,
            "nodes": list(self.nodes),
        }

    def apply(self, result: Any) -> Any:
        """``result`` (a :class:`~dfx.roofline.HardwareResult` of the step) with the recomputation in its
        latency (``makespan_s``) and an export field ``recompute`` (:meth:`to_dict`)."""
        extras = {**result.extras, "recompute": self.to_dict()}
        return copy_with(
            result, {"makespan_s": result.latency_s + self.recompute_s, "extras": MappingProxyType(extras)}
        )


def _layers(costed: CostedGraph, forward: list[Any]) -> dict[str, int | None]:
    """Each forward node's layer (``None`` outside the layers).

    From the module paths where they name ``layers.N``; a joint graph (AOTAutograd) carries none, so
    there a node is in the layer of the last parameter read before it, in graph order (a forward
    runs its layers in order: ``layers.3.mlp.up_proj.weight`` puts the nodes after it in layer 3,
    ``norm.weight`` or ``lm_head.weight`` puts them outside). A graph with no layer at all is one
    layer, 0. NB: a pre-norm layer reads its first parameter (the norm's weight) after the norm's
    first steps, so those count in the layer before and a layer's input is two tensors (the residual
    and its fp32 upcast for a Llama) where Megatron keeps one: an over-count of one tensor a layer.
    """
    paths = {cn.node.name: layer_of(cn.node.module_path) for cn in forward}
    if any(v is not None for v in paths.values()):
        return paths
    out: dict[str, int | None] = {}
    current: int | None = None
    seen = False
    for cn in forward:
        if cn.node.params:
            current = layer_of(cn.node.params[0])
            seen = seen or current is not None
        out[cn.node.name] = current
    return out if seen else {name: 0 for name in out}


def _forward_nodes(costed: CostedGraph, step: TrainingStep) -> list[Any]:
    """The forward nodes up to the loss, in graph order. A joint graph (AOTAutograd) also places
    after the loss nodes that read only forward values (SiLU's ``sigmoid`` for its backward, a
    weight's transpose): no loss descendants, so TrainingStep counts them forward, but they run in
    the backward and are not kept from the forward, nor recomputed."""
    backward = set(step.backward_nodes)
    out = []
    for cn in costed.nodes:
        if cn.node.op == "call_function" and cn.node.name not in backward and cn.node.name != step.optimizer_node:
            out.append(cn)
        if cn.node.name == step.loss_node:
            break
    return out


def recompute_kept_bytes(costed: CostedGraph, step: TrainingStep) -> tuple[int, int]:
    """``(kept_bytes, layers)`` of full recomputation (module docstring) for ``costed``'s step.

    Tested by hand on a two-layer model in ``tests/training/test_recompute.py``.
    """
    forward = _forward_nodes(costed, step)
    return _kept(costed, step, forward, _layers(costed, forward))


def _kept(costed: CostedGraph, step: TrainingStep, forward: list[Any], layer: dict[str, int | None]) -> tuple[int, int]:
    """:func:`recompute_kept_bytes` from the step's forward nodes and their layers."""
    graph = costed.graph
    saved = saved_for_backward(costed, step)
    outside = sum(b for (src, _), b in saved.items() if src in layer and layer[src] is None)
    inputs: dict[tuple[str, int], int] = {}
    for cn in forward:
        own = layer[cn.node.name]
        if own is None:
            continue
        for edge in cn.node.inputs:
            base, index = base_tensor(costed, edge.src, edge.index)  # through views and detaches
            src = graph.node(base)
            if layer.get(base) == own or src.op == "placeholder" or index >= len(src.outputs):
                continue  # inputs are counted apart (TrainingStep.saved_input_bytes); parameters stay resident
            inputs[(base, index)] = src.outputs[index].nbytes
    layers = len({v for v in layer.values() if v is not None})
    return outside + sum(inputs.values()), layers


def full_recompute(costed: CostedGraph, step: TrainingStep, result: Any) -> Recompute:
    """:class:`Recompute` of ``costed``'s step as evaluated in ``result`` (one chip's
    :class:`~dfx.roofline.HardwareResult`, its nodes in ``costed``'s order).

    ``recompute_s`` is the forward nodes inside the layers' share of the sum of node times, times
    ``result.latency_s`` (a compiled step's makespan is not the sum of its node times).
    """
    forward = _forward_nodes(costed, step)
    layer = _layers(costed, forward)
    kept, layers = _kept(costed, step, forward, layer)
    again = tuple(cn.node.name for cn in forward if layer[cn.node.name] is not None)
    names = set(again)
    total = sum(t.time_s for t in result.nodes)
    again_s = sum(t.time_s for cn, t in zip(costed.nodes, result.nodes) if cn.node.name in names)
    recompute_s = result.latency_s * again_s / total if total else 0.0
    return Recompute(kept, step.saved_activation_bytes, layers, recompute_s, again)
