"""PB-20: shape-dependent assert / if: export specialises, fx fails with a clear message."""

import pytest
import torch
import torch.nn as nn

from dfx.capture import capture
from dfx.costs import Cost
from dfx.errors import CaptureError

from ._helpers import costed


class AssertSameShape(nn.Module):
    def forward(self, x, y):
        assert x.shape == y.shape
        return x + y


class BranchOnParamShape(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(torch.randn(5, 3))

    def forward(self, x):
        if self.p.shape[0] < 10:
            return x @ self.p
        return torch.relu(x @ self.p)


@pytest.mark.parametrize("method", ["export", "dynamo"])
def test_pb20_assert_on_shapes(method):
    cg = costed(AssertSameShape(), (torch.randn(4, 8), torch.randn(4, 8)), method=method)
    (add,) = [n for n in cg.nodes if n.cost.flops]
    assert add.cost == Cost(32, 2 * 32 * 4, 32 * 4)  # 32 adds; 3*32*4 = 384 B moved
    assert cg.total.bytes == 384


@pytest.mark.parametrize("method", ["export", "dynamo"])
def test_pb20_branch_on_parameter_shape(method):
    cg = costed(BranchOnParamShape(), (torch.randn(10, 5),), method=method)
    ops = [c.op for n in cg.graph.nodes for c in n.aten_calls]
    assert ops == ["aten.mm.default"]  # the true branch, no relu
    assert cg.total.flops == 300  # 2*10*5*3
    (mm,) = [n for n in cg.nodes if n.cost.flops]
    assert mm.node.outputs[0].shape == (10, 3)


@pytest.mark.parametrize(
    "model, args", [(AssertSameShape(), (torch.randn(4, 8),) * 2), (BranchOnParamShape(), (torch.randn(10, 5),))]
)
def test_pb20_fx_fails_clearly(model, args):
    with pytest.raises(CaptureError, match="control flow"):
        capture(model, args, method="fx")


def test_pb20_auto_falls_back_to_export():
    assert costed(BranchOnParamShape(), (torch.randn(10, 5),)).total.flops == 300


def test_every_capture_method_costs_a_model_the_same():
    # an MLP (2*4*32*64 + 2*4*64*10 matmul) through export, fx and dynamo: identical costs
    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    x = torch.randn(4, 32)
    totals = {m: costed(mlp, (x,), method=m).total for m in ("export", "fx", "dynamo")}
    assert len(set(totals.values())) == 1
    assert totals["export"].flops == 16_384 + 5_120 + (64 + 10) * 4 + 4 * 64  # + biases + ReLU
