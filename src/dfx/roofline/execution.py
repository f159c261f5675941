"""Execution models: where a node's bytes move, level by level.

``EAGER`` (cache-managed devices: GPUs, CPUs). Every node reads its inputs and parameters from,
and writes its outputs to, off-chip memory (HBM, DRAM): all of its traffic is charged to the
nearest off-chip level. Caches are not modelled (they only help).

``SCRATCHPAD`` (software-managed devices: TPU VMEM, Groq SRAM, Cerebras SRAM, Spyre LX). A node's
working set is its distinct input tensors + its output tensors + the parameters it reads. The
on-chip level (:meth:`HardwareProfile.on_chip_level`) holds up to its whole capacity, activations
first, parameters after; what does not fit spills, and each spilled byte crosses the off-chip level
once (a spilled parameter streams in, a spilled output is written out)::

    spilled   = max(0, working_set - on_chip_capacity)
    off_chip  = min(traffic, spilled)
    on_chip   = traffic - off_chip          # traffic = cost.bytes (re-reads counted)

This is the steady state of a network kept resident on chip: graph inputs and weights that fit
are taken to be there already (their first load is not charged). The rule is per node: it does not
track which earlier tensors are still live. A scratchpad profile with no usable on-chip level
(bandwidth or capacity unpublished, e.g. TPU v4 and v6e) runs EAGER instead; one with no off-chip
level keeps everything on chip.

``COMPILED`` (every machine, the default of :func:`dfx.analyze`). The graph is compiled for the
target (:meth:`dfx.targets.Target.compile`: fusion, tiling, placement, scheduling) and each
*kernel* moves the off-chip and on-chip bytes its program says; kernels run on their share of the
machine's cores and the result is a makespan (:mod:`dfx.roofline.program`). The node-level
models above stay as the per-operator view: a node's own ``compute_time_s``, ``bytes_by_level`` and
``bound_off_chip`` / ``bound_on_chip`` are theirs (:func:`node_model`).
"""

from __future__ import annotations

from enum import Enum

from dfx.costs.record import CostedNode
from dfx.hardware import HardwareProfile, MemoryLevel, MemoryModel
from dfx.ir import Graph

__all__ = [
    "ExecutionModel",
    "default_execution_model",
    "home_level",
    "level_traffic",
    "node_model",
    "parse_execution_model",
    "working_set_bytes",
]


class ExecutionModel(str, Enum):
    """Where tensors live between nodes."""

    EAGER = "eager"  # every tensor to and from off-chip memory
    SCRATCHPAD = "scratchpad"  # kept on chip while the working set fits, the rest spills
    COMPILED = "compiled"  # the target's compiled program: kernels on the machine's cores, a makespan

    def __str__(self) -> str:
        return self.value


def default_execution_model(profile: HardwareProfile) -> ExecutionModel:
    """``SCRATCHPAD`` for a scratchpad device with a usable on-chip level, else ``EAGER``."""
    if profile.memory_model is MemoryModel.SCRATCHPAD and profile.on_chip_level() is not None:
        return ExecutionModel.SCRATCHPAD
    return ExecutionModel.EAGER


def node_model(profile: HardwareProfile, model: ExecutionModel) -> ExecutionModel:
    """The node-level model behind ``model``: itself, or for ``COMPILED`` the profile's default."""
    return default_execution_model(profile) if model is ExecutionModel.COMPILED else model


def parse_execution_model(value: ExecutionModel | str | None) -> ExecutionModel | None:
    """``"compiled"``, ``"eager"`` or ``"scratchpad"`` (any case) as an :class:`ExecutionModel`; ``None`` stays.

    Raises
    ------
    ValueError
        Naming the value and the accepted names.
    """
    if value is None or isinstance(value, ExecutionModel):
        return value
    try:
        return ExecutionModel(str(value).strip().lower())
    except ValueError:
        names = ", ".join(m.value for m in ExecutionModel)
        raise ValueError(f"unknown execution model {value!r}; expected one of {names}") from None


def home_level(profile: HardwareProfile) -> MemoryLevel:
    """Where EAGER traffic goes: the nearest off-chip level, else the farthest level with a bandwidth."""
    off = profile.off_chip_level()
    if off is not None:
        return off
    return [lv for lv in profile.memory if lv.bandwidth_bytes_per_s][-1]


_STATE_KINDS = ("parameter", "buffer", "constant")


def working_set_bytes(costed: CostedNode, graph: Graph) -> tuple[int, int]:
    """``(activation_bytes, parameter_bytes)`` of a node: distinct inputs + outputs, and parameters.

    A parameter reaches a node along an edge from its placeholder (torch.export) or ``get_attr``
    node (fx) *and* is named in ``node.params``; it is counted once, as a parameter.
    """
    node = costed.node
    producers = {(e.src, e.index) for e in node.inputs}
    inputs = 0
    for src, index in producers:
        producer = graph.node(src)
        if producer.input_kind in _STATE_KINDS:
            continue
        outs = producer.outputs
        inputs += outs[index].nbytes if index < len(outs) else 0
    outputs = sum(spec.nbytes for spec in node.outputs)
    index = graph.parameter_index
    params = sum(index[p].spec.nbytes for p in dict.fromkeys(node.params))
    return inputs + outputs, params


def level_traffic(costed: CostedNode, graph: Graph, profile: HardwareProfile, model: ExecutionModel) -> dict[str, int]:
    """Bytes the node moves at each memory level (level name -> bytes) under ``model``."""
    return _level_traffic(costed, graph, profile, model, profile.on_chip_level(), profile.off_chip_level())


def _level_traffic(
    costed: CostedNode,
    graph: Graph,
    profile: HardwareProfile,
    model: ExecutionModel,
    on: MemoryLevel | None,
    off: MemoryLevel | None,
    working_set: tuple[int, int] | None = None,
) -> dict[str, int]:
    """:func:`level_traffic` with the profile's on- and off-chip levels already looked up, and the
    node's :func:`working_set_bytes` if known."""
    traffic = costed.cost.bytes
    if model is ExecutionModel.COMPILED:  # node_model without a second look-up
        model = (
            ExecutionModel.SCRATCHPAD
            if profile.memory_model is MemoryModel.SCRATCHPAD and on is not None
            else ExecutionModel.EAGER
        )
    if model is ExecutionModel.EAGER or on is None:
        return {(off if off is not None else home_level(profile)).name: traffic}
    if off is None:
        return {on.name: traffic}
    activations, params = working_set if working_set is not None else working_set_bytes(costed, graph)
    spilled = max(0, activations + params - int(on.capacity_bytes))
    off_bytes = min(traffic, spilled)
    return {on.name: traffic - off_bytes, off.name: off_bytes}
