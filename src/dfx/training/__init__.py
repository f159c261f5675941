"""Training steps: the joint forward + backward graph, the optimizer step, the memory kept for backward.

``dfx.analyze(model, train=True, optimizer="adam")`` captures the joint graph as torch.compile's
AOTAutograd traces it (:mod:`dfx.capture.joint`), appends the optimizer's fused step
(:mod:`dfx.training.optimizer`), costs, compiles and schedules it like any graph, and reports the
step's split and memory (:mod:`dfx.training.step`; ``training`` in the analysis document).
"""

from dfx.training.optimizer import (
    DEFAULT_OPTIMIZER,
    OPTIMIZERS,
    STATE_DTYPE,
    OptimizerSpec,
    add_optimizer_step,
    optimizer_spec,
)
from dfx.training.step import TrainingStep, training_step

__all__ = [
    "DEFAULT_OPTIMIZER",
    "OPTIMIZERS",
    "STATE_DTYPE",
    "OptimizerSpec",
    "TrainingStep",
    "add_optimizer_step",
    "optimizer_spec",
    "training_step",
]
