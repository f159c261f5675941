"""A parallel plan: how many chips, split how (data, tensor, pipeline, expert parallelism).

``chips = dp * tp * pp * ep``. Data parallelism (``dp``, training steps only) runs the step on
``dp`` replicas, each on its share of the global batch, and synchronises their gradients: an
all-reduce (PyTorch DDP, ``dp=N``) or, with ``fsdp=N`` (PyTorch FSDP, ZeRO-3, MaxText's
``ici_fsdp_parallelism``), parameters all-gathered before use and gradients reduce-scattered.
Tensor parallelism (``tp``) splits every layer's matmuls and attention
heads over ``tp`` chips (Megatron-LM, Shoeybi et al. 2019); pipeline parallelism (``pp``) gives
each of ``pp`` stages a contiguous run of layers (GPipe, Huang et al. 2019); expert parallelism
(``ep``) puts each chip's share of a mixture-of-experts layer's experts on its own chip (GShard,
Lepikhin et al. 2020).

Without a plan, :func:`default_plan` takes the fewest chips that hold the model, from
:func:`dfx.arch.memory.capacity.capacity_report` (the numbers ``dfx capacity`` prints): on a device
that keeps its weights on chip (``interconnect.weights_on_chip``: Groq, Cerebras), its
``chips_needed``; elsewhere the weights, inputs (the KV cache) and peak activations against the
off-chip memory (one chip where its capacity is unknown, as host-cpu's DRAM). Those chips form a pipeline on a weights-on-chip device (the architecture model
places layers in order), else tensor parallelism up to the interconnect's domain, then pipeline.

A training step's memory per chip (:func:`training_memory`; ZeRO's "model states" and "residual
states", Rajbhandari et al. 2020)::

    per_chip = model_state / (tp * pp * ep) / (dp under FSDP, 1 under DDP)   # params + grads + optimizer state
             + saved_activations / (tp * pp)                                  # one replica's batch, kept for backward

``saved_activations`` is :attr:`dfx.training.TrainingStep.saved_activation_bytes` (one replica's
``--batch``): data parallelism does not shrink it (each replica keeps its own), tensor and pipeline
parallelism are counted as splitting it evenly (NB: optimistic: Megatron replicates the norms'
inputs, and a GPipe stage keeps several micro-batches). Without a plan a training step takes
:func:`default_training_plan`: the fewest FSDP chips whose per-chip memory fits the off-chip memory.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from dfx.costs.record import STORED_WIDTHS, CostedGraph
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.roofline.per_graph import per_graph

__all__ = [
    "layer_of",
    "ParallelPlan",
    "TrainingMemory",
    "default_plan",
    "default_training_plan",
    "fewest_chips",
    "model_footprint",
    "parse_parallel",
    "plan_for_chips",
    "recomputed",
    "training_memory",
]

_LAYER = re.compile(r"(?:^|\.)(?:layers|h|layer|blocks)\.(\d+)(?:\.|$)")


def layer_of(module_path: str) -> int | None:
    """The layer index in a module path (``model.layers.7.mlp`` -> 7); ``None`` outside the layers."""
    m = _LAYER.search(module_path or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class ParallelPlan:
    """``dp`` x ``tp`` x ``pp`` x ``ep`` chips; ``fsdp``: the ``dp`` replicas shard parameters,
    gradients and optimizer state (FSDP / ZeRO-3) instead of all-reducing gradients (DDP);
    ``source`` says how the plan was chosen."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    source: str = "given"
    dp: int = 1
    fsdp: bool = False

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise DfxError(f"parallel plan: {name}={value!r} must be a whole number >= 1")

    @property
    def chips(self) -> int:
        return self.dp * self.tp * self.pp * self.ep

    @property
    def model_chips(self) -> int:
        """The chips one replica's model is split over (``tp * pp * ep``)."""
        return self.tp * self.pp * self.ep

    @property
    def sharding(self) -> str:
        """``"fsdp"``, ``"ddp"``, or ``"none"`` (one replica)."""
        return "none" if self.dp == 1 else ("fsdp" if self.fsdp else "ddp")

    def to_dict(self) -> dict[str, Any]:
        out = {"tp": self.tp, "pp": self.pp, "ep": self.ep, "chips": self.chips, "source": self.source}
        if self.dp > 1:  # written only for a data-parallel plan: older documents keep their shape
            out.update(dp=self.dp, sharding=self.sharding)
        return out


def parse_parallel(text: str) -> ParallelPlan:
    """``"tp=8,pp=2"`` -> ``ParallelPlan(tp=8, pp=2)``; keys ``dp`` (DDP), ``fsdp``, ``tp``, ``pp``, ``ep``.

    >>> parse_parallel("tp=8,pp=2").chips
    16
    >>> parse_parallel("fsdp=256").sharding
    'fsdp'

    Raises
    ------
    DfxError
        On an unknown key, a repeated key, ``dp`` with ``fsdp``, or a value that is not a whole
        number >= 1.
    """
    values: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in _KEYS or key in values:
            raise DfxError(
                f"--parallel {text!r}: expected comma-separated dp=N or fsdp=N, tp=N, pp=N, ep=N, each once "
                "(e.g. tp=8,pp=2 or fsdp=256)"
            )
        try:
            values[key] = int(value)
        except ValueError:
            raise DfxError(f"--parallel {text!r}: {key}={value!r} is not a whole number") from None
    if not values:
        raise DfxError(f"--parallel {text!r}: expected comma-separated tp=N, pp=N, ep=N (e.g. tp=8,pp=2)")
    if "dp" in values and "fsdp" in values:
        raise DfxError(f"--parallel {text!r}: give dp=N (gradients all-reduced) or fsdp=N (sharded), not both")
    if "fsdp" in values:
        values["dp"] = values.pop("fsdp")
        return ParallelPlan(**values, fsdp=True)
    return ParallelPlan(**values)


_KEYS = ("dp", "fsdp", "tp", "pp", "ep")


def _input_bytes(costed: CostedGraph) -> int:
    """Bytes of the graph's user inputs (tokens, a decode step's KV cache)."""
    return sum(
        sum(o.nbytes for o in n.outputs)
        for n in costed.graph.nodes
        if n.op == "placeholder" and n.input_kind not in ("parameter", "buffer", "constant")
    )


def _peak_activation_bytes(costed: CostedGraph) -> int:
    """The graph's peak live activation bytes, made once per graph (:func:`dfx.roofline.per_graph.per_graph`):
    they do not depend on the profile, and a sweep (or dfx analyze on several machines) asks for one graph
    on profile after profile."""
    return per_graph(costed, _model_bytes)[2]


def _model_bytes(costed: CostedGraph) -> tuple[int, int, int, int]:
    """What :func:`fewest_chips` reads of a graph, none of it the profile's (a per-graph fact): its parameter
    count and bytes, its peak live activation bytes and its user inputs' bytes."""
    from dfx.arch.memory.lifetime import peak_live_bytes

    peak = peak_live_bytes(costed.graph, {n.name: n.category.value for n in costed.nodes})
    return costed.unique_parameter_count(), costed.unique_parameter_bytes(), peak, _input_bytes(costed)


def model_footprint(costed: CostedGraph) -> tuple[int, int, int, int]:
    """``(parameters, weight bytes, activation bytes, input bytes)`` :func:`fewest_chips` holds, each as
    stored where the graph was re-priced (``--dtype fp8``, ``--weight-dtype``, ``--kv-dtype``:
    :func:`dfx.costs.precision.apply_precision`).

    The inputs (a decode step's KV cache) are counted once: the activations are the peak live bytes
    less the inputs' (at least 0). The peak counts the inputs while they are read and the new cache a
    decode step returns (its concatenated K and V), the storage a serving engine updates in place;
    adding the inputs to the whole peak had counted a KV cache twice (4 H100s for Llama-2-7B's fp8
    decode at batch 112 and 2,048 tokens, where 6.3 GiB of weights and 56 GiB of cache fit one).
    """
    count, weights, peak, inputs = per_graph(costed, _model_bytes)
    activations = max(peak - inputs, 0)
    meta = costed.meta
    if STORED_WIDTHS in meta:  # weights, KV cache and activations as stored (dfx.costs.precision)
        stored = meta[STORED_WIDTHS]
        activations, inputs = math.ceil(activations * stored["activation_ratio"]), stored["input_bytes"]
    return count, weights, activations, inputs


def fewest_chips(costed: CostedGraph, profile: HardwareProfile) -> int:
    """The fewest chips of ``profile`` that hold ``costed``'s model (module docstring; :func:`model_footprint`), at least 1."""
    from dfx.arch.memory.capacity import capacity_report

    parameter_count, parameter_bytes, activations, inputs = model_footprint(costed)
    report = capacity_report(
        profile,
        model=costed.graph.name,
        dtype="",
        batch=1,
        seq=1,
        parameter_count=parameter_count,
        parameter_bytes=parameter_bytes,
        activation_bytes=activations,
        kv_cache_bytes=inputs,
    )
    link = profile.interconnect
    if link is not None and link.weights_on_chip:
        return report.chips_needed or 1
    if report.offchip_capacity_bytes is None:
        # An off-chip memory of unknown size (host-cpu's DRAM) holds the model: its caches are not
        # where the weights live, so they do not decide how many chips are needed.
        return 1
    return max(1, math.ceil(report.total_bytes / report.offchip_capacity_bytes))


def plan_for_chips(profile: HardwareProfile, chips: int, source: str = "--chips") -> ParallelPlan:
    """Split ``chips`` chips: a pipeline where weights stay on chip, else TP within the domain, then PP."""
    if chips < 1:
        raise DfxError(f"--chips {chips}: expected a whole number >= 1")
    link = profile.interconnect
    if chips == 1:
        return ParallelPlan(source=source)
    if link is not None and link.weights_on_chip:
        return ParallelPlan(pp=chips, source=source)
    domain = (link.domain_chips if link is not None else None) or chips
    tp = math.gcd(chips, domain)
    return ParallelPlan(tp=tp, pp=chips // tp, source=source)


def default_plan(costed: CostedGraph, profile: HardwareProfile) -> ParallelPlan:
    """The fewest chips that hold the model, split by :func:`plan_for_chips`."""
    return plan_for_chips(profile, fewest_chips(costed, profile), source="fewest chips that fit (dfx capacity)")


@dataclass(frozen=True)
class TrainingMemory:
    """A training step's bytes on each chip of a plan (module docstring) against one chip's off-chip memory.

    ``capacity_bytes`` is ``None`` where the profile's off-chip capacity is unknown (host-cpu) or it
    keeps its weights on chip (Groq, Cerebras: :func:`fewest_chips` counts those); ``fits`` is then ``None``.
    """

    model_state_bytes: float  # per chip: parameters + gradients + optimizer state
    saved_activation_bytes: float  # per chip: kept for backward
    capacity_bytes: float | None

    @property
    def per_chip_bytes(self) -> float:
        return self.model_state_bytes + self.saved_activation_bytes

    @property
    def fits(self) -> bool | None:
        return None if self.capacity_bytes is None else self.per_chip_bytes <= self.capacity_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_state_bytes": self.model_state_bytes,
            "saved_activation_bytes": self.saved_activation_bytes,
            "per_chip_bytes": self.per_chip_bytes,
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
        }


def _training_capacity(profile: HardwareProfile) -> float | None:
    from dfx.arch.memory.capacity import offchip_memory

    link = profile.interconnect
    if link is not None and link.weights_on_chip:
        return None
    level = offchip_memory(profile)
    return float(level.capacity_bytes) if level is not None else None


def training_memory(
    plan: ParallelPlan, profile: HardwareProfile, model_state_bytes: float, saved_activation_bytes: float
) -> TrainingMemory:
    """Per-chip bytes of a training step under ``plan`` (module docstring); totals for one replica, one chip.

    >>> from dfx.hardware import load_profile
    >>> m = training_memory(parse_parallel("fsdp=4"), load_profile("h100"), 400, 10)
    >>> m.model_state_bytes, m.saved_activation_bytes
    (100.0, 10.0)
    """
    state = model_state_bytes / plan.model_chips / (plan.dp if plan.fsdp else 1)
    saved = saved_activation_bytes / (plan.tp * plan.pp)
    return TrainingMemory(state, saved, _training_capacity(profile))


def recomputed(result: Any) -> Any:
    """The :class:`~dfx.schema.analysis.RecomputeRecord` of a result whose extras carry ``recompute``
    (a training step charged full activation recomputation, :mod:`dfx.training.recompute`).

    Raises
    ------
    KeyError
        If ``result.extras`` has no ``recompute``: check ``"recompute" in result.extras`` first.
    """
    from dfx.schema.analysis import ANALYSIS_SCHEMA, RecomputeRecord

    return RecomputeRecord.from_dict(result.extras["recompute"], ANALYSIS_SCHEMA, "hardware.<id>.recompute")


def default_training_plan(
    profile: HardwareProfile, model_state_bytes: float, saved_activation_bytes: float
) -> ParallelPlan | None:
    """The fewest FSDP chips whose per-chip memory (module docstring) fits ``profile``'s off-chip memory.

    ``dp = ceil(model_state / (capacity - saved_activations))``. ``None`` where it cannot say: the
    capacity is unknown or the weights stay on chip (the caller takes :func:`default_plan`), or one
    replica's saved activations alone fill a chip (then no ``dp`` fits: the caller splits the model
    with :func:`default_plan`, and warns).
    """
    capacity = _training_capacity(profile)
    if capacity is None or saved_activation_bytes >= capacity:
        return None
    dp = max(1, math.ceil(model_state_bytes / (capacity - saved_activation_bytes)))
    if dp == 1:
        return ParallelPlan(source="fewest chips that fit (a training step's model state and saved activations)")
    return ParallelPlan(
        dp=dp, fsdp=True, source="fewest fsdp chips that fit (model state / dp + saved activations per chip)"
    )
