"""Many chips: a parallel plan, collectives over each profile's interconnect, and placement.

- :mod:`~dfx.parallel.plan`: ``ParallelPlan(tp, pp, ep)``, ``--parallel tp=8,pp=2``, the fewest
  chips that hold a model (from ``dfx capacity``'s numbers).
- :mod:`~dfx.parallel.collectives`: all-reduce, all-gather, reduce-scatter, all-to-all, send/recv
  time on a ring (or directly, on Groq's Dragonfly) from the profile's ``interconnect``.
- :mod:`~dfx.parallel.place`: one chip's result split over the plan's chips: latency and a
  per-chip timeline of compute and communication (export fields ``chips``, ``parallel``).
- :mod:`~dfx.parallel.shard`: each matmul node's Megatron-LM share (columns, rows or heads, read
  from the data flow) timed by the machine's own model of the sharded shape (GPU tile waves, TPU
  MXU folds), else the roofline's ``1/tp``.
- :mod:`~dfx.parallel.data`: a training step over ``dp`` data-parallel replicas: DDP's gradient
  all-reduce or FSDP's all-gathers and reduce-scatters, hidden behind the compute of their phase
  (``parallel.data_parallel``).

See ``docs/parallel.md``.
"""

from dfx.parallel.collectives import Collective, collective_s, interconnect_of
from dfx.parallel.data import DataParallelStep, data_parallel_step
from dfx.parallel.place import ParallelResult, Span, layer_of, place
from dfx.parallel.plan import (
    ParallelPlan,
    TrainingMemory,
    default_plan,
    default_training_plan,
    fewest_chips,
    parse_parallel,
    plan_for_chips,
    training_memory,
)

__all__ = [
    "Collective",
    "DataParallelStep",
    "ParallelPlan",
    "ParallelResult",
    "Span",
    "TrainingMemory",
    "collective_s",
    "data_parallel_step",
    "default_plan",
    "default_training_plan",
    "fewest_chips",
    "interconnect_of",
    "layer_of",
    "parse_parallel",
    "place",
    "plan_for_chips",
    "training_memory",
]
