"""bucketize and searchsorted: a worst-case binary search per value, ceil(log2(b + 1)) compares."""

import pytest
import torch
import torch.nn as nn

from dfx.costs import Cost
from dfx.costs.rules_reduce import binary_search_compares

from ._helpers import call, cost, costed, flop_counter_total, spec


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize("b, compares", [(0, 0), (1, 1), (2, 2), (3, 2), (7, 3), (8, 4), (1023, 10), (1024, 11)])
def test_binary_search_compares(b, compares):
    # ceil(log2(b + 1)): 7 boundaries -> log2 8 = 3; 8 -> ceil(log2 9) = 4; 1024 -> ceil(log2 1025) = 11
    assert binary_search_compares(b) == compares


def test_bucketize():
    # 128 values into 7 boundaries: 3 compares each -> 384. Reads 512 B of values and 28 B of
    # boundaries (once); writes 128 int64 indices, 1024 B
    c = cost(call("aten.bucketize.Tensor", spec(8, 16), spec(7), outputs=(spec(8, 16, dtype="int64"),)))
    assert c.cost == Cost(384, 512 + 28, 1024)
    assert c.category.value == "elementwise"
    # a Python scalar is one value: 3 compares
    scalar = call("aten.bucketize.Scalar", 0.5, spec(7), outputs=(spec(dtype="int64"),))
    assert cost(scalar).cost == Cost(3, 28, 8)


def test_searchsorted():
    # 8 rows of 10 sorted values, 3 queries per row: 24 searches of ceil(log2 11) = 4 compares -> 96;
    # int32 output (out_int32): 24 * 4 = 96 B
    c = cost(
        call("aten.searchsorted.Tensor", spec(8, 10), spec(8, 3), outputs=(spec(8, 3, dtype="int32"),), out_int32=True)
    )
    assert c.cost == Cost(96, (80 + 24) * 4, 96)


def test_captured_bucketize_and_searchsorted():
    # bucketize (8, 16) into 7 boundaries: 384; searchsorted of (8, 3) into rows of 10: 96. Total 480
    def fn(x, edges, rows, q):
        return torch.bucketize(x, edges), torch.searchsorted(rows, q)

    args = (torch.randn(8, 16), torch.linspace(-1, 1, 7), torch.sort(torch.randn(8, 10)).values, torch.randn(8, 3))
    cg = costed(Fn(fn), args)  # fails on any unknown op
    assert cg.total.flops == 480
    assert flop_counter_total(fn, *args) in (0, 480)  # FlopCounterMode: no formula (0)
