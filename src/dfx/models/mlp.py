"""The small MNIST MLP of case PB-05: flatten 28x28, 784 -> 512 -> 512 -> 10 with ReLU.

Dimension letters: B batch, T images per sample (1 in PB-05), D = 784 input features.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

__all__ = ["MLP", "MLPConfig"]


@dataclass
class MLPConfig:
    in_features: int = 784  # a 28x28 MNIST image, flattened
    hidden: int = 512
    n_hidden_layers: int = 2
    out_features: int = 10  # ten digit classes


class MLP(nn.Module):
    """(B, T, 28, 28) -> (B, T, 10): each image goes through the MLP on its own.

    Only the last two (image) dims are flattened, so PB-05's input (1, 1, 28, 28) gives (1, 1, 10)
    and T counts images the way a transformer's T counts tokens.
    """

    def __init__(self, config: MLPConfig):
        super().__init__()
        widths = [config.in_features] + [config.hidden] * config.n_hidden_layers
        layers: list[nn.Module] = [nn.Flatten(start_dim=-2)]
        for d_in, d_out in zip(widths, widths[1:]):
            layers += [nn.Linear(d_in, d_out), nn.ReLU()]
        layers.append(nn.Linear(widths[-1], config.out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)  # (B, T, 28, 28) -> (B, T, 784) -> (B, T, 512) -> (B, T, 512) -> (B, T, 10)
