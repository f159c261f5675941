"""Composite kernels that used to be unknown ops: each costs its formula (dfx.costs.rules_composite).

Expected values are hand arithmetic on the layers' shapes; each model is captured whole and must
leave no op uncosted.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.costs._helpers import costed


class _Call(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _by_category(model, *args):
    return costed(model.eval(), args).flops_by_category()


class _Bilinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.b = nn.Bilinear(8, 6, 4)

    def forward(self, x):
        return self.b(x, x[:, :6])


def test_bilinear_is_a_three_way_contraction():
    flops = _by_category(_Bilinear(), torch.randn(2, 8))
    # i1 [2, 8] and i2 [2, 6] against W [4, 8, 6]: P = 2*4*8*6 = 384 points
    # matmul: a MAC per point, 768; elementwise: i1 * W per point 384 + bias add 2*4 = 8
    assert flops["matmul"] == 2 * 384
    assert flops["elementwise"] == 384 + 8


def test_weight_norm_costs_its_normalization():
    model = nn.utils.parametrizations.weight_norm(nn.Linear(8, 4))
    flops = _by_category(_Call(model), torch.randn(2, 8))
    # v [4, 8], norms over dim 1 -> g [4, 1]: 3 * 32 + 2 * 4 = 104
    assert flops["normalization"] == 104
    assert flops["matmul"] == 2 * 2 * 8 * 4  # the linear itself: 128


def test_cdist_euclidean_follows_torchs_matmul_path():
    x, y = torch.randn(1, 30, 8), torch.randn(1, 40, 8)
    flops = _by_category(_Call(lambda a: torch.cdist(a, y)), x)
    # x1 @ x2^T: 2 * 30 * 40 * 8 = 19,200; norms 2 * (240 + 320) = 1,120; per output 5 * 1,200 = 6,000
    assert flops["matmul"] == 19_200
    assert flops["elementwise"] == 1_120 + 6_000


def test_cdist_l1_and_pdist_direct_forms():
    x = torch.randn(5, 8)
    # cdist p=1 of 5 rows with themselves: 25 pairs x 8 dims x (sub, abs, add) = 600
    assert _by_category(_Call(lambda a: torch.cdist(a, a, p=1)), x)["elementwise"] == 600
    # pdist p=2: 10 pairs x 8 dims x (sub, abs, pow, add) + 10 roots = 330
    assert _by_category(_Call(F.pdist), x)["elementwise"] == 330


def test_grid_sample_bilinear_counts_four_taps_per_output():
    grid = torch.zeros(1, 4, 5, 2)
    flops = _by_category(_Call(lambda a: F.grid_sample(a, grid, align_corners=False)), torch.randn(1, 3, 8, 8))
    # 20 locations x 6 (unnormalize x, y) + 20 x 3 channels x 7 (4 taps) = 120 + 420
    assert flops["elementwise"] == 540
