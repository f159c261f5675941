"""What a costed training graph says about the step: forward and backward, what is kept, the optimizer.

A joint graph (:func:`dfx.capture.joint.capture_joint`) plus the optimizer node
(:func:`dfx.training.optimizer.add_optimizer_step`), costed, is read here:

- **backward** nodes are the descendants of the loss node (the backward starts from the loss's
  seed gradient, ``ones_like(loss)``); every other working node is **forward**, the optimizer apart;
- the tensors **kept for backward** are the forward values backward nodes read, each followed
  through views and aliases (``detach``, ``t``, ``getitem``: nodes that do no work) to the tensor
  that holds the data; parameters and buffers stay resident anyway and are not counted, the loss
  is a forward output (its seed reads only its shape). This is what eager autograd saves and what
  AOTAutograd's default partitioner passes from forward to backward; torch.compile's min-cut
  partitioner may recompute cheap pointwise ops in the backward and keep less: its choice, where
  capture could ask it, is ``min_cut_saved_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from dfx.costs import Category, CostedGraph
from dfx.schema.analysis import TrainingRecord
from dfx.training.optimizer import OPTIMIZERS, STATE_DTYPE, joint_gradients

__all__ = ["TrainingStep", "base_tensor", "saved_for_backward", "training_step"]

_RESIDENT = ("parameter", "buffer", "constant")


@dataclass(frozen=True)
class TrainingStep:
    """One training step's split and memory, read from a costed joint graph (bytes, FLOPs)."""

    loss: str
    loss_node: str
    optimizer: str
    optimizer_node: str
    trainable_parameter_count: int
    trainable_parameter_bytes: int
    gradient_bytes: int
    optimizer_state_bytes: int
    optimizer_flops: int
    optimizer_bytes: int
    forward_flops: int
    backward_flops: int
    backward_nodes: tuple[str, ...]
    saved_activation_bytes: int
    saved_input_bytes: int
    saved_tensors: tuple[str, ...]
    gradients: Mapping[str, str]
    min_cut_saved_bytes: int | None = None

    def to_record(self) -> TrainingRecord:
        return TrainingRecord(
            loss=self.loss,
            loss_node=self.loss_node,
            optimizer=self.optimizer,
            optimizer_node=self.optimizer_node,
            trainable_parameter_count=self.trainable_parameter_count,
            trainable_parameter_bytes=self.trainable_parameter_bytes,
            gradient_bytes=self.gradient_bytes,
            optimizer_state_dtype=STATE_DTYPE,
            optimizer_state_bytes=self.optimizer_state_bytes,
            optimizer_flops_per_parameter=self.optimizer_flops // max(self.trainable_parameter_count, 1),
            optimizer_flops=self.optimizer_flops,
            optimizer_bytes=self.optimizer_bytes,
            forward_flops=self.forward_flops,
            backward_flops=self.backward_flops,
            backward_nodes=self.backward_nodes,
            saved_activation_bytes=self.saved_activation_bytes,
            saved_input_bytes=self.saved_input_bytes,
            saved_tensors=self.saved_tensors,
            gradients=MappingProxyType(dict(self.gradients)),
            min_cut_saved_bytes=self.min_cut_saved_bytes,
        )


def _descendants(costed: CostedGraph, start: str) -> set[str]:
    graph = costed.graph
    seen, stack = set(), [start]
    while stack:
        for user in graph.users(stack.pop()):
            if user not in seen:
                seen.add(user)
                stack.append(user)
    return seen


def base_tensor(costed: CostedGraph, src: str, index: int) -> tuple[str, int]:
    """The (node, output) holding the data ``src``'s output ``index`` aliases: through nodes that do no work.

    A node whose cost is unknown (an aten call with no rule) makes a tensor of its own: not looked through.
    """
    while True:
        cn = costed[src]
        node = cn.node
        no_work = (
            node.op == "call_function" and cn.cost.bytes_written == 0 and cn.cost.flops == 0 and not cn.unknown_ops
        )
        if not (no_work and node.inputs and cn.category in (Category.VIEW, Category.NONE)):
            return src, index
        edge = node.inputs[0]
        src, index = edge.src, edge.index


def _saved(costed: CostedGraph, backward: set[str], loss: str) -> dict[tuple[str, int], int]:
    """The tensors kept for backward (module docstring): ``(node, output) -> bytes``."""
    graph = costed.graph
    saved: dict[tuple[str, int], int] = {}
    for name in backward:
        for edge in graph.node(name).inputs:
            if edge.src in backward:
                continue
            src, index = base_tensor(costed, edge.src, edge.index)
            outs = graph.node(src).outputs
            if src == loss or graph.node(src).input_kind in _RESIDENT or index >= len(outs):
                continue
            saved[(src, index)] = outs[index].nbytes
    return saved


def saved_for_backward(costed: CostedGraph, step: TrainingStep) -> dict[tuple[str, int], int]:
    """The tensors ``step`` keeps for backward, ``(node, output index) -> bytes``: the inputs among them
    (placeholders) sum to ``saved_input_bytes``, the rest to ``saved_activation_bytes``."""
    return _saved(costed, set(step.backward_nodes), step.loss_node)


def training_step(costed: CostedGraph) -> TrainingStep:
    """The :class:`TrainingStep` of a costed joint graph with its optimizer node.

    Raises
    ------
    DfxError
        If the graph is not a joint training graph with an optimizer node.
    """
    from dfx.errors import DfxError

    graph = costed.graph
    meta = dict(graph.meta)
    gradients = joint_gradients(graph)
    if "optimizer_node" not in meta:
        raise DfxError(f"graph {graph.name!r} has no optimizer step; add one with dfx.training.add_optimizer_step")
    loss, opt_node = meta["joint_loss"], meta["optimizer_node"]
    backward = _descendants(costed, loss) - {opt_node}
    backward -= {n.name for n in graph.nodes if n.op == "output"}
    forward = [
        cn
        for cn in costed.nodes
        if cn.node.op == "call_function" and cn.node.name not in backward and cn.node.name != opt_node
    ]
    saved = _saved(costed, backward, loss)
    inputs = {key: b for key, b in saved.items() if graph.node(key[0]).op == "placeholder"}
    params = graph.parameter_index
    trained = [params[p].spec for p in gradients]
    count = sum(s.numel for s in trained)
    opt = costed[opt_node]
    spec = OPTIMIZERS[meta["optimizer"]]
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    return TrainingStep(
        loss=meta["joint_loss_kind"],
        loss_node=loss,
        optimizer=spec.name,
        optimizer_node=opt_node,
        trainable_parameter_count=count,
        trainable_parameter_bytes=sum(s.nbytes for s in trained),
        gradient_bytes=sum(graph.node(g).outputs[0].nbytes for _, g in gradients.values()),
        optimizer_state_bytes=spec.state_tensors_per_parameter * count * _itemsize(STATE_DTYPE),
        optimizer_flops=opt.cost.flops,
        optimizer_bytes=opt.cost.bytes_read + opt.cost.bytes_written,
        forward_flops=sum(cn.cost.flops for cn in forward),
        backward_flops=sum(costed[n].cost.flops for n in backward),
        backward_nodes=tuple(sorted(backward, key=order.__getitem__)),
        saved_activation_bytes=sum(b for key, b in saved.items() if key not in inputs),
        saved_input_bytes=sum(inputs.values()),
        saved_tensors=tuple(dict.fromkeys(src for src, _ in sorted(saved, key=lambda k: order[k[0]]))),
        gradients={p: g for p, (_, g) in gradients.items()},
        min_cut_saved_bytes=int(meta["min_cut_saved_bytes"]) if "min_cut_saved_bytes" in meta else None,
    )


def _itemsize(dtype: str) -> int:
    from dfx.ir import TensorSpec

    return TensorSpec((), dtype).itemsize
