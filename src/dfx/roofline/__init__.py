"""Roofline: ridge points per memory level, each node's bound and latency, one graph on one profile.

The entry point is :func:`evaluate`::

    result = dfx.roofline.evaluate(costed_graph, load_profile("h100"))
    result.to_dict()   # the export fields under hardware.<id>

Plain Python: no torch.
"""

from dfx.roofline.bound import Bound, classify, ridge_point, ridge_points
from dfx.roofline.evaluate import BoundShift, HardwareResult, evaluate, partition_shift
from dfx.roofline.execution import ExecutionModel, default_execution_model, home_level, level_traffic, working_set_bytes
from dfx.roofline.latency import NodeTiming, node_timing

__all__ = [
    "Bound",
    "BoundShift",
    "ExecutionModel",
    "HardwareResult",
    "NodeTiming",
    "classify",
    "default_execution_model",
    "evaluate",
    "home_level",
    "level_traffic",
    "node_timing",
    "partition_shift",
    "ridge_point",
    "ridge_points",
    "working_set_bytes",
]
