"""The optimizer step as one node of the training graph: ``torch.optim``'s fused kernel call.

``add_optimizer_step(graph, "adam")`` appends, before the output, the node a fused
``torch.optim.Adam(params, fused=True).step()`` runs: one ``_fused_adam_`` call over every
parameter that has a gradient, reading each parameter, its gradient and its state tensors and
writing the parameters and states back. The node holds the functional form ``aten._fused_adam``,
as torch.compile's functionalization records the step, whose outputs are the updated tensors. Its cost comes from the registry
(:mod:`dfx.costs.rules_optim`), so the roofline, compile and schedule stages time it like any node,
after the last gradient it reads.

Optimizer state is kept in fp32 whatever the parameters' dtype (:data:`STATE_DTYPE`), as
mixed-precision training keeps it (torch.amp trains fp32 parameters; Megatron-LM and DeepSpeed
keep fp32 Adam moments beside bf16 weights). NB: fp32 master copies of bf16 weights are not added.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Mapping

from dfx.errors import DfxError
from dfx.ir import AtenCall, Edge, Graph, Node, ParameterInfo, TensorSpec

__all__ = [
    "DEFAULT_OPTIMIZER",
    "OPTIMIZERS",
    "OPTIMIZER_NODE",
    "STATE_DTYPE",
    "OptimizerSpec",
    "add_optimizer_step",
    "optimizer_spec",
    "state_name",
]

STATE_DTYPE = "float32"  # Adam's m and v, SGD's momentum buffer, the step counts
OPTIMIZER_NODE = "optimizer_step"


@dataclass(frozen=True)
class OptimizerSpec:
    """One optimizer as the fused kernel torch.optim calls: the op, its state tensors, its arguments.

    ``state`` names the per-parameter state tensors passed to the kernel (each the parameter's
    shape in :data:`STATE_DTYPE`); ``kwargs`` are the torch.optim defaults the kernel receives.
    """

    name: str
    op: str
    state: tuple[str, ...]
    kwargs: Mapping[str, Any]
    description: str

    @property
    def state_tensors_per_parameter(self) -> int:
        return len(self.state)


# torch.optim's defaults (https://pytorch.org/docs/stable/optim.html): SGD lr 1e-3, momentum 0;
# Adam lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0; AdamW the same with weight_decay 1e-2.
OPTIMIZERS: dict[str, OptimizerSpec] = {
    "sgd": OptimizerSpec(
        "sgd",
        "aten._fused_sgd.default",
        (),
        MappingProxyType(
            {
                "weight_decay": 0.0,
                "momentum": 0.0,
                "lr": 1e-3,
                "dampening": 0.0,
                "nesterov": False,
                "maximize": False,
                "is_first_step": False,
            }
        ),
        "torch.optim.SGD(lr=1e-3): p -= lr * g, no state",
    ),
    "sgd-momentum": OptimizerSpec(
        "sgd-momentum",
        "aten._fused_sgd.default",
        ("momentum_buffer",),
        MappingProxyType(
            {
                "weight_decay": 0.0,
                "momentum": 0.9,
                "lr": 1e-3,
                "dampening": 0.0,
                "nesterov": False,
                "maximize": False,
                "is_first_step": False,
            }
        ),
        "torch.optim.SGD(lr=1e-3, momentum=0.9): one momentum buffer per parameter",
    ),
    "adam": OptimizerSpec(
        "adam",
        "aten._fused_adam.default",
        ("exp_avg", "exp_avg_sq"),
        MappingProxyType(
            {
                "lr": 1e-3,
                "beta1": 0.9,
                "beta2": 0.999,
                "weight_decay": 0.0,
                "eps": 1e-8,
                "amsgrad": False,
                "maximize": False,
            }
        ),
        "torch.optim.Adam(): m and v per parameter",
    ),
    "adamw": OptimizerSpec(
        "adamw",
        "aten._fused_adamw.default",
        ("exp_avg", "exp_avg_sq"),
        MappingProxyType(
            {
                "lr": 1e-3,
                "beta1": 0.9,
                "beta2": 0.999,
                "weight_decay": 1e-2,
                "eps": 1e-8,
                "amsgrad": False,
                "maximize": False,
            }
        ),
        "torch.optim.AdamW(): m and v per parameter, decoupled weight decay 1e-2",
    ),
}
DEFAULT_OPTIMIZER = "adam"


def optimizer_spec(name: str) -> OptimizerSpec:
    """The :class:`OptimizerSpec` called ``name``; a one-line :class:`DfxError` naming the choices otherwise.

    Examples
    --------
    >>> optimizer_spec("adam").state
    ('exp_avg', 'exp_avg_sq')
    """
    spec = OPTIMIZERS.get(str(name).strip().lower())
    if spec is None:
        raise DfxError(f"unknown optimizer {name!r}; expected one of {', '.join(OPTIMIZERS)}")
    return spec


def joint_gradients(graph: Graph) -> dict[str, tuple[str, str]]:
    """``{parameter: (its placeholder node, its gradient node)}`` from a joint graph's meta.

    Raises
    ------
    DfxError
        If ``graph`` is not a joint training graph (:func:`dfx.capture.joint.capture_joint`).
    """
    meta = dict(graph.meta)
    if "joint_gradients" not in meta:
        raise DfxError(f"graph {graph.name!r} is not a training graph (no joint_gradients); capture it with train=True")
    return {p: (str(nodes[0]), str(nodes[1])) for p, nodes in json.loads(meta["joint_gradients"]).items()}


def add_optimizer_step(graph: Graph, optimizer: str | OptimizerSpec) -> Graph:
    """``graph`` with the optimizer's fused step as one node before the output.

    The node reads every trained parameter's placeholder and gradient node, and its one aten call
    holds the parameter, gradient, state (in :data:`STATE_DTYPE`) and step-count tensors of every
    parameter, in the argument order of ``optimizer.op``.

    Raises
    ------
    DfxError
        For an unknown optimizer, or a graph that is not a joint training graph.
    """
    spec = optimizer if isinstance(optimizer, OptimizerSpec) else optimizer_spec(optimizer)
    gradients = joint_gradients(graph)
    index = {n.name: n for n in graph.nodes}
    params, grads, inputs = [], [], []
    for _, (placeholder, grad) in gradients.items():
        params.append(index[placeholder].outputs[0])
        grads.append(index[grad].outputs[0])
        inputs += [Edge(placeholder), Edge(grad)]
    state = tuple(tuple(TensorSpec(p.shape, STATE_DTYPE) for p in params) for _ in spec.state)
    steps = tuple(TensorSpec((), STATE_DTYPE) for _ in params)
    if spec.op.startswith("aten._fused_adam"):  # (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps)
        args: tuple[Any, ...] = (tuple(params), tuple(grads), *state, (), steps)
    else:  # _fused_sgd_(params, grads, momentum_buffer_list)
        args = (tuple(params), tuple(grads), state[0] if state else ())
    # What the kernel writes: the parameters and the states (grads_out is written only when a grad
    # scaler unscales them, which dfx does not model).
    written = tuple(params) + tuple(t for group in state for t in group)
    call = AtenCall(spec.op, args, tuple(sorted(spec.kwargs.items())), written)
    name = OPTIMIZER_NODE
    while name in index:
        name += "_"
    # The state is the model's persistent state too (torch.optim's state_dict): buffers of the
    # graph, so footprints and capacity (the chips a step needs) count it.
    states = tuple(
        ParameterInfo(state_name(p, s), TensorSpec(params[i].shape, STATE_DTYPE), "buffer")
        for s in spec.state
        for i, p in enumerate(gradients)
    )
    node = Node(
        name,
        "call_function",
        spec.op,
        inputs=tuple(inputs),
        outputs=written,
        params=tuple(gradients) + tuple(st.name for st in states),
        aten_calls=(call,),
        args_repr=f"{spec.name}: {len(params)} parameters",
    )
    nodes = list(graph.nodes)
    at = next((i for i, n in enumerate(nodes) if n.op == "output"), len(nodes))
    nodes.insert(at, node)
    return replace(
        graph,
        nodes=tuple(nodes),
        parameters=graph.parameters + states,
        meta=graph.meta + (("optimizer", spec.name), ("optimizer_node", name)),
    )


def state_name(parameter: str, state: str) -> str:
    """The name an optimizer state tensor is filed under among the graph's buffers.

    Examples
    --------
    >>> state_name("conv1.weight", "exp_avg")
    'optimizer.exp_avg.conv1.weight'
    """
    return f"optimizer.{state}.{parameter}"
