"""Softmax, norms, reductions and pooling: the per-element conventions of docs/cost-model.md."""

import pytest
import torch
import torch.nn as nn

from dfx.costs import Cost

from ._helpers import call, cost, costed, spec


def test_softmax_family():
    x = spec(4, 10)  # 4 rows of 10
    assert cost(call("aten._softmax.default", x, -1, False, outputs=(x,))).cost == Cost(5 * 40, 160, 160)
    log_softmax = call("aten._log_softmax.default", x, 1, False, outputs=(x,))
    assert cost(log_softmax).cost.flops == 5 * 40 + 4  # + one log per row
    assert cost(call("aten._safe_softmax.default", x, -1, outputs=(x,))).cost.flops == 6 * 40  # + 1 select
    assert cost(call("aten._softmax.default", x, -1, False, outputs=(x,))).category.value == "normalization"


def test_layer_norm():
    # 4 rows of 16 with weight and bias: 7 per element + 4 per row = 7*64 + 4*4
    x, w = spec(4, 16), spec(16)
    ln = call("aten.native_layer_norm.default", x, (16,), w, w, 1e-5, outputs=(x, spec(4, 1), spec(4, 1)))
    assert cost(ln).cost == Cost(464, (64 + 32) * 4, (64 + 8) * 4)
    bare = call("aten.native_layer_norm.default", x, (16,), None, None, 1e-5, outputs=(x,))
    assert cost(bare).cost.flops == 5 * 64 + 4 * 4
    cg = costed(nn.LayerNorm(16), (torch.randn(4, 16),))
    assert cg.flops_by_category()["normalization"] == 464


def test_rms_norm():
    # square, sum, * rstd (+ * weight) per element; / n, + eps, rsqrt per row
    x = spec(4, 16)
    assert cost(call("aten.rms_norm.default", x, (16,), spec(16), outputs=(x,))).cost.flops == 4 * 64 + 3 * 4
    fused = call("aten._fused_rms_norm.default", x, (16,), None, None, outputs=(x, spec(4, 1)))
    assert cost(fused).cost.flops == 3 * 64 + 12  # no weight


def test_batch_norm_eval_and_train():
    x = torch.randn(2, 4, 6, 6)  # 288 elements, 4 channels
    eval_cg = costed(nn.BatchNorm2d(4).eval(), (x,))
    # (x - mean) * rstd * w + b: 4 per element; rsqrt(var + eps): 2 per channel
    assert eval_cg.flops_by_category()["normalization"] == 4 * 288 + 2 * 4
    legit = call(
        "aten._native_batch_norm_legit_no_training.default",
        spec(2, 4, 6, 6),
        spec(4),
        spec(4),
        spec(4),
        spec(4),
        0.1,
        1e-5,
        outputs=(spec(2, 4, 6, 6),),
    )
    assert cost(legit).cost.flops == 4 * 288 + 2 * 4
    train_cg = costed(nn.BatchNorm2d(4).train(), (x,))
    # statistics 5 + affine 2 per element; 4 per channel; running-stat update 7 per channel
    assert train_cg.flops_by_category()["normalization"] == 7 * 288 + 4 * 4 + 7 * 4


def test_group_norm():
    # GroupNorm(2, 8) on (2, 8, 4, 4): statistics per (sample, group) = 4 rows over 64 elements
    cg = costed(nn.GroupNorm(2, 8), (torch.randn(2, 8, 4, 4),))
    assert cg.flops_by_category()["normalization"] == 7 * 256 + 4 * 4


@pytest.mark.parametrize(
    "op, args, outputs, flops",
    [
        ("aten.sum.dim_IntList", ((-1,),), (spec(4),), 40),
        ("aten.mean.dim", ((-1,),), (spec(4),), 40 + 4),  # + one divide per output
        ("aten.amax.default", ((-1,),), (spec(4),), 40),
        ("aten.max.dim", (-1,), (spec(4), spec(4, dtype="int64")), 40),
        ("aten.var.correction", ((-1,),), (spec(4),), 4 * 40 + 2 * 4),  # mean, sub, square, sum, divide
        ("aten.std.correction", ((-1,),), (spec(4),), 4 * 40 + 3 * 4),  # + sqrt
        ("aten.linalg_vector_norm.default", (2, (-1,)), (spec(4),), 2 * 40 + 4),  # square, sum, sqrt
        ("aten.logsumexp.default", ((-1,),), (spec(4),), 4 * 40 + 2 * 4),
        ("aten.cumsum.default", (-1,), (spec(4, 10),), 40),
        ("aten.sort.default", (-1,), (spec(4, 10), spec(4, 10, dtype="int64")), 40 * 4),  # ceil(log2 10) = 4
    ],
)
def test_reductions(op, args, outputs, flops):
    c = cost(call(op, spec(4, 10), *args, outputs=outputs))
    assert c.cost.flops == flops
    assert c.cost.bytes_read == 160 and c.cost.bytes_written == sum(o.nbytes for o in outputs)


def test_pooling():
    x = spec(1, 2, 8, 8)
    pooled = (spec(1, 2, 4, 4), spec(1, 2, 4, 4, dtype="int64"))  # values and indices
    mp = call("aten.max_pool2d_with_indices.default", x, (2, 2), (2, 2), outputs=pooled)
    assert cost(mp).cost == Cost(32 * 4, 512, 32 * 4 + 32 * 8)  # one compare per window element
    ap = call("aten.avg_pool2d.default", x, (2, 2), (2, 2), outputs=(spec(1, 2, 4, 4),))
    assert cost(ap).cost.flops == 32 * (4 + 1)
    gap = call("aten._adaptive_avg_pool2d.default", spec(1, 2, 7, 7), (1, 1), outputs=(spec(1, 2, 1, 1),))
    assert cost(gap).cost.flops == 2 * 49 + 2
    # 5 -> 3 windows [0,2) [1,4) [3,5): 7 per dim, overlapping
    odd = call("aten._adaptive_avg_pool2d.default", spec(1, 1, 5, 5), (3, 3), outputs=(spec(1, 1, 3, 3),))
    assert cost(odd).cost.flops == 7 * 7 + 9


def test_upsampling():
    x, out = spec(1, 1, 4, 4), spec(1, 1, 8, 8)
    assert cost(call("aten.upsample_bilinear2d.vec", x, (8, 8), False, None, outputs=(out,))).cost.flops == 64 * 7
    nearest = cost(call("aten.upsample_nearest2d.vec", x, (8, 8), None, outputs=(out,)))
    assert nearest.cost == Cost(0, 64, 256) and nearest.category.value == "memory"


def test_captured_cnn_head_is_fully_costed():
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 10),
    )
    cg = costed(net.eval(), (torch.randn(2, 3, 8, 8),))
    # conv bias 2*8*8*8, ReLU 2*8*8*8, max pool 256 outputs x 4, adaptive avg (lowered to a mean)
    # 256 adds + 16 divides, fc bias 2*10
    assert cg.flops_by_category()["elementwise"] == 1024 + 1024 + 256 * 4 + 256 + 16 + 20
