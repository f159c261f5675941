"""Hardware profiles: typed, validated, one file per device, every number with its source.

>>> from dfx.hardware import load_profile
>>> p = load_profile("h100")
>>> p.peak_flop_per_s["bfloat16"], p.off_chip_level().bandwidth_bytes_per_s
(989400000000000.0, 3350000000000.0)
"""

from dfx.hardware.cores import restrict_to_cores
from dfx.hardware.errors import HardwareProfileError
from dfx.hardware.loader import list_profiles, load_profile, parse_profile, profile_ids
from dfx.hardware.quick import is_quick_spec, quick_profile
from dfx.hardware.schema import (
    Commitment,
    Compute,
    Design,
    Determinism,
    ExecutionLayers,
    HardwareProfile,
    Kind,
    Managed,
    MemoryLevel,
    MemoryModel,
    PeakLookup,
    Scheduling,
)
from dfx.hardware.units import accepted_units, parse_quantity

__all__ = [
    "Commitment",
    "Compute",
    "Design",
    "Determinism",
    "ExecutionLayers",
    "HardwareProfile",
    "HardwareProfileError",
    "Kind",
    "Managed",
    "MemoryLevel",
    "MemoryModel",
    "PeakLookup",
    "Scheduling",
    "accepted_units",
    "list_profiles",
    "load_profile",
    "parse_profile",
    "parse_quantity",
    "profile_ids",
    "is_quick_spec",
    "quick_profile",
    "restrict_to_cores",
]
