"""Does a model fit on chip? Weights, activations and KV cache against on- and off-chip capacity.

Derivation for the headline case (Llama-2-70B, bf16, one Groq LPU):
``parameter_bytes = 2 B * 68,976,648,192 = 137,953,296,384 B``; the profile's on-chip SRAM is
220 MiB = 230,686,720 B (the ISCA 2022 figure; the product brief's 230 MB is 230,000,000 B), so
``chips_needed = ceil(137,953,296,384 / 230,686,720) = ceil(598.01) = 599`` (600 with 230e6 B).

Placement for the spill report is in priority order: weights, then the KV cache, then activations
fill the on-chip capacity of one chip; whatever is left over spills to the off-chip level (or, on
a device with no off-chip memory such as Groq, to other chips).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.hardware import HardwareProfile, MemoryLevel
from dfx.schema.ids import CAPACITY_SCHEMA

__all__ = ["CapacityReport", "capacity_report", "offchip_memory", "onchip_memory"]


def onchip_memory(profile: HardwareProfile) -> MemoryLevel | None:
    """The largest on-chip level with a known capacity (its bandwidth may be unpublished)."""
    levels = [lv for lv in profile.memory if lv.on_chip and lv.capacity_bytes]
    return max(levels, key=lambda lv: lv.capacity_bytes, default=None)


def offchip_memory(profile: HardwareProfile) -> MemoryLevel | None:
    """The nearest off-chip level with a known capacity (HBM, LPDDR5); ``None`` on Groq."""
    return next((lv for lv in profile.memory if not lv.on_chip and lv.capacity_bytes), None)


@dataclass(frozen=True)
class CapacityReport:
    """A model's memory footprint against one device.

    Attributes
    ----------
    parameter_count, parameter_bytes : int
        Unique parameters (a tied weight once) and their bytes at ``dtype`` (plus buffers for
        captured models).
    activation_bytes : int
        Peak live activation bytes over the topological schedule (:mod:`.lifetime`).
    kv_cache_bytes : int
        ``2 * layers * batch * seq * kv_heads * head_dim * itemsize``.
    onchip_capacity_bytes, onchip_per_core_bytes, offchip_capacity_bytes : float or None
        One chip's on-chip capacity, one core's share, and off-chip capacity.
    fits_on_chip : bool
        Weights + KV cache + activations fit one chip's on-chip memory.
    chips_needed, cores_needed : int or None
        ``ceil(parameter_bytes / capacity)``: chips (or cores) to hold the weights on chip.
    spill_bytes : dict
        Bytes of ``weights``, ``kv_cache``, ``activations`` that do not fit on one chip.
    """

    model: str
    hardware: str
    dtype: str
    batch: int
    seq: int
    parameter_count: int
    parameter_bytes: int
    activation_bytes: int
    kv_cache_bytes: int
    onchip_level: str | None
    onchip_capacity_bytes: float | None
    onchip_per_core_bytes: float | None
    offchip_level: str | None
    offchip_capacity_bytes: float | None
    kv: dict[str, Any]
    sources: dict[str, str]

    @property
    def total_bytes(self) -> int:
        return self.parameter_bytes + self.kv_cache_bytes + self.activation_bytes

    @property
    def fits_on_chip(self) -> bool:
        return self.onchip_capacity_bytes is not None and self.total_bytes <= self.onchip_capacity_bytes

    @property
    def chips_needed(self) -> int | None:
        if not self.onchip_capacity_bytes:
            return None
        return max(1, math.ceil(self.parameter_bytes / self.onchip_capacity_bytes))

    @property
    def cores_needed(self) -> int | None:
        if not self.onchip_per_core_bytes:
            return None
        return max(1, math.ceil(self.parameter_bytes / self.onchip_per_core_bytes))

    @property
    def spill_bytes(self) -> dict[str, int]:
        free = self.onchip_capacity_bytes or 0.0
        out = {}
        for name, size in (
            ("weights", self.parameter_bytes),
            ("kv_cache", self.kv_cache_bytes),
            ("activations", self.activation_bytes),
        ):
            kept = min(size, max(free, 0.0))
            out[name] = int(size - kept)
            free -= kept
        return out

    @property
    def spills_to(self) -> str:
        if self.offchip_level is not None:
            fits = self.total_bytes <= (self.offchip_capacity_bytes or 0)
            return self.offchip_level if fits else f"{self.offchip_level} (too small: more devices needed)"
        return "other chips (no off-chip memory)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": CAPACITY_SCHEMA,
            "model": self.model,
            "hardware": self.hardware,
            "dtype": self.dtype,
            "batch": self.batch,
            "seq": self.seq,
            "parameter_count": self.parameter_count,
            "parameter_bytes": self.parameter_bytes,
            "activation_bytes": self.activation_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "total_bytes": self.total_bytes,
            "onchip_level": self.onchip_level,
            "onchip_capacity_bytes": self.onchip_capacity_bytes,
            "onchip_per_core_bytes": self.onchip_per_core_bytes,
            "offchip_level": self.offchip_level,
            "offchip_capacity_bytes": self.offchip_capacity_bytes,
            "fits_on_chip": self.fits_on_chip,
            "chips_needed": self.chips_needed,
            "cores_needed": self.cores_needed,
            "spill_bytes": self.spill_bytes,
            "spills_to": self.spills_to if any(self.spill_bytes.values()) else None,
            "kv": self.kv,
            "sources": self.sources,
        }


def capacity_report(
    profile: HardwareProfile,
    *,
    model: str,
    dtype: str,
    batch: int,
    seq: int,
    parameter_count: int,
    parameter_bytes: int,
    activation_bytes: int,
    kv_cache_bytes: int,
    kv: dict[str, Any] | None = None,
    sources: dict[str, str] | None = None,
) -> CapacityReport:
    """Put a model's byte counts against ``profile``'s memories (pure: no capture).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> r = capacity_report(load_profile("groq-lpu"), model="70b", dtype="bfloat16", batch=1, seq=1,
    ...                     parameter_count=68_976_648_192, parameter_bytes=2 * 68_976_648_192,
    ...                     activation_bytes=0, kv_cache_bytes=0)
    >>> r.chips_needed, r.fits_on_chip
    (599, False)
    """
    on, off = onchip_memory(profile), offchip_memory(profile)
    return CapacityReport(
        model=model,
        hardware=profile.id,
        dtype=dtype,
        batch=batch,
        seq=seq,
        parameter_count=parameter_count,
        parameter_bytes=parameter_bytes,
        activation_bytes=activation_bytes,
        kv_cache_bytes=kv_cache_bytes,
        onchip_level=on.name if on else None,
        onchip_capacity_bytes=on.capacity_bytes if on else None,
        onchip_per_core_bytes=on.capacity_per_instance_bytes if on else None,
        offchip_level=off.name if off else None,
        offchip_capacity_bytes=off.capacity_bytes if off else None,
        kv=kv or {},
        sources=sources or {},
    )
