"""Backward ops and optimizer steps, costed by hand on small shapes (rules_backward, rules_optim)."""

from __future__ import annotations

import warnings

import pytest

from dfx.costs import Category, UnknownOpWarning, annotate, cost_of_call
from dfx.ir import Graph, Node
from tests.costs._helpers import call, cost, flops_of, spec


def test_conv_backward_input_and_weight_gradients_each_cost_the_forward():
    # x [2, 3, 8, 8], w [4, 3, 3, 3], padding 1: out [2, 4, 8, 8].
    # forward MACs = N * out_spatial * prod(w) = 2 * 64 * 108 = 13,824 -> 27,648 FLOPs.
    g, x, w = spec(2, 4, 8, 8), spec(2, 3, 8, 8), spec(4, 3, 3, 3)
    outs = (spec(2, 3, 8, 8), spec(4, 3, 3, 3), spec(4))
    c = call(
        "aten.convolution_backward.default",
        g,
        x,
        w,
        [4],
        [1, 1],
        [1, 1],
        [1, 1],
        False,
        [0, 0],
        1,
        [True, True, True],
        outputs=outs,
    )
    assert flops_of(c, "matmul") == 2 * 27_648  # grad_input + grad_weight
    assert flops_of(c, "elementwise") == 2 * 4 * 64  # grad_bias: one add per grad_output element
    # reads grad_out 2048 B + input 1536 B + weight 432 B; writes 1536 + 432 + 16
    assert cost(c).cost.bytes_read == 2048 + 1536 + 432
    assert cost(c).cost.bytes_written == 1536 + 432 + 16


def test_conv_backward_without_input_gradient_costs_one_forward():
    # the graph input needs no gradient: output_mask [False, True, False]; the weight is not read
    g, x, w = spec(2, 4, 8, 8), spec(2, 3, 8, 8), spec(4, 3, 3, 3)
    c = call(
        "aten.convolution_backward.default",
        g,
        x,
        w,
        [0],
        [1, 1],
        [1, 1],
        [1, 1],
        False,
        [0, 0],
        1,
        [False, True, False],
        outputs=(spec(4, 3, 3, 3),),
    )
    assert flops_of(c, "matmul") == 27_648
    assert cost(c).cost.bytes_read == 2048 + 1536


def test_sdpa_backward_is_five_contractions():
    # q, k, v [1, 2, 16, 8]: BH = 2, S = 16, D = 8. Forward 2 contractions of 2*2*16*16*8 = 8,192;
    # backward 5 of them (recompute, dP, dV, dQ, dK) = 40,960, FlopCounterMode's count.
    q = spec(1, 2, 16, 8)
    c = call(
        "aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
        q,
        q,
        q,
        q,
        q,
        spec(1, 2, 16),
        0.0,
        False,
        outputs=(q, q, q),
    )
    assert flops_of(c, "matmul") == 5 * 8_192
    assert flops_of(c, "elementwise") == 6 * 2 * 16 * 16  # per score: scale, sub lse, exp, dP - D, * P, * scale
    assert flops_of(c, "normalization") == 2 * 2 * 16 * 8  # D = rowsum(dO * O)


def test_layer_norm_backward_by_hand():
    # grad [4, 10] over normalized_shape [10], weight and bias, every gradient asked:
    # per element x_hat 2 + grad_input 8 + weight 1 + grad_weight 2 + grad_bias 1 = 14 -> 560; +1 per row -> 564
    g, x, w = spec(4, 10), spec(4, 10), spec(10)
    c = call(
        "aten.native_layer_norm_backward.default",
        g,
        x,
        [10],
        spec(4, 1),
        spec(4, 1),
        w,
        w,
        [True, True, True],
        outputs=(x, w, w),
    )
    assert flops_of(c, "normalization") == 564
    # the bias gives only its shape: reads grad 160 + input 160 + mean 16 + rstd 16 + weight 40
    assert cost(c).cost.bytes_read == 160 + 160 + 16 + 16 + 40


def test_batch_norm_backward_training_and_eval():
    # grad [2, 3, 4, 4]: n = 96 over C = 3 channels
    g, w = spec(2, 3, 4, 4), spec(3)
    train = call(
        "aten.native_batch_norm_backward.default",
        g,
        g,
        w,
        w,
        w,
        w,
        w,
        True,
        1e-5,
        [True, True, True],
        outputs=(g, w, w),
    )
    # sum g (1) + sum g*(x - mean) (3) + grad_input (5) = 9 per element = 864; 6 per channel = 18
    assert flops_of(train, "normalization") == 864 + 18
    evaluation = call(
        "aten.native_batch_norm_backward.default", g, g, w, w, w, w, w, False, 1e-5, [True, False, False], outputs=(g,)
    )
    assert flops_of(evaluation, "normalization") == 96 + 18  # g * invstd * w, no statistics


@pytest.mark.parametrize(
    "op, args, per_element",
    [
        ("aten.threshold_backward.default", (0,), 1),
        ("aten.sigmoid_backward.default", (), 3),
        ("aten.tanh_backward.default", (), 3),
        ("aten.silu_backward.default", (), 9),
        ("aten.gelu_backward.default", ("none",), 11),
        ("aten.gelu_backward.default", ("tanh",), 18),
        ("aten.mse_loss_backward.default", (1,), 3),
    ],
)
def test_pointwise_backward_per_element(op, args, per_element):
    g = spec(2, 5)  # 10 elements
    c = call(op, g, g, *args, outputs=(g,))
    assert cost(c).cost.flops == per_element * 10


def test_softmax_backward_is_normalization():
    g = spec(3, 7)
    c = call("aten._softmax_backward_data.default", g, g, -1, "torch.float32", outputs=(g,))
    assert flops_of(c, "normalization") == 4 * 21  # y * (g - sum(g * y))


def test_nll_loss_backward_reads_the_targets_writes_the_whole_gradient():
    # self [4, 50], 4 targets, mean: per target compare-select, negate, * g, / total_weight = 4
    x, t = spec(4, 50), spec(4, dtype="int64")
    c = call("aten.nll_loss_backward.default", spec(), x, t, None, 1, -100, spec(), outputs=(x,))
    assert cost(c).cost.flops == 4 * 4
    assert cost(c).cost.bytes_read == 4 + 32 + 4  # grad_output, targets, total_weight
    assert cost(c).cost.bytes_written == 4 * 50 * 4


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("aten.select_backward.default", ([4, 32, 128], 1, -1)),  # y[:, -1] of a [4, 32, 128] output
        ("aten.slice_backward.default", ([4, 32, 128], 1, 0, 1, 1)),  # y[:, 0:1]
        ("aten.diagonal_backward.default", ([4, 32, 128], 0, 1, 2)),
    ],
)
def test_a_views_gradient_reads_the_gradient_and_writes_the_input_sized_result(op, args):
    g, full = spec(4, 128), spec(4, 32, 128)
    c = call(op, g, *args, outputs=(full,))
    assert cost(c).cost.flops == 0
    assert cost(c).cost.bytes_read == 4 * 128 * 4  # the incoming gradient, fp32
    assert cost(c).cost.bytes_written == 4 * 32 * 128 * 4  # zeros with the gradient placed in them


def test_embedding_backward_adds_each_row():
    g = spec(2, 8, 16)  # 256 gathered elements, one add each into a [50, 16] gradient
    c = call(
        "aten.embedding_dense_backward.default", g, spec(2, 8, dtype="int64"), 50, -1, False, outputs=(spec(50, 16),)
    )
    assert cost(c).cost.flops == 256
    assert cost(c).cost.bytes_written == 50 * 16 * 4


def _adam(op: str, weight_decay: float = 0.0):
    params = (spec(10), spec(3, 4))  # 22 elements
    return call(
        op,
        params,
        params,
        params,
        params,
        (),
        (spec(), spec()),
        lr=1e-3,
        beta1=0.9,
        beta2=0.999,
        weight_decay=weight_decay,
        eps=1e-8,
        amsgrad=False,
        maximize=False,
        outputs=params * 3,
    )


def test_fused_adam_thirteen_flops_per_element():
    c = _adam("aten._fused_adam.default")
    # lerp 3 + mul/addcmul 4 + sqrt/div/add 3 + addcdiv 3 = 13 per element, 22 elements
    assert cost(c).cost.flops == 13 * 22
    # reads params, grads, m, v (88 B each) and two fp32 step counts; writes params, m, v
    assert cost(c).cost.bytes_read == 4 * 88 + 8
    assert cost(c).cost.bytes_written == 3 * 88
    assert cost(_adam("aten._fused_adamw.default", 0.01)).cost.flops == 14 * 22  # + p * (1 - lr * wd)
    assert cost(_adam("aten._fused_adam_.default", 0.01)).cost.flops == 15 * 22  # + g + wd * p


def test_fused_sgd_with_and_without_momentum():
    params = (spec(10), spec(3, 4))
    plain = call(
        "aten._fused_sgd.default",
        params,
        params,
        (),
        weight_decay=0.0,
        momentum=0.0,
        lr=1e-3,
        dampening=0.0,
        nesterov=False,
        maximize=False,
        is_first_step=False,
        outputs=params,
    )
    assert cost(plain).cost.flops == 2 * 22  # p - lr * g
    assert (cost(plain).cost.bytes_read, cost(plain).cost.bytes_written) == (2 * 88, 88)
    momentum = call(
        "aten._fused_sgd.default",
        params,
        params,
        params,
        weight_decay=0.0,
        momentum=0.9,
        lr=1e-3,
        dampening=0.0,
        nesterov=False,
        maximize=False,
        is_first_step=False,
        outputs=params * 2,
    )
    assert cost(momentum).cost.flops == 4 * 22  # buf = 0.9 * buf + g (2), p - lr * buf (2)
    assert (cost(momentum).cost.bytes_read, cost(momentum).cost.bytes_written) == (3 * 88, 2 * 88)


def test_a_backward_op_without_a_rule_is_reported_not_zero():
    # grid_sampler_2d's backward (not in the Core ATen opset) has no rule: listed and warned about,
    # never a silent 0
    c = call("aten.grid_sampler_2d_backward.default", spec(2, 4, 3), spec(2, 4, 3), outputs=(spec(2, 4, 3),))
    assert cost_of_call(c) is None
    graph = Graph((Node("gn_bw", "call_function", c.op, aten_calls=(c,)),))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        costed = annotate(graph)
    assert [u.target for u in costed.unknown_ops] == ["aten.grid_sampler_2d_backward.default"]
    assert any(issubclass(w.category, UnknownOpWarning) for w in seen)
    assert costed["gn_bw"].category is Category.NONE
