"""The console lines of a training step, read from the export document's ``training`` section."""

from __future__ import annotations

from typing import Any

from dfx.report.console import format_bytes, format_flops, format_seconds
from dfx.schema.analysis import read_analysis

__all__ = ["print_training", "training_lines"]


def training_lines(doc: dict[str, Any]) -> list[str]:
    """Three lines: the FLOPs split, the memory a step holds, the optimizer step; and one per profile
    where the step did not fit and was charged full activation recomputation (``hardware.<id>.recompute``)."""
    analysis = read_analysis(doc)
    t = analysis.training
    if t is None:
        return []
    total = t.forward_flops + t.backward_flops + t.optimizer_flops
    share = t.backward_flops / t.forward_flops if t.forward_flops else 0.0
    min_cut = (
        ""
        if t.min_cut_saved_bytes is None
        else f" (torch.compile's min-cut partitioner keeps {format_bytes(t.min_cut_saved_bytes)})"
    )
    return [
        f"training step (loss: {t.loss}, optimizer: {t.optimizer}): forward {format_flops(t.forward_flops)}, "
        f"backward {format_flops(t.backward_flops)} ({share:.2f}x forward), optimizer "
        f"{format_flops(t.optimizer_flops)}; {format_flops(total)} in all",
        f"  memory: parameters {format_bytes(t.trainable_parameter_bytes)}, gradients "
        f"{format_bytes(t.gradient_bytes)}, optimizer state {format_bytes(t.optimizer_state_bytes)} "
        f"({t.optimizer_state_dtype}), kept for backward {format_bytes(t.saved_activation_bytes)} of "
        f"activations + {format_bytes(t.saved_input_bytes)} of inputs{min_cut}",
        f"  optimizer step: {t.optimizer_flops_per_parameter} FLOPs per parameter over "
        f"{t.trainable_parameter_count:,} parameters, {format_bytes(t.optimizer_bytes)} moved",
    ] + [
        f"  {hw_id}: does not fit, so full activation recomputation (docs/training.md): keeps "
        f"{format_bytes(r.kept_bytes)} of the {format_bytes(r.saved_bytes)} of activations (inputs apart) over "
        f"{r.layers} layer(s), "
        f"+{format_seconds(r.recompute_s)} of the layers' forward again in the backward"
        for hw_id, r in ((h.id, h.recompute) for h in analysis.hardware.values())
        if r is not None
    ]


def print_training(doc: dict[str, Any], console: Any) -> None:
    for line in training_lines(doc):
        console.print(line, highlight=False, markup=False)
