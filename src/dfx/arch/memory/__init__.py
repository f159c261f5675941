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

from dfx.lazy import lazy_exports

# name -> the submodule that defines it, loaded on first use (dfx.lazy), so that a sweep's import of
# tiling and lifetime does not load the case studies, energy, flash and KV tables. gemms, lifetime and
# tiling stay eager: two of their names are also submodules' (an import of the submodule would
# shadow a lazy function), and every compiled point reads tiling.
from dfx.arch.memory.gemms import gemms
from dfx.arch.memory.lifetime import Lifetime, LiveRange, lifetime, live_ranges
from dfx.arch.memory.tiling import Gemm, Machine, TileChoice, choose_tile, evaluate_tile, offchip_elements

_EXPORTS = {
    "CapacityReport": "capacity",
    "capacity_report": "capacity",
    "offchip_memory": "capacity",
    "onchip_memory": "capacity",
    "AttentionBlock": "casestudy",
    "AttentionOnChip": "casestudy",
    "attention_on_chip": "casestudy",
    "render_case_study": "casestudy",
    "EnergyReport": "energy",
    "energy_report": "energy",
    "flash_accesses": "flash",
    "flash_blocks": "flash",
    "standard_accesses": "flash",
    "KvGeometry": "model_shape",
    "kv_geometry_from_config": "model_shape",
    "parameter_count_from_config": "model_shape",
}

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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
