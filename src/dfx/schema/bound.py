"""``Bound``: what limits a piece of work. Its values are the strings documents hold under ``bound``."""

from __future__ import annotations

from enum import Enum

__all__ = ["Bound"]


class Bound(str, Enum):
    """What limits a node's time (``dfx.roofline.bound.classify`` decides it)."""

    COMPUTE = "compute"  # FLOPs / peak >= bytes / bandwidth at every level (the tie is compute)
    MEMORY = "memory"  # some level's bytes / bandwidth exceeds FLOPs / peak
    NONE = "none"  # no work: 0 FLOPs and 0 bytes (placeholders, outputs, views)

    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:  # hash as the string it equals, so "compute" and Bound.COMPUTE are one dict key
        return str.__hash__(self)
