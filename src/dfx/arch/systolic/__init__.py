"""The systolic array (a TPU MXU): analytical cycles matching SCALE-Sim, a step-by-step simulation,
TPU node timing and pod sharding. See ``docs/systolic.md``.

Entry points: :func:`gemm` and :func:`conv` (cycles, folds, utilization, traffic of one layer on one
array), :func:`step` (a functional cycle-level run that computes ``X @ W``), :func:`chip_gemm`
(several arrays of a chip), :func:`sharded_gemm` (several chips), and :data:`TPU_SYSTOLIC`, the
:class:`dfx.arch.ArchModel` that times matmul and conv nodes on TPU profiles.
"""

from __future__ import annotations

from dfx.arch.systolic.chip import ChipGemm, MxuSpec, chip_gemm, mxu_spec
from dfx.arch.systolic.conv_layer import ConvLayer, conv, parse_conv
from dfx.arch.systolic.dataflow import Dataflow, Mapping, parse_dataflow
from dfx.arch.systolic.model import SramKB, SystolicResult, gemm
from dfx.arch.systolic.nodes import Gemm, node_gemms
from dfx.arch.systolic.shard import ShardAxis, ShardedGemm, sharded_gemm
from dfx.arch.systolic.tpu import TPU_SYSTOLIC, SystolicArchModel

_STEPSIM = ("Frame", "StepTrace", "step")  # dfx.arch.systolic.stepsim, imported on first use (below)


def __getattr__(name: str):
    """The step simulator's names, imported on first use: it needs numpy (about 0.07 s to import),
    which timing a TPU node does not, and every sweep worker and ``dfx analyze`` imports this package."""
    if name in _STEPSIM:
        from dfx.arch.systolic import stepsim

        return getattr(stepsim, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ChipGemm",
    "ConvLayer",
    "Dataflow",
    "Frame",
    "Gemm",
    "Mapping",
    "MxuSpec",
    "ShardAxis",
    "ShardedGemm",
    "SramKB",
    "StepTrace",
    "SystolicArchModel",
    "SystolicResult",
    "TPU_SYSTOLIC",
    "chip_gemm",
    "conv",
    "gemm",
    "mxu_spec",
    "node_gemms",
    "parse_conv",
    "parse_dataflow",
    "sharded_gemm",
    "step",
]
