"""Spatial and statically scheduled architectures: the Groq TSP, the Cerebras wafer, the landscape.

- :mod:`~dfx.arch.spatial.tsp` and :mod:`~dfx.arch.spatial.groq`: one TSP's cycles per node, chips
  needed, the pipeline across chips, tokens per second; :mod:`~dfx.arch.spatial.groq_schedule`:
  the deterministic compile-time schedule.
- :mod:`~dfx.arch.spatial.wafer`: layer-pipelined mapping on a wafer, weight streaming.
- :mod:`~dfx.arch.spatial.landscape`: the six-dimension table and the 2-D design-space map.

See ``docs/spatial.md``.
"""

import importlib
from typing import Any

from dfx.arch.spatial.landscape import DIMENSIONS, landscape

# name -> the submodule that defines it, imported on first use (PEP 562): `import dfx.cli` registers
# every command and imports this package, and a sweep worker imports it for one model
_EXPORTS = {
    "GroqModel": "groq",
    "chips_needed": "groq",
    "decoder_throughput": "groq",
    "compile_schedule": "groq_schedule",
    "WaferModel": "wafer",
    "map_graph": "wafer",
    "map_layers": "wafer",
}


def __getattr__(name: str) -> Any:
    """A public name of a submodule, imported on first use (``AttributeError`` for any other name)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "DIMENSIONS",
    "GroqModel",
    "WaferModel",
    "chips_needed",
    "compile_schedule",
    "decoder_throughput",
    "landscape",
    "map_graph",
    "map_layers",
]
