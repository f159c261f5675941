"""Sourced energy figures: the one table the energy model reads (profiles win where they give one).

Every value is from ``../shared/reference/hardware.md`` section 13.1, Horowitz, "Computing's
Energy Problem (and what we can do about it)", ISSCC 2014, **45 nm, 0.9 V**. No scaling to a
newer process is applied: the 45 nm -> 7 nm update (Jouppi et al., ISCA 2021) was not retrieved
(hardware.md 13.3, gap 5), so absolute joules are 45 nm joules. The eager / dataflow *ratio* is
what the model is for; it depends on the ratio of DRAM to SRAM energy, which shrinks less with
the process than logic does.
"""

from __future__ import annotations

__all__ = [
    "DEVICE_PROCESS",
    "DRAM_J_PER_BYTE",
    "ENERGY_PROCESS",
    "FLOP_J",
    "SRAM_J_PER_BYTE",
    "flop_energy_j",
    "sram_energy_per_byte_j",
]

ENERGY_PROCESS = "45 nm, 0.9 V (Horowitz, ISSCC 2014); not scaled to the device's process"

_PJ = 1e-12
_WORD_BYTES = 8  # Horowitz quotes memory reads per 64-bit word

# Energy of one FLOP at a dtype. A FLOP is one add or one multiply (docs/cost-model.md), so a
# multiply-accumulate (2 FLOPs) costs mult + add and one FLOP is (mult + add) / 2.
#   fp32: (3.7 + 0.9) / 2 = 2.3 pJ      hardware.md 13.1 rows "32-bit FP mult", "32-bit FP add"
#   fp16: (1.1 + 0.4) / 2 = 0.75 pJ     rows "16-bit FP mult", "16-bit FP add"
#   int8: (0.2 + 0.03) / 2 = 0.115 pJ   rows "8-bit int mult", "8-bit int add"
#   int32: (3.1 + 0.1) / 2 = 1.6 pJ     rows "32-bit int mult", "32-bit int add"
# bf16 has no row: taken as fp16 (same width; an assumption). fp8 has no row: taken as fp16, an
# upper bound. fp64 has no row: taken as 4x fp32 (assumption: multiplier area ~ width^2).
FLOP_J: dict[str, float] = {
    "float32": (3.7 + 0.9) / 2 * _PJ,
    "float16": (1.1 + 0.4) / 2 * _PJ,
    "bfloat16": (1.1 + 0.4) / 2 * _PJ,
    "float8_e4m3fn": (1.1 + 0.4) / 2 * _PJ,
    "float8_e5m2": (1.1 + 0.4) / 2 * _PJ,
    "int8": (0.2 + 0.03) / 2 * _PJ,
    "int32": (3.1 + 0.1) / 2 * _PJ,
    "float64": 4 * (3.7 + 0.9) / 2 * _PJ,
}

# SRAM read energy per byte by array size: (capacity limit in bytes, J per byte).
#   8 KB: 10 pJ / 8 B = 1.25 pJ/B; 32 KB: 20 pJ / 8 B = 2.5 pJ/B; 1 MB: 100 pJ / 8 B = 12.5 pJ/B
# (hardware.md 13.1 rows "SRAM/cache read, 64 bit, 8 KB / 32 KB / 1 MB"). Arrays above 1 MB use
# the 1 MB figure, a lower bound: a larger array costs more per access.
SRAM_J_PER_BYTE: tuple[tuple[float, float], ...] = (
    (8 * 1024, 10 * _PJ / _WORD_BYTES),
    (32 * 1024, 20 * _PJ / _WORD_BYTES),
    (1024 * 1024, 100 * _PJ / _WORD_BYTES),
)

# DRAM (HBM, LPDDR5, DDR): 1.3-2.6 nJ per 64-bit access (hardware.md 13.1 "DRAM read, 64 bit");
# the low end, 1,300 pJ / 8 B = 162.5 pJ/B, so the eager/dataflow ratio is not overstated.
DRAM_J_PER_BYTE = 1300 * _PJ / _WORD_BYTES

# The process each shipped device is built in (hardware.md rows "Process" / "Die"); reported
# beside the energies so the 45 nm assumption is visible. None where the reference has no row.
DEVICE_PROCESS: dict[str, str] = {
    "nvidia-a100-sxm-80gb": "7 nm (TSMC N7)",
    "nvidia-h100-sxm": "4 nm (TSMC 4N)",
    "nvidia-h200": "4 nm (TSMC 4N)",
    "google-tpu-v4": "7 nm",
    "groq-lpu": "14 nm",
    "cerebras-wse-2": "7 nm",
    "cerebras-wse-3": "5 nm",
    "ibm-spyre": "5 nm",
}


def flop_energy_j(dtype: str) -> float:
    """Joules per FLOP at ``dtype`` (45 nm); unknown dtypes use fp32, the widest common row.

    Examples
    --------
    >>> round(flop_energy_j("float16") * 1e12, 3)
    0.75
    """
    return FLOP_J.get(dtype, FLOP_J["float32"])


def sram_energy_per_byte_j(array_bytes: float) -> float:
    """Joules per byte read from an SRAM array of ``array_bytes`` (one instance, e.g. one core's).

    Examples
    --------
    >>> sram_energy_per_byte_j(2 * 1024 * 1024) * 1e12
    12.5
    """
    for limit, j in SRAM_J_PER_BYTE:
        if array_bytes <= limit:
            return j
    return SRAM_J_PER_BYTE[-1][1]
