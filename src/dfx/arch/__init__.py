"""Architecture models: the TPU systolic array, the Groq TSP, the Cerebras wafer, Spyre's cores.

An architecture model re-times the nodes it knows how to model (a matmul on a systolic array, a
layer on a wafer region) and may add export fields (a wafer mapping, a chip count). It plugs into
:func:`dfx.roofline.evaluate` through ``node_timer``; :func:`dfx.analysis.analyze` picks the model
for each profile with :func:`arch_model_for`. Nodes a model does not cover keep their roofline time.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile
from dfx.roofline.latency import NodeTiming

__all__ = ["ARCH_MODELS", "ArchModel", "arch_model_for"]


class ArchModel(Protocol):
    """What an architecture model provides to the analysis of one profile."""

    name: str

    def applies_to(self, profile: HardwareProfile) -> bool:
        """Whether this model describes ``profile``'s hardware."""

    def node_timer(self, costed: CostedGraph, profile: HardwareProfile) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
        """A function re-timing the nodes this model covers; others pass through unchanged."""

    def extras(self, costed: CostedGraph, profile: HardwareProfile) -> dict[str, Any]:
        """Export fields this model adds under ``hardware.<id>`` (may be empty)."""


# The models dfx ships, tried in order; the first that applies to a profile is used.
from dfx.arch.systolic.tpu import TPU_SYSTOLIC  # noqa: E402  (after ArchModel: the models import no dfx.arch names)

ARCH_MODELS: tuple[ArchModel, ...] = (TPU_SYSTOLIC,)


def arch_model_for(profile: HardwareProfile) -> ArchModel | None:
    """The first model in :data:`ARCH_MODELS` that applies to ``profile``, else ``None``."""
    return next((m for m in ARCH_MODELS if m.applies_to(profile)), None)
