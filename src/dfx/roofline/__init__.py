"""Roofline: ridge points per memory level, each node's bound and latency, one graph on one profile.

The entry point is :func:`evaluate`::

    result = dfx.roofline.evaluate(costed_graph, load_profile("h100"))
    result.to_dict()   # the export fields under hardware.<id>

Plain Python: no torch.
"""

from dfx.roofline.bound import Bound, classify, ridge_point, ridge_points
from dfx.roofline.evaluate import BoundShift, HardwareResult, evaluate, partition_shift
from dfx.roofline.execution import (
    ExecutionModel,
    default_execution_model,
    home_level,
    level_traffic,
    parse_execution_model,
    working_set_bytes,
)
from dfx.roofline.latency import NodeTiming, node_timing
from dfx.roofline.program import KernelTiming, ProgramResult, evaluate_program

__all__ = [
    "Bound",
    "BoundShift",
    "ExecutionModel",
    "HardwareResult",
    "KernelTiming",
    "NodeTiming",
    "classify",
    "default_execution_model",
    "evaluate",
    "evaluate_program",
    "home_level",
    "level_traffic",
    "node_timing",
    "parse_execution_model",
    "partition_shift",
    "ProgramResult",
    "ridge_point",
    "ridge_points",
    "working_set_bytes",
]
