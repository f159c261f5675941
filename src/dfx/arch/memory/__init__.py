"""On-chip memory models: SRAM capacity, scratchpad tiling, data lifetime, energy, attention tiling.

Plain Python over the IR and hardware profiles; only :mod:`.api` (inside its functions) captures
models. See ``docs/memory.md`` for the formulas, sources and export fields.

>>> from dfx.arch.memory import Gemm, Machine, choose_tile
>>> spyre = Machine(scratchpad_bytes=2e6, cores=32, peak_flop_per_s=75e12, offchip_bytes_per_s=150e9,
...                 granule_m=8, granule_n=8, granule_k=8)
>>> t = choose_tile(Gemm(4096, 4096, 4096), spyre)
>>> (t.tm, t.tn), round(t.intensity, 1)
((512, 1024), 315.1)
"""

from dfx.arch.memory.capacity import CapacityReport, capacity_report, offchip_memory, onchip_memory
from dfx.arch.memory.casestudy import AttentionBlock, AttentionOnChip, attention_on_chip, render_case_study
from dfx.arch.memory.energy import EnergyReport, energy_report
from dfx.arch.memory.flash import flash_accesses, flash_blocks, standard_accesses
from dfx.arch.memory.gemms import gemms
from dfx.arch.memory.lifetime import Lifetime, LiveRange, lifetime, live_ranges
from dfx.arch.memory.model_shape import KvGeometry, kv_geometry_from_config, parameter_count_from_config
from dfx.arch.memory.tiling import Gemm, Machine, TileChoice, choose_tile, evaluate_tile, offchip_elements

__all__ = [
    "AttentionBlock",
    "AttentionOnChip",
    "CapacityReport",
    "EnergyReport",
    "Gemm",
    "KvGeometry",
    "Lifetime",
    "LiveRange",
    "Machine",
    "TileChoice",
    "attention_on_chip",
    "capacity_report",
    "choose_tile",
    "energy_report",
    "evaluate_tile",
    "flash_accesses",
    "flash_blocks",
    "gemms",
    "kv_geometry_from_config",
    "lifetime",
    "live_ranges",
    "offchip_elements",
    "offchip_memory",
    "onchip_memory",
    "parameter_count_from_config",
    "render_case_study",
    "standard_accesses",
]
