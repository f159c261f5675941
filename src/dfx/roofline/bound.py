"""Ridge points and the compute/memory bound of a piece of work.

The ridge point of a memory level is ``peak FLOP/s / bandwidth`` (FLOP/byte): work whose
arithmetic intensity (FLOPs / bytes) is below it is memory-bound against that level. At exactly
the ridge both take the same time; dfx calls that **compute-bound** (the compute units are fully
used, so no faster memory would help).
"""

from __future__ import annotations

from dfx.hardware import HardwareProfile
from dfx.schema.bound import Bound  # the document's vocabulary, owned by dfx.schema

__all__ = ["Bound", "classify", "ridge_point", "ridge_points"]


def ridge_point(peak_flop_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """``peak / bandwidth`` in FLOP/byte.

    Examples
    --------
    >>> round(ridge_point(989.4e12, 3.35e12), 1)  # H100 bf16 dense over HBM3
    295.3
    """
    return peak_flop_per_s / bandwidth_bytes_per_s


def classify(flops: float, bytes_: float, peak_flop_per_s: float, bandwidth_bytes_per_s: float) -> Bound:
    """Whether ``flops`` FLOPs moving ``bytes_`` bytes are compute- or memory-bound.

    Compute-bound iff ``flops / peak >= bytes / bandwidth``, i.e. intensity >= ridge, computed
    as ``flops * bandwidth >= bytes * peak`` so no quotient is rounded. A tie is compute-bound.
    No work at all (0 FLOPs, 0 bytes) is :attr:`Bound.NONE`.

    Examples
    --------
    >>> classify(100, 1, 1000.0, 10.0)  # intensity 100 == ridge 1000 / 10: the tie is compute
    <Bound.COMPUTE: 'compute'>
    >>> classify(99, 1, 1000.0, 10.0)
    <Bound.MEMORY: 'memory'>
    """
    if flops == 0 and bytes_ == 0:
        return Bound.NONE
    return Bound.COMPUTE if flops * bandwidth_bytes_per_s >= bytes_ * peak_flop_per_s else Bound.MEMORY


def ridge_points(profile: HardwareProfile, dtype: str) -> dict[str, float]:
    """Ridge point (FLOP/byte) of every memory level with a known bandwidth, at ``dtype``'s peak.

    The peak falls back as :meth:`HardwareProfile.peak` describes when the profile lacks ``dtype``.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> {k: round(v, 1) for k, v in ridge_points(load_profile("h100"), "bf16").items()}
    {'L2': 179.9, 'HBM3': 295.3}
    """
    peak = profile.peak(dtype).flop_per_s
    return {lv.name: ridge_point(peak, lv.bandwidth_bytes_per_s) for lv in profile.memory if lv.bandwidth_bytes_per_s}
