"""One large GEMM split over the chips of a pod, with the interconnect (ICI) cost of the result.

Stated model, for ``p`` chips on a ring (one torus dimension) of links of one-way bandwidth ``beta``
and per-hop latency ``h``; ``Y = X[M, K] @ W[K, N]`` of ``word_bytes`` words:

============  ========================================  ==========================================
axis          each chip computes                        then
============  ========================================  ==========================================
``m``         ``X[ceil(M/p), K] @ W``  (W replicated)   ring all-gather of Y: ``(p-1)/p * |Y|/beta``
``n``         ``X @ W[K, ceil(N/p)]``  (X replicated)   ring all-gather of Y: ``(p-1)/p * |Y|/beta``
``k``         ``X[M, K/p] @ W[K/p, N]`` (partial sums)  ring all-reduce: ``2(p-1)/p * |Y|/beta``
============  ========================================  ==========================================

plus ``(p - 1) * h`` (all-gather) or ``2(p - 1) * h`` (all-reduce) of hop latency; communication
does not overlap compute (an upper bound). Ring collectives: concepts.md (d), "Modelling ICI".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from dfx.arch.systolic.chip import ChipGemm, MxuSpec, chip_gemm, mxu_spec
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile, load_profile

__all__ = ["ShardAxis", "ShardedGemm", "sharded_gemm"]


class ShardAxis(Enum):
    """Which GEMM dimension is split across the chips."""

    M = "m"
    N = "n"
    K = "k"


_RING_PASSES = {ShardAxis.M: 1, ShardAxis.N: 1, ShardAxis.K: 2}  # all-gather: 1 pass; all-reduce: 2


@dataclass(frozen=True)
class ShardedGemm:
    """The split GEMM: one chip's share, the collective, and the total."""

    chips: int
    axis: ShardAxis
    per_chip: ChipGemm
    compute_time_s: float
    comm_bytes_per_chip: float  # bytes each chip sends
    comm_time_s: float
    single_chip_time_s: float

    @property
    def total_time_s(self) -> float:
        return self.compute_time_s + self.comm_time_s

    @property
    def speedup(self) -> float:
        return self.single_chip_time_s / self.total_time_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "chips": self.chips,
            "axis": self.axis.value,
            "per_chip": self.per_chip.to_dict(),
            "compute_time_s": self.compute_time_s,
            "comm_bytes_per_chip": self.comm_bytes_per_chip,
            "comm_time_s": self.comm_time_s,
            "total_time_s": self.total_time_s,
            "single_chip_time_s": self.single_chip_time_s,
            "speedup": self.speedup,
        }


def _spec(hw: HardwareProfile | MxuSpec | str) -> MxuSpec:
    if isinstance(hw, MxuSpec):
        return hw
    profile = hw if isinstance(hw, HardwareProfile) else load_profile(hw)
    spec = mxu_spec(profile)
    if spec is None:
        raise DfxError(f"profile {profile.id!r} has no matrix units with an array size (compute.units, array_rows)")
    return spec


def sharded_gemm(
    m: int,
    k: int,
    n: int,
    *,
    chips: int,
    hw: HardwareProfile | MxuSpec | str,
    ici_bandwidth_bytes_per_s: float,
    axis: ShardAxis | str = ShardAxis.M,
    word_bytes: int = 2,
    hop_latency_s: float = 0.0,
) -> ShardedGemm:
    """Time of ``[m, k] @ [k, n]`` split over ``chips`` chips, gathering (or reducing) the result.

    Parameters
    ----------
    m, k, n : int
    chips : int
    hw : profile, profile id, or MxuSpec
        The chip (units, array size, clock), e.g. ``"google-tpu-v4"``.
    ici_bandwidth_bytes_per_s : float
        One-way bandwidth of one ICI link (TPU v4: 45e9, hardware.md section 4).
    axis : ShardAxis or {"m", "n", "k"}
    word_bytes : int
        Bytes per element of Y (bf16: 2).
    hop_latency_s : float
        Per-hop latency (v5e: about 1e-6, hardware.md section 5).

    Examples
    --------
    >>> spec = MxuSpec(units=1, rows=128, cols=128, clock_hz=1e9, clock_source="profile")
    >>> s = sharded_gemm(1024, 128, 128, chips=4, hw=spec, ici_bandwidth_bytes_per_s=1e9)
    >>> s.per_chip.m, s.comm_bytes_per_chip  # 3/4 of the 1024*128*2-byte result
    (256, 196608.0)
    """
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 1:
        raise DfxError(f"chips must be an integer >= 1, got {chips!r}")
    if not (ici_bandwidth_bytes_per_s > 0 and math.isfinite(ici_bandwidth_bytes_per_s)):
        raise DfxError(f"ici_bandwidth_bytes_per_s must be positive, got {ici_bandwidth_bytes_per_s!r}")
    try:
        ax = axis if isinstance(axis, ShardAxis) else ShardAxis(str(axis).lower())
    except ValueError:
        raise DfxError(f"unknown shard axis {axis!r}: use m, n or k") from None
    spec = _spec(hw)
    size = {"m": m, "k": k, "n": n}
    size[ax.value] = math.ceil(size[ax.value] / chips)
    part = chip_gemm(size["m"], size["k"], size["n"], spec)
    passes = _RING_PASSES[ax]
    comm_bytes = passes * (chips - 1) / chips * m * n * word_bytes
    comm_time = comm_bytes / ici_bandwidth_bytes_per_s + passes * (chips - 1) * hop_latency_s
    single = chip_gemm(m, k, n, spec).time_s
    return ShardedGemm(chips, ax, part, part.time_s, comm_bytes, comm_time, single)
