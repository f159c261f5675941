"""Losses: the per-element formula of each loss, then its reduction (none / mean / sum).

Reductions follow docs/cost-model.md: a sum of n values is n adds (not n - 1), a mean adds 1 divide.
FlopCounterMode has no formula for any loss (it counts 0); the tests accept 0 or our value.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.costs import Cost

from ._helpers import call, cost, costed, flop_counter_total, spec

X, Y = spec(8, 16), spec(8, 16)  # n = 128 elements, fp32
SCALAR = spec()
NONE, MEAN, SUM = 0, 1, 2


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize(
    "reduction, flops, written",
    [
        # none: 128 sub + 128 square = 256; writes the (8, 16) losses, 128 * 4 B
        (NONE, 256, 512),
        # sum: 256 + 128 adds = 384; writes one fp32 scalar
        (SUM, 384, 4),
        # mean: 256 + 128 adds + 1 divide = 385 (the docs' n-add reduction, not 127)
        (MEAN, 385, 4),
    ],
)
def test_mse_loss_reductions(reduction, flops, written):
    out = X if reduction == NONE else SCALAR
    c = cost(call("aten.mse_loss.default", X, Y, reduction, outputs=(out,)))
    assert c.cost == Cost(flops, 2 * 128 * 4, written)  # reads self and target: 2 * 512 B
    assert c.category.value == "elementwise"


def test_the_default_reduction_is_mean():
    # capture drops a default argument: mse_loss(x, y) is the mean, 385 as above
    assert cost(call("aten.mse_loss.default", X, Y, outputs=(SCALAR,))).cost.flops == 385


@pytest.mark.parametrize(
    "op, extra, flops",
    [
        ("aten.l1_loss.default", (), 2 * 128 + 129),  # sub, abs per element; mean 128 + 1
        ("aten.smooth_l1_loss.default", (0.5,), 7 * 128 + 129),  # sub, abs, compare-select, 3 + 1 per branch
        ("aten.huber_loss.default", (2.0,), 7 * 128 + 129),  # sub, abs, compare-select, 2 + 2 per branch
    ],
)
def test_pointwise_losses_mean(op, extra, flops):
    assert cost(call(op, X, Y, MEAN, *extra, outputs=(SCALAR,))).cost.flops == flops


def test_a_broadcast_target_is_read_once():
    # target (16,) broadcast to (8, 16): still n = 128 elements of work, but 16 * 4 B read
    c = cost(call("aten.mse_loss.default", X, spec(16), SUM, outputs=(SCALAR,)))
    assert c.cost == Cost(2 * 128 + 128, 512 + 64, 4)


def test_binary_cross_entropy_with_weight():
    # (y - 1)*max(log1p(-x), -100) - y*max(log(x), -100): 9 per element, * weight: +1 -> 10 * 128 = 1280;
    # sum: + 128 = 1408. Reads x 512 + y 512 + weight (16,) 64 = 1088 B
    c = cost(call("aten.binary_cross_entropy.default", X, Y, spec(16), SUM, outputs=(SCALAR,)))
    assert c.cost == Cost(1408, 1088, 4)
    no_weight = call("aten.binary_cross_entropy.default", X, Y, None, NONE, outputs=(X,))
    assert cost(no_weight).cost.flops == 9 * 128  # none: no reduction


def test_binary_cross_entropy_with_logits_and_pos_weight():
    # (1 - y)*x - log_sigmoid(x): sub, mul, sub + log_sigmoid 4 = 7 per element;
    # pos_weight p (16,): log_sigmoid(x) * (1 + (p - 1)*y) adds mul, add, mul = 3 per element, p - 1 on 16;
    # mean: 10 * 128 + 16 + 128 + 1 = 1425
    c = cost(call("aten.binary_cross_entropy_with_logits.default", X, Y, None, spec(16), MEAN, outputs=(SCALAR,)))
    assert c.cost == Cost(1425, 512 + 512 + 64, 4)
    plain = call("aten.binary_cross_entropy_with_logits.default", X, Y, outputs=(SCALAR,))
    assert cost(plain).cost.flops == 7 * 128 + 129


def test_kl_div():
    # log_target=False: xlogy(y, y) - y*x: log, mul, mul, sub = 4 per element; sum: + 128 -> 640
    assert cost(call("aten.kl_div.default", X, Y, SUM, outputs=(SCALAR,))).cost.flops == 640
    # log_target=True: exp(y)*(y - x): sub, exp, mul = 3 per element; mean: + 128 + 1 -> 513
    log_target = call("aten.kl_div.default", X, Y, MEAN, outputs=(SCALAR,), log_target=True)
    assert cost(log_target).cost.flops == 3 * 128 + 129


@pytest.mark.parametrize(
    "weight, reduction, flops, read, written",
    [
        # 8 targets; per target: compare with ignore_index, negate = 16. mean: total_weight 8 adds,
        # loss sum 8 adds, 1 divide -> 16 + 8 + 8 + 1 = 33. Reads 8 gathered fp32 inputs (32 B) and
        # 8 int64 targets (64 B); writes the loss and total_weight, two fp32 scalars
        (None, MEAN, 33, 32 + 64, 8),
        # sum: 16 + 8 + 8 = 32
        (None, SUM, 32, 32 + 64, 8),
        # weight (5,): + 1 multiply per target, 3 * 8 = 24; none: no sums. Reads 8 gathered weights
        # too (32 B); writes the (8,) losses (32 B) and total_weight (4 B)
        (spec(5), NONE, 24, 32 + 32 + 64, 36),
    ],
)
def test_nll_loss_forward(weight, reduction, flops, read, written):
    out = spec(8) if reduction == NONE else SCALAR
    c = cost(
        call(
            "aten.nll_loss_forward.default",
            spec(8, 5),
            spec(8, dtype="int64"),
            weight,
            reduction,
            -100,
            outputs=(out, SCALAR),
        )
    )
    assert c.cost == Cost(flops, read, written)


def test_nll_loss2d_forward():
    # self (2, 5, 3, 4), target (2, 3, 4): 24 targets; mean: 2 * 24 + 24 + 24 + 1 = 97
    c = cost(
        call(
            "aten.nll_loss2d_forward.default",
            spec(2, 5, 3, 4),
            spec(2, 3, 4, dtype="int64"),
            None,
            MEAN,
            -100,
            outputs=(SCALAR, SCALAR),
        )
    )
    assert c.cost.flops == 97


def test_captured_classifier_with_cross_entropy():
    # Linear(16, 5) on 8 rows, then F.cross_entropy = _log_softmax + nll_loss_forward (no unknown op):
    #   matmul        2 * 8 * 16 * 5 = 1280
    #   elementwise   bias 8 * 5 = 40, nll mean 33 (as above) -> 73
    #   normalization log_softmax 5 * 40 + 8 rows = 208
    torch.manual_seed(0)
    head = nn.Linear(16, 5)
    model = Fn(lambda x, t: F.cross_entropy(head(x), t))
    model.head = head
    cg = costed(model, (torch.randn(8, 16), torch.randint(0, 5, (8,))))
    by = cg.flops_by_category()
    assert (by["matmul"], by["elementwise"], by["normalization"]) == (1280, 73, 208)


@pytest.mark.parametrize(
    "fn, args, flops",
    [
        (lambda a, b: F.mse_loss(a, b), (torch.randn(8, 16), torch.randn(8, 16)), 385),
        (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), (torch.randn(8, 16), torch.randn(8, 16)), 7 * 128 + 129),
        (lambda a, b: F.huber_loss(a, b, reduction="sum"), (torch.randn(8, 16), torch.randn(8, 16)), 7 * 128 + 128),
        (lambda a, b: F.binary_cross_entropy(a, b), (torch.rand(8, 16), torch.rand(8, 16)), 9 * 128 + 129),
        (lambda a, b: F.binary_cross_entropy_with_logits(a, b), (torch.randn(8, 16), torch.rand(8, 16)), 7 * 128 + 129),
        (lambda a, b: F.nll_loss(a, b, reduction="sum"), (torch.randn(8, 5), torch.randint(0, 5, (8,))), 32),
        (lambda a, b: F.nll_loss(a, b), (torch.randn(2, 5, 3, 4), torch.randint(0, 5, (2, 3, 4))), 97),
        # l1_loss and kl_div decompose before dispatch (sub, abs, mean; mul, xlogy, sub, sum): the same
        # counts as their own rules, 2 * 128 + 129 and 4 * 128 + 128
        (lambda a, b: F.l1_loss(a, b), (torch.randn(8, 16), torch.randn(8, 16)), 2 * 128 + 129),
        (lambda a, b: F.kl_div(a, b, reduction="sum"), (torch.randn(8, 16), torch.rand(8, 16)), 4 * 128 + 128),
    ],
)
def test_captured_losses_are_costed(fn, args, flops):
    cg = costed(Fn(fn), args)  # fails on any unknown op
    assert cg.total.flops == flops
    assert flop_counter_total(fn, *args) in (0, flops)  # FlopCounterMode: no formula for losses (0)


def test_fused_rules_agree_with_torch_decompositions():
    # PyTorch's own decompositions of the fused losses, costed op by op by the existing rules, give
    # the same count: mse (sub, pow, mean), BCE (sub, neg, log1p, maximum, mul, log, maximum, mul,
    # sub; new_full is a 0-FLOP factory), BCE with logits and pos_weight (sub, mul, rsub,
    # log_sigmoid, mul, mul, add, sub). smooth L1 / Huber spell the compare and the select as two ops
    # (lt, where), where the fused rule counts one compare-select (as for ELU): 1 more per element.
    from torch._decomp import decompositions as d
    from torch._refs.nn import functional as ref

    x, y, p = torch.randn(8, 16), torch.rand(8, 16), torch.rand(16)
    probs = torch.rand(8, 16)
    assert costed(Fn(d.mse_loss), (x, y)).total.flops == 385
    assert costed(Fn(d.binary_cross_entropy), (probs, y)).total.flops == 9 * 128 + 129
    bce_logits = Fn(lambda a, b, w: d.binary_cross_entropy_with_logits(a, b, None, w))
    assert costed(bce_logits, (x, y, p)).total.flops == 1425
    assert costed(Fn(d.smooth_l1_loss), (x, y)).total.flops == (7 + 1) * 128 + 129
    assert costed(Fn(ref.huber_loss), (x, y)).total.flops == (7 + 1) * 128 + 129
