"""Architecture models: the TPU systolic array, the Groq TSP, the Cerebras wafer (and the GPU kernel model).

An architecture model re-times the nodes it knows how to model (a matmul on a systolic array, a
layer on a wafer region) and may add export fields (a wafer mapping, a chip count). It plugs into
:func:`dfx.roofline.evaluate` through ``node_timer``; each machine family's target picks its model
(:meth:`dfx.targets.Target.arch_model`). Nodes a model does not cover keep their roofline time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:  # names for the protocol's signatures only: importing dfx.arch stays light
    from dfx.costs.record import CostedGraph, CostedNode
    from dfx.hardware import HardwareProfile
    from dfx.roofline.latency import NodeTiming

__all__ = ["ArchModel"]


class ArchModel(Protocol):
    """What an architecture model provides to the analysis of one profile."""

    name: str
    # Whether node_timer times each operator whole (on-chip traffic included), so that a compiled
    # kernel's time is the sum of its nodes' (the Groq TSP, the Cerebras wafer); absent means False.
    times_operators: bool

    def applies_to(self, profile: HardwareProfile) -> bool:
        """Whether ``profile`` (of the family whose target asks) gives the figures this model needs."""

    def node_timer(
        self, costed: CostedGraph, profile: HardwareProfile
    ) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
        """A function re-timing the nodes this model covers; others pass through unchanged."""

    def extras(self, costed: CostedGraph, profile: HardwareProfile) -> dict[str, Any]:
        """Export fields this model adds under ``hardware.<id>`` (may be empty)."""
