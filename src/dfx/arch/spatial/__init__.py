"""Spatial and statically scheduled architectures: the Groq TSP, the Cerebras wafer, the landscape.

- :mod:`~dfx.arch.spatial.tsp` and :mod:`~dfx.arch.spatial.groq`: one TSP's cycles per node, chips
  needed, the pipeline across chips, tokens per second; :mod:`~dfx.arch.spatial.groq_schedule`:
  the deterministic compile-time schedule.
- :mod:`~dfx.arch.spatial.wafer`: layer-pipelined mapping on a wafer, weight streaming.
- :mod:`~dfx.arch.spatial.landscape`: the six-dimension table and the 2-D design-space map.

See ``docs/spatial.md``.
"""

from dfx.lazy import lazy_exports

from dfx.arch.spatial.landscape import DIMENSIONS, landscape

# name -> the submodule that defines it, imported on first use (dfx.lazy)
_EXPORTS = {
    "GroqModel": "groq_model",
    "chips_needed": "groq",
    "decoder_throughput": "groq",
    "compile_schedule": "groq_schedule",
    "WaferModel": "wafer",
    "map_graph": "wafer",
    "map_layers": "wafer",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


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
