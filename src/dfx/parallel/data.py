"""Data parallelism for a training step: ``dp`` replicas, their gradients synchronised.

Each of ``dp`` replicas runs the captured step on its own share of the global batch: the captured
batch is one replica's (``--batch`` is per replica; global batch = ``dp`` x ``--batch``), so a
replica's compute is the one-chip (or model-parallel) step. What data parallelism adds:

- **DDP** (``dp=N``; PyTorch ``DistributedDataParallel``): every gradient is all-reduced over the
  ``dp`` replicas, in buckets of 25 MiB (DDP's default ``bucket_cap_mb=25``; Li et al., "PyTorch
  Distributed", VLDB 2020): ``ceil(G / 25 MiB)`` all-reduces of ``G / buckets`` bytes each. Each
  replica then runs the whole optimizer step.
- **FSDP** (``fsdp=N``; PyTorch FSDP with ``FULL_SHARD``, DeepSpeed ZeRO-3, MaxText's
  ``ici_fsdp_parallelism``): each replica holds ``1/dp`` of the parameters, gradients and
  optimizer state. Each layer's parameters are all-gathered before its forward and again before
  its backward (FSDP's default ``reshard_after_forward=True``; ZeRO-3), and its gradients are
  reduce-scattered: one collective per layer group (the parameters under ``layers.N``, and one
  group for those outside the layers: embedding, final norm, head). The optimizer step runs on
  ``1/dp`` of the parameters: its time divides by ``dp``.

Bytes per collective are the replica's share when the model is also split ``tp * pp * ep`` ways
(each model-parallel shard synchronises its own part; NB: replicated norms are counted once).
Collectives are timed by :func:`dfx.parallel.collectives.collective_s` over ``dp`` chips of the
profile's interconnect (ring formulas, NCCL's bus-bandwidth factors).

**Overlap (a documented convention, not a knob).** Both PyTorch DDP (buckets all-reduced as their
gradients become ready during the backward, Li et al. 2020) and FSDP / XLA (parameter all-gathers
prefetched one layer ahead, gradient reduce-scatters issued asynchronously; XLA's async
collectives, MaxText's ``DATA_PARALLEL_OVERLAP`` flags) run the collectives beside the compute.
dfx counts a phase's collectives as hidden behind that phase's compute, up to it::

    forward_exposed_s  = max(0, all_gather_s                       - forward_s)   # FSDP only
    backward_exposed_s = max(0, all_gather_s + reduce_scatter_s    - backward_s)  # FSDP
                         max(0, all_reduce_s                       - backward_s)  # DDP
    step_s = replica_step_s - optimizer_s * (1 - 1/dp) [FSDP]  + forward_exposed_s + backward_exposed_s

``forward_s``, ``backward_s``, ``optimizer_s``: the replica's step time shared out by its forward,
backward and optimizer nodes' times (``HardwareResult.nodes``). NB: the last bucket's all-reduce
(or the first layer's all-gather) cannot overlap anything in a real run; this convention is the
optimistic end, and the full collective time is reported beside the exposed time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.costs.record import CostedGraph
from dfx.errors import DfxError
from dfx.parallel.collectives import Collective, collective_s, interconnect_of
from dfx.parallel.plan import ParallelPlan, recomputed

__all__ = ["DDP_BUCKET_BYTES", "DataParallelStep", "data_parallel_step", "is_training_graph", "model_state_bytes"]

DDP_BUCKET_BYTES = 25 * 2**20  # torch.nn.parallel.DistributedDataParallel(bucket_cap_mb=25), the default


def is_training_graph(costed: CostedGraph) -> bool:
    """Whether ``costed`` is a training step (a joint graph with its optimizer node)."""
    meta = dict(costed.graph.meta)
    return "joint_gradients" in meta and "optimizer_node" in meta


def model_state_bytes(costed: CostedGraph, training: Any) -> int:
    """One replica's whole model state, bytes: every parameter (frozen ones too: they stay resident,
    and FSDP shards them with the rest), the gradients and the optimizer state (ZeRO's "model
    states", Rajbhandari et al. 2020). ``training``: the step's :class:`dfx.training.TrainingStep`."""
    trained = set(training.gradients)
    frozen = sum(p.spec.nbytes for p in costed.graph.parameters if p.kind == "parameter" and p.name not in trained)
    return training.trainable_parameter_bytes + frozen + training.gradient_bytes + training.optimizer_state_bytes


@dataclass(frozen=True)
class DataParallelStep:
    """A training step on one of ``dp`` replicas: the collectives and how much of them shows (seconds, bytes)."""

    dp: int
    sharding: str  # "ddp" or "fsdp"
    gradient_bytes: float  # one replica's gradients to synchronise (its model-parallel share)
    parameter_bytes: float  # one replica's trainable parameters (its model-parallel share)
    collectives: int  # how many collectives a step issues
    all_reduce_s: float
    all_gather_s: float  # forward and backward together (FSDP)
    reduce_scatter_s: float
    forward_s: float  # the replica's step shared out by node times
    backward_s: float
    optimizer_s: float  # per chip: 1/dp of the whole step's under FSDP
    optimizer_saved_s: float  # FSDP: the optimizer time the sharding saves
    exposed_s: float  # collective time not hidden behind compute (the convention above)
    model_state_bytes: float  # per chip: parameters (frozen too) + gradients + optimizer state (ZeRO's "model states")

    @property
    def collective_s(self) -> float:
        return self.all_reduce_s + self.all_gather_s + self.reduce_scatter_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "dp": self.dp,
            "sharding": self.sharding,
            "gradient_bytes": self.gradient_bytes,
            "parameter_bytes": self.parameter_bytes,
            "collectives": self.collectives,
            "all_reduce_s": self.all_reduce_s,
            "all_gather_s": self.all_gather_s,
            "reduce_scatter_s": self.reduce_scatter_s,
            "collective_s": self.collective_s,
            "exposed_s": self.exposed_s,
            "forward_s": self.forward_s,
            "backward_s": self.backward_s,
            "optimizer_s": self.optimizer_s,
            "model_state_bytes": self.model_state_bytes,
            "overlap": "a phase's collectives hide behind that phase's compute (docs/parallel.md)",
        }


def _layer_bytes(costed: CostedGraph, names: dict[str, str], shard: int) -> list[tuple[float, float]]:
    """Per layer group: (parameter bytes, gradient bytes), each divided by ``shard``."""
    from dfx.parallel.plan import layer_of

    graph = costed.graph
    params = graph.parameter_index
    groups: dict[Any, list[float]] = {}
    for p, grad in names.items():
        g = groups.setdefault(layer_of(p), [0.0, 0.0])
        g[0] += params[p].spec.nbytes / shard
        g[1] += graph.node(grad).outputs[0].nbytes / shard
    return [(a, b) for a, b in groups.values()]


def data_parallel_step(
    result: Any, costed: CostedGraph, plan: ParallelPlan, replica_s: float, training: Any = None
) -> DataParallelStep:
    """The collectives of ``plan.dp`` data-parallel replicas of ``costed``'s step (module docstring).

    ``result`` is the one-chip :class:`~dfx.roofline.HardwareResult` (its node times share out
    ``replica_s``, one replica's step time, among forward, backward and optimizer). ``training`` is
    the step's :class:`dfx.training.TrainingStep` (its ``gradients``: parameter -> gradient node,
    and ``backward_nodes``), made by the caller: the training layer sits above this one
    (``tests/test_architecture.py``), so :func:`dfx.analysis.evaluate_on` passes it down.

    Raises
    ------
    DfxError
        If ``costed`` is not a training step (data parallelism synchronises gradients), or the
        profile has no interconnect.
    """
    if not is_training_graph(costed):
        raise DfxError(
            f"--parallel dp={plan.dp}: data parallelism applies to a training step (add --train); "
            "an inference replica shares nothing with the others, so analyse one replica"
        )
    if training is None:
        raise DfxError(
            "data_parallel_step needs the step's TrainingStep (training=dfx.training.step.training_step(costed)); "
            "dfx.analyze passes it"
        )
    link = interconnect_of(result.profile)
    meta = dict(costed.graph.meta)
    gradients = dict(training.gradients)
    backward = set(training.backward_nodes)
    opt_node = meta["optimizer_node"]
    fwd = bwd = opt = 0.0
    for cn, timing in zip(costed.nodes, result.nodes):
        if cn.node.name == opt_node:
            opt += timing.time_s
        elif cn.node.name in backward:
            bwd += timing.time_s
        else:
            fwd += timing.time_s
    total = fwd + bwd + opt
    # full activation recomputation (dfx.training.recompute) runs the layers' forward again in the backward
    again = recomputed(result).recompute_s if "recompute" in result.extras else 0.0
    scale = (replica_s - again) / total if total else 0.0
    fwd, bwd, opt = fwd * scale, bwd * scale + again, opt * scale
    shard = plan.model_chips
    layers = _layer_bytes(costed, gradients, shard)
    grad_bytes = sum(g for _, g in layers)
    param_bytes = sum(p for p, _ in layers)
    n = plan.dp
    # ZeRO's model states (Rajbhandari et al. 2020): DDP replicates them, FSDP / ZeRO-3 shards them dp ways
    states = model_state_bytes(costed, training) / shard
    if plan.fsdp:
        gather = 2 * sum(collective_s(link, Collective.ALL_GATHER, p, n) for p, _ in layers)  # forward, backward
        scatter = sum(collective_s(link, Collective.REDUCE_SCATTER, g, n) for _, g in layers)
        exposed = max(0.0, gather / 2 - fwd) + max(0.0, gather / 2 + scatter - bwd)
        saved = opt * (1 - 1 / n)
        return DataParallelStep(
            n,
            "fsdp",
            grad_bytes,
            param_bytes,
            3 * len(layers),
            0.0,
            gather,
            scatter,
            fwd,
            bwd,
            opt / n,
            saved,
            exposed,
            states / n,
        )
    buckets = max(1, math.ceil(grad_bytes / DDP_BUCKET_BYTES))
    reduce = buckets * collective_s(link, Collective.ALL_REDUCE, grad_bytes / buckets, n)
    exposed = max(0.0, reduce - bwd)
    return DataParallelStep(
        n, "ddp", grad_bytes, param_bytes, buckets, reduce, 0.0, 0.0, fwd, bwd, opt, 0.0, exposed, states
    )
