"""The systolic array (a TPU MXU): analytical cycles matching SCALE-Sim, a step-by-step simulation,
TPU node timing and pod sharding. See ``docs/systolic.md``.

Entry points: :func:`gemm` and :func:`conv` (cycles, folds, utilization, traffic of one layer on one
array), :func:`step` (a functional cycle-level run that computes ``X @ W``), :func:`chip_gemm`
(several arrays of a chip), :func:`sharded_gemm` (several chips), and :data:`TPU_SYSTOLIC`, the
:class:`dfx.arch.ArchModel` that times matmul and conv nodes on TPU profiles.
"""

from __future__ import annotations

from dfx.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (dfx.lazy)
_EXPORTS = {
    "ChipGemm": "chip",
    "MxuSpec": "chip",
    "chip_gemm": "chip",
    "mxu_spec": "chip",
    "ConvLayer": "conv_layer",
    "conv": "conv_layer",
    "parse_conv": "conv_layer",
    "Dataflow": "dataflow",
    "Mapping": "dataflow",
    "parse_dataflow": "dataflow",
    "SramKB": "model",
    "SystolicResult": "model",
    "gemm": "model",
    "Gemm": "nodes",
    "node_gemms": "nodes",
    "ShardAxis": "shard",
    "ShardedGemm": "shard",
    "sharded_gemm": "shard",
    "Torus": "torus",
    "torus_of": "torus",
    "TPU_SYSTOLIC": "tpu",
    "SystolicArchModel": "tpu",
    "Frame": "stepsim",
    "StepTrace": "stepsim",
    "step": "stepsim",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


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
    "Torus",
    "chip_gemm",
    "conv",
    "gemm",
    "mxu_spec",
    "node_gemms",
    "parse_conv",
    "parse_dataflow",
    "sharded_gemm",
    "step",
    "torus_of",
]
