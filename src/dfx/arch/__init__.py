"""Architecture models: the TPU systolic array, the Groq TSP, the Cerebras wafer, Spyre's cores.

An architecture model re-times the nodes it knows how to model (a matmul on a systolic array, a
layer on a wafer region) and may add export fields (a wafer mapping, a chip count). It plugs into
:func:`dfx.roofline.evaluate` through ``node_timer``; :func:`dfx.analysis.analyze` picks the model
for each profile with :func:`arch_model_for`. Nodes a model does not cover keep their roofline time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:  # names for the protocol's signatures only: importing dfx.arch stays light
    from dfx.costs.record import CostedGraph, CostedNode
    from dfx.hardware import HardwareProfile
    from dfx.roofline.latency import NodeTiming

__all__ = ["ArchModel", "arch_model_for", "arch_models"]


class ArchModel(Protocol):
    """What an architecture model provides to the analysis of one profile."""

    name: str
    # Whether node_timer times each operator whole (on-chip traffic included), so that a compiled
    # kernel's time is the sum of its nodes' (the Groq TSP, the Cerebras wafer); absent means False.
    times_operators: bool

    def applies_to(self, profile: HardwareProfile) -> bool:
        """Whether this model describes ``profile``'s hardware."""

    def node_timer(
        self, costed: CostedGraph, profile: HardwareProfile
    ) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
        """A function re-timing the nodes this model covers; others pass through unchanged."""

    def extras(self, costed: CostedGraph, profile: HardwareProfile) -> dict[str, Any]:
        """Export fields this model adds under ``hardware.<id>`` (may be empty)."""


def arch_models() -> tuple[ArchModel, ...]:
    """The models dfx ships, in the order they are tried; the first that applies to a profile is used.

    Imported on first use: the models build on :mod:`dfx.roofline` and :mod:`dfx.costs`, which
    ``import dfx.arch`` alone should not pull in.
    """
    from dfx.arch.spatial.groq import GroqModel
    from dfx.arch.spatial.wafer import WaferModel
    from dfx.arch.systolic.tpu import TPU_SYSTOLIC

    return (TPU_SYSTOLIC, GroqModel(), WaferModel())


def arch_model_for(profile: HardwareProfile) -> ArchModel | None:
    """The first model in :func:`arch_models` that applies to ``profile``, else ``None``."""
    return next((m for m in arch_models() if m.applies_to(profile)), None)
