"""The console lines of a training step, read from the export document's ``training`` section."""

from __future__ import annotations

from typing import Any

__all__ = ["print_training", "training_lines"]


def _gb(n: int) -> str:
    return f"{n / 1e9:,.3f} GB"


def training_lines(doc: dict[str, Any]) -> list[str]:
    """Three lines: the FLOPs split, the memory a step holds, the optimizer step."""
    t = doc["training"]
    total = t["forward_flops"] + t["backward_flops"] + t["optimizer_flops"]
    share = t["backward_flops"] / t["forward_flops"] if t["forward_flops"] else 0.0
    return [
        f"training step (loss: {t['loss']}, optimizer: {t['optimizer']}): forward {t['forward_flops'] / 1e9:,.3f} GFLOP, "
        f"backward {t['backward_flops'] / 1e9:,.3f} GFLOP ({share:.2f}x forward), optimizer "
        f"{t['optimizer_flops'] / 1e9:,.3f} GFLOP; {total / 1e9:,.3f} GFLOP in all",
        f"  memory: parameters {_gb(t['trainable_parameter_bytes'])}, gradients {_gb(t['gradient_bytes'])}, "
        f"optimizer state {_gb(t['optimizer_state_bytes'])} ({t['optimizer_state_dtype']}), kept for backward "
        f"{_gb(t['saved_activation_bytes'])} activations + {_gb(t['saved_input_bytes'])} inputs",
        f"  optimizer step: {t['optimizer_flops_per_parameter']} FLOPs per parameter over "
        f"{t['trainable_parameter_count']:,} parameters, {_gb(t['optimizer_bytes'])} moved",
    ]


def print_training(doc: dict[str, Any], console: Any) -> None:
    for line in training_lines(doc):
        console.print(line, highlight=False, markup=False)
