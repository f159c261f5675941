"""PB-11: resnet18 counts the same under no_grad, inference_mode and grad mode.

torchvision is not installed, so the network is written out here (torchvision's BasicBlock layout).
Parameters live on the meta device: nothing is allocated.
"""

import contextlib

import pytest
import torch
import torch.nn as nn

from ._helpers import costed, flop_counter_total, matmul_flops

# Conv MACs: conv1 112*112*64*3*49; layer1 4 x 56*56*64*64*9; layers 2-4 411,041,792 each; FC 512*1000
CONV_MACS = 118_013_952 + 462_422_016 + 3 * 411_041_792
assert CONV_MACS == 1_813_561_344
PB11 = 2 * (CONV_MACS + 512_000)
assert PB11 == 3_628_146_688


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or c_in != c_out:  # 1x1 stride-2 projection of the shortcut
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        self.layers = nn.Sequential(*(nn.Sequential(BasicBlock(i, o, s), BasicBlock(o, o, 1)) for i, o, s in widths))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(self.layers(x)), 1))


@pytest.fixture(scope="module")
def resnet():
    with torch.device("meta"):
        return ResNet18().eval()


MODES = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode, "grad": contextlib.nullcontext}


@pytest.mark.parametrize("mode", list(MODES))
def test_pb11_resnet18_does_not_depend_on_grad_mode(resnet, mode):
    with MODES[mode]():
        x = torch.randn(1, 3, 224, 224, device="meta")
        cg = costed(resnet, (x,))
    assert matmul_flops(cg) == PB11
    by_cat = cg.flops_by_category()
    assert by_cat["elementwise"] > 1000  # FC bias, ReLU, pools: counted outside matmul
    assert by_cat["normalization"] > 0  # 20 batch norms


def test_pb11_matches_flop_counter_mode(resnet):
    # FlopCounterMode is right here (conv + addmm, bias excluded) and runs on meta tensors
    with torch.no_grad():
        assert flop_counter_total(resnet, torch.randn(1, 3, 224, 224, device="meta")) == PB11
