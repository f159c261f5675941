"""The roofs of each profile: peak FLOP/s and one bandwidth per memory level.

The export document carries each level's ridge point (peak / bandwidth) but not the peak or the
bandwidths themselves. :func:`roofs_for` reads them from the document where a later writer adds
them (``hardware.<id>.peak_flop_per_s`` and ``hardware.<id>.bandwidth_bytes_per_s``), else from the
shipped profile of the same id (the one adapter to ``dfx.hardware``), else derives the peak from
the nodes' compute times (``flops / compute_time_s``) and each bandwidth as peak / ridge.
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.viz.document import HwSummary

__all__ = ["Roofs", "roofs_for"]


@dataclass(frozen=True)
class Roofs:
    """A profile's roofline: the compute roof and a bandwidth roof per level with a ridge."""

    peak_flop_per_s: float
    bandwidth_bytes_per_s: dict[str, float]
    ridge_flop_per_byte: dict[str, float]
    source: str  # "document", "profile" or "derived"


def _from_profile(hw: HwSummary) -> dict[str, float] | None:
    """Level name -> bandwidth from the shipped profile ``hw.id``; None if it cannot be loaded."""
    try:
        from dfx.hardware import load_profile

        profile = load_profile(hw.id).to_si_dict()
    except Exception:  # a user's own profile file, not shipped: fall back to the document
        return None
    bws = {m["name"]: m["bandwidth_bytes_per_s"] for m in profile.get("memory", ()) if m.get("bandwidth_bytes_per_s")}
    return bws if set(hw.ridge_flop_per_byte) <= set(bws) else None


def _derived_peak(hw: HwSummary) -> float:
    """The peak at the ridge dtype from the nodes that ran at it: ``flops / compute_time_s``."""
    want = hw.dtype_fallbacks.get(hw.ridge_dtype, hw.ridge_dtype)
    rates = [n.flops / n.compute_time_s for n in hw.nodes.values() if n.compute_time_s > 0 and n.peak_dtype == want]
    return max(rates, default=0.0)


def roofs_for(hw: HwSummary) -> Roofs:
    """The roofs of profile ``hw``; every bandwidth satisfies ``peak / bandwidth == ridge``."""
    ridges = hw.ridge_flop_per_byte
    if hw.peak_flop_per_s is not None and hw.bandwidth_bytes_per_s is not None:
        return Roofs(hw.peak_flop_per_s, dict(hw.bandwidth_bytes_per_s), ridges, "document")
    bws = _from_profile(hw)
    if bws and ridges:
        level = next(iter(ridges))
        peak = ridges[level] * bws[level]
        return Roofs(peak, {k: bws[k] for k in ridges}, ridges, "profile")
    peak = _derived_peak(hw)
    return Roofs(peak, {k: peak / r for k, r in ridges.items() if r > 0}, ridges, "derived")
