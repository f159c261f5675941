"""A TPU pod or slice as a torus of chips: its chips, peak, diameter in hops and bisection bandwidth.

Chips sit on a ``d_1 x d_2 x ... `` grid, each linked to its neighbours along every axis, with
wraparound links closing each axis into a ring (TPU v4's 3-D ICI torus; v5e and v6e's 2-D one;
Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer", ISCA 2023; Google Cloud TPU
docs, "TPU v4" and "system architecture")::

    chips      = prod(d_i)
    peak       = chips * one chip's peak                      (dense, at the profile's dtype)
    diameter   = sum(floor(d_i / 2)) hops                     (a ring of d chips: d // 2 hops at most)
                 sum(d_i - 1) without wraparound (a mesh)
    bisection  = links cut by the plane halving the longest axis:
                 (chips / d_max) * 2 (the ring crosses the plane twice; once in a mesh, or if d_max = 2)
                 times one link's one-way bandwidth, times 2 directions

NB: the bisection is counted in both directions (what crosses the cut per second, either way);
halve it for one direction. A slice is taken to have wraparound links on every axis, as TPU v4
slices built of whole 4 x 4 x 4 cubes do through the optical switches; pass ``wraparound=False``
for a mesh.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.errors import DfxError
from dfx.hardware import HardwareProfile

__all__ = ["Torus", "parse_dims", "torus_of"]

_DIRECTIONS = 2  # a link carries its bandwidth each way at once (ICI is full duplex)


@dataclass(frozen=True)
class Torus:
    """``dims`` chips along each axis, each ``chip_peak_flop_per_s``; links of ``link_bytes_per_s`` one way."""

    dims: tuple[int, ...]
    chip_peak_flop_per_s: float
    peak_dtype: str
    link_bytes_per_s: float | None = None
    wraparound: bool = True

    @property
    def chips(self) -> int:
        return math.prod(self.dims)

    @property
    def peak_flop_per_s(self) -> float:
        return self.chips * self.chip_peak_flop_per_s

    @property
    def diameter_hops(self) -> int:
        """The most links between two chips on a shortest path."""
        return sum(d // 2 if self.wraparound else d - 1 for d in self.dims)

    @property
    def bisection_links(self) -> int:
        """Links cut by the plane that halves the longest axis."""
        longest = max(self.dims)
        if longest < 2:
            return 0
        crossings = 2 if self.wraparound and longest > 2 else 1
        return self.chips // longest * crossings

    @property
    def bisection_bytes_per_s(self) -> float | None:
        """Bisection bandwidth, both directions; ``None`` where the link bandwidth is unknown."""
        if self.link_bytes_per_s is None:
            return None
        return self.bisection_links * self.link_bytes_per_s * _DIRECTIONS

    def to_dict(self) -> dict[str, Any]:
        return {
            "dims": list(self.dims),
            "chips": self.chips,
            "wraparound": self.wraparound,
            "peak_dtype": self.peak_dtype,
            "peak_flop_per_s": self.peak_flop_per_s,
            "diameter_hops": self.diameter_hops,
            "bisection_links": self.bisection_links,
            "link_bytes_per_s": self.link_bytes_per_s,
            "bisection_bytes_per_s": self.bisection_bytes_per_s,
        }


def parse_dims(text: str) -> tuple[int, ...]:
    """``"4x4x8"`` -> ``(4, 4, 8)``.

    Raises
    ------
    DfxError
        Not positive integers joined by ``x``.
    """
    parts = text.lower().replace("×", "x").split("x")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise DfxError(f"--slice wants chips per axis joined by 'x' (e.g. 4x4x8), got {text!r}")
    return tuple(int(p) for p in parts)


def torus_of(
    profile: HardwareProfile, dims: tuple[int, ...] | None = None, *, dtype: str = "bfloat16", wraparound: bool = True
) -> Torus:
    """The torus of ``profile``'s pod (``interconnect.torus_dims``), or of a slice ``dims`` of it.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> t = torus_of(load_profile("tpu-v4"), (4, 4, 8))
    >>> t.chips, t.diameter_hops, t.peak_flop_per_s / 1e15      # 2 + 2 + 4 hops; 128 x 275 TFLOP/s
    (128, 8, 35.2)

    Raises
    ------
    DfxError
        A profile with no torus, or a slice with other axes than the pod's or larger than it.
    """
    ic = profile.interconnect
    if ic is None or not ic.torus_dims:
        raise DfxError(f"profile {profile.id!r} has no torus (interconnect.torus_dims); use a TPU profile")
    pod = tuple(ic.torus_dims)
    dims = pod if dims is None else tuple(dims)
    if len(dims) != len(pod) or any(d > p for d, p in zip(sorted(dims), sorted(pod))):
        shape = "x".join(map(str, pod))
        raise DfxError(f"a slice of {'x'.join(map(str, dims))} chips does not fit {profile.id}'s {shape} torus")
    peak = profile.peak(dtype)
    return Torus(dims, peak.flop_per_s, peak.used, ic.link_bytes_per_s, wraparound)
