"""Spatial and statically scheduled architectures: the Groq TSP, the Cerebras wafer, the landscape.

- :mod:`~dfx.arch.spatial.tsp` and :mod:`~dfx.arch.spatial.groq`: one TSP's cycles per node, chips
  needed, the pipeline across chips, tokens per second; :mod:`~dfx.arch.spatial.groq_schedule`:
  the deterministic compile-time schedule.
- :mod:`~dfx.arch.spatial.wafer`: layer-pipelined mapping on a wafer, weight streaming.
- :mod:`~dfx.arch.spatial.landscape`: the six-dimension table and the 2-D design-space map.

See ``docs/spatial.md``.
"""

from dfx.arch.spatial.groq import GroqModel, chips_needed, decoder_throughput
from dfx.arch.spatial.groq_schedule import compile_schedule
from dfx.arch.spatial.landscape import DIMENSIONS, landscape
from dfx.arch.spatial.wafer import WaferModel, map_graph, map_layers

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
