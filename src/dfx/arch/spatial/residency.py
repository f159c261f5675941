"""Whether a spatial chip keeps a model's weights on chip between runs (the steady-state convention).

- **Groq TSP**: always. The chips' SRAM is the only memory (ISCA 2022: no DRAM), so every weight
  lives in the SRAM of the chip that uses it (:func:`dfx.arch.spatial.groq.chip_assignment`).
- **Cerebras wafer**: in layer-pipelined mode (every layer's weights fit its region's SRAM,
  :func:`dfx.arch.spatial.wafer.map_graph`). In weight-streaming mode the weights come from MemoryX on
  every run, so they are per-run off-chip traffic.
- Every other profile: no (weights in HBM or DRAM).

Where the weights are resident, dfx quotes the *steady state*: one inference reads its weights from
SRAM; loading them once (``weight_load_s``: unique weight bytes / the off-chip bandwidth) is reported
beside the latency, never in it (``docs/compile.md``, "Weights resident on chip").
"""

from __future__ import annotations

from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["spatial_model", "weight_load_s", "weights_resident"]


def spatial_model(profile: HardwareProfile):
    """The Groq or Cerebras model that applies to ``profile``, else ``None``."""
    from dfx.arch.spatial.groq import GroqModel
    from dfx.arch.spatial.wafer import WaferModel

    return next((m for m in (GroqModel(), WaferModel()) if m.applies_to(profile)), None)


def weights_resident(costed: CostedGraph, profile: HardwareProfile) -> bool:
    """Whether ``profile``'s architecture model keeps ``costed``'s weights on chip (module docstring).

    >>> from dfx.costs import annotate
    >>> from dfx.hardware import load_profile
    >>> from dfx.ir import Graph
    >>> empty = annotate(Graph(name="empty", nodes=()))
    >>> weights_resident(empty, load_profile("groq-lpu")), weights_resident(empty, load_profile("h100"))
    (True, False)
    """
    from dfx.arch.spatial.wafer import WaferMode, WaferModel, map_graph

    model = spatial_model(profile)
    if model is None:
        return False
    if isinstance(model, WaferModel):
        return map_graph(costed, profile).mode is WaferMode.LAYER_PIPELINED
    return True


def weight_load_s(costed: CostedGraph, profile: HardwareProfile) -> float:
    """Seconds to load the unique weights once over the profile's off-chip level (Groq: its C2C links,
    Cerebras: MemoryX); 0 when the profile has no off-chip level with a bandwidth."""
    off = profile.off_chip_level()
    if off is None or not off.bandwidth_bytes_per_s:
        return 0.0
    return costed.unique_parameter_bytes() / off.bandwidth_bytes_per_s
