"""The ResNet-50 bottleneck block (He et al. 2016, Table 1; torchvision ``resnet.Bottleneck``).

1x1 conv to the mid width, 3x3 conv, 1x1 conv back up (4x the mid width), each followed by
BatchNorm, ReLU after the first two and after the residual add. Dimension letters: B batch,
C channels in and out, M mid channels, S the image side (H = W = S).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

__all__ = ["Bottleneck", "BottleneckConfig"]


@dataclass
class BottleneckConfig:
    """Defaults are the identity blocks of ResNet-50's conv2_x stage (56x56 feature maps)."""

    channels: int = 256  # in = out, so the shortcut is the identity (no downsample conv)
    mid_channels: int = 64  # the "bottleneck" width: channels / 4 (torchvision's expansion = 4)


class Bottleneck(nn.Module):
    """(B, C, S, S) in and out; stride 1, so any S works."""

    def __init__(self, config: BottleneckConfig):
        super().__init__()
        C, M = config.channels, config.mid_channels
        self.conv1 = nn.Conv2d(C, M, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(M)
        self.conv2 = nn.Conv2d(M, M, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(M)
        self.conv3 = nn.Conv2d(M, C, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(C)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.relu(self.bn1(self.conv1(x)))  # (B, M, S, S)
        h = self.relu(self.bn2(self.conv2(h)))  # (B, M, S, S)
        h = self.bn3(self.conv3(h))  # (B, C, S, S)
        return self.relu(h + x)  # (B, C, S, S)
