"""What compile-time commitment costs: guards and specialisation, shape buckets and padding.

Torch-free at import: :func:`guards` imports :mod:`dfx.capture.guards` (TorchDynamo) when called.

>>> from dfx.shapes import buckets
>>> buckets([100, 130, 300, 512], sizes=[128, 256, 512]).waste_tokens  # 28 + 126 + 212 + 0
366
"""

from dfx.shapes.api import DEFAULT_HARDWARE, buckets, guards
from dfx.shapes.buckets import BucketPlan, BucketRow, linear_ladder, plan, pow2_ladder
from dfx.shapes.cost import ModelCost, QuadraticFit, SeqCost, model_cost
from dfx.shapes.dist import LengthDist, parse_dist, sample_lengths
from dfx.shapes.guard_types import DynamicSymbol, GraphBreak, Guard, GuardCheck, GuardReport, InputGuard
from dfx.shapes.optimize import optimal_buckets
from dfx.shapes.parse import DynamicDim, InputSpec

__all__ = [
    "BucketPlan",
    "BucketRow",
    "DEFAULT_HARDWARE",
    "DynamicDim",
    "DynamicSymbol",
    "GraphBreak",
    "Guard",
    "GuardCheck",
    "GuardReport",
    "InputGuard",
    "InputSpec",
    "LengthDist",
    "ModelCost",
    "QuadraticFit",
    "SeqCost",
    "buckets",
    "guards",
    "linear_ladder",
    "model_cost",
    "optimal_buckets",
    "parse_dist",
    "plan",
    "pow2_ladder",
    "sample_lengths",
]
