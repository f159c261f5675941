"""PB-16 (activation bytes at the tensor's own dtype), per-element FLOPs, views, factories, dropout."""

import pytest
import torch
import torch.nn as nn

from dfx.costs import Cost
from dfx.ir import TensorSpec

from ._helpers import call, cost, costed, spec

ROWS, COLS = 2048, 4096
ELEMS = ROWS * COLS  # 8,388,608


@pytest.mark.parametrize("dtype, nbytes", [(torch.float32, 67_108_864), (torch.bfloat16, 33_554_432)])
def test_pb16_gelu_bytes_follow_the_dtype(dtype, nbytes):
    # read once + write once: fp32 2 * 33,554,432 B; bf16 half that (the bug charged 2 B for fp32)
    x = torch.empty(ROWS, COLS, dtype=dtype, device="meta")
    cg = costed(nn.GELU(), (x,))
    assert cg.total.bytes == nbytes
    assert cg.total.flops == 5 * ELEMS  # erf GELU: 5 per element (docs/cost-model.md)
    # at 3.35 TB/s: 20.0 us fp32, 10.0 us bf16
    assert cg.total.bytes / 3.35e12 * 1e6 == pytest.approx(20.0 if dtype == torch.float32 else 10.0, abs=0.05)


@pytest.mark.parametrize("dtype, memory_us", [(torch.float32, 20.0), (torch.bfloat16, 10.0)])
def test_pb16_gelu_time_on_the_h100_is_its_bytes_over_3_35_tb_per_s(dtype, memory_us):
    # PB-16's time, through dfx.analyze's roofline rather than the bytes alone: 67,108,864 B (fp32) or
    # 33,554,432 B (bf16) at the H100 SXM's 3.35 TB/s HBM3 (NVIDIA H100 datasheet) = 20.0 / 10.0 us,
    # memory-bound (the bug predicted 10.0 us for fp32); the ideal roofline, no runtime's efficiency
    import dfx

    x = torch.empty(ROWS, COLS, dtype=dtype, device="meta")
    doc = dfx.analyze(nn.GELU(), (x,), hardware=["nvidia-h100-sxm"], runtime="ideal").to_dict()
    gelu = doc["hardware"]["nvidia-h100-sxm"]["nodes"]["gelu"]
    assert gelu["bound"] == "memory" and gelu["dtype"] == str(dtype).removeprefix("torch.")
    assert gelu["memory_time_s"] * 1e6 == pytest.approx(memory_us, abs=0.05)
    assert gelu["time_s"] == pytest.approx(gelu["memory_time_s"] + gelu["overhead_s"])


PER_ELEMENT = [
    ("aten.relu.default", (), 1),  # max(x, 0)
    ("aten.exp.default", (), 1),
    ("aten.tanh.default", (), 1),
    ("aten.rsqrt.default", (), 1),
    ("aten.neg.default", (), 1),
    ("aten.sigmoid.default", (), 4),  # neg, exp, add, div
    ("aten.silu.default", (), 5),  # x * sigmoid(x)
    ("aten.gelu.default", (), 5),  # 0.5 x (1 + erf(x / sqrt 2))
    ("aten.hardtanh.default", (0.0, 6.0), 2),  # two compares
    ("aten.clamp.default", (None, 6.0), 1),  # one bound, one compare
    ("aten.clamp.default", (0.0, 6.0), 2),
    ("aten.leaky_relu.default", (), 2),  # compare, mul
    ("aten.hardswish.default", (), 5),
    ("aten.mish.default", (), 4),
    ("aten.pow.Tensor_Scalar", (2,), 1),
    ("aten.mul.Scalar", (0.5,), 1),
    ("aten.relu_.default", (), 1),  # in place, through the fallback
]


@pytest.mark.parametrize("op, extra, per_element", PER_ELEMENT)
def test_per_element_flops(op, extra, per_element):
    x = spec(3, 5)
    c = cost(call(op, x, *extra, outputs=(x,)))
    assert c.cost == Cost(15 * per_element, 60, 60)
    assert c.category.value == "elementwise"


def test_gelu_tanh_and_add_alpha():
    x = spec(3, 5)
    assert cost(call("aten.gelu.default", x, approximate="tanh", outputs=(x,))).cost.flops == 9 * 15
    assert cost(call("aten.add.Tensor", x, x, alpha=2, outputs=(x,))).cost.flops == 2 * 15
    assert cost(call("aten.div.Tensor_mode", x, x, rounding_mode="floor", outputs=(x,))).cost.flops == 2 * 15


def test_broadcast_binary_op_reads_each_operand_once():
    # [4, 1] + [1, 5] -> [4, 5]: 20 adds; reads 4 + 5 elements, writes 20
    c = call("aten.add.Tensor", spec(4, 1), spec(1, 5), outputs=(spec(4, 5),))
    assert cost(c).cost == Cost(20, 9 * 4, 20 * 4)


def test_comparison_writes_bool_and_where_reads_its_mask():
    x = spec(8)
    assert cost(call("aten.eq.Scalar", x, 0, outputs=(spec(8, dtype="bool"),))).cost == Cost(8, 32, 8)
    w = call("aten.where.self", spec(8, dtype="bool"), x, x, outputs=(x,))
    assert cost(w).cost == Cost(8, 8 + 64, 32)


@pytest.mark.parametrize(
    "op, args",
    [
        ("aten.view.default", (spec(4, 8), (32,))),
        ("aten._unsafe_view.default", (spec(4, 8), (32,))),
        ("aten.t.default", (spec(4, 8),)),
        ("aten.transpose.int", (spec(4, 8), 0, 1)),
        ("aten.permute.default", (spec(2, 4, 8), (2, 0, 1))),
        ("aten.expand.default", (spec(1, 8), (4, 8))),
        ("aten.slice.Tensor", (spec(4, 8), 1, 0, 4)),
        ("aten.select.int", (spec(4, 8), 0, 1)),
        ("aten.split.Tensor", (spec(4, 8), 2)),
        ("aten.unsqueeze.default", (spec(4, 8), 0)),
        ("aten.squeeze_.dim", (spec(1, 8), 0)),
        ("aten.alias.default", (spec(4, 8),)),
        ("aten.detach.default", (spec(4, 8),)),
        ("aten.lift_fresh.default", (spec(4, 8),)),
        ("aten.as_strided.default", (spec(4, 8), (8,), (1,))),
        ("aten.reshape.default", (spec(4, 8), (32,))),  # contiguous input: a view
        ("aten.dropout.default", (spec(4, 8), 0.1, False)),  # eval: identity
    ],
)
def test_views_cost_nothing(op, args):
    c = cost(call(op, *args, outputs=(spec(4, 8),)))
    assert c.cost == Cost() and c.category.value == "view"


def test_reshape_of_a_transposed_tensor_copies():
    transposed = TensorSpec((4, 8), "float32", (1, 4))  # t() of a [8, 4] tensor
    c = cost(call("aten.reshape.default", transposed, (32,), outputs=(spec(32),)))
    assert c.cost == Cost(0, 128, 128) and c.category.value == "memory"


@pytest.mark.parametrize(
    "op, args, written",
    [
        ("aten.zeros.default", ((4, 8),), 128),
        ("aten.full.default", ((4, 8), 1.0), 128),
        ("aten.arange.start", (0, 32), 128),
        ("aten.scalar_tensor.default", (1.0,), 4),
        ("aten.ones_like.default", (spec(4, 8),), 128),  # reads nothing from its template
        ("aten.empty.memory_format", ((4, 8),), 0),  # allocation only
        ("aten.fill_.Scalar", (spec(4, 8), 0.0), 128),
    ],
)
def test_factories_write_only(op, args, written):
    out = spec(4, 8) if written != 4 else spec()
    c = cost(call(op, *args, outputs=(out,)))
    assert c.cost == Cost(0, 0, written) and c.category.value == "memory"


def test_copies_and_concatenation():
    a, b = spec(4, 8), spec(2, 8, dtype="bfloat16")
    assert cost(call("aten.cat.default", (a, spec(2, 8)), outputs=(spec(6, 8),))).cost == Cost(0, 192, 192)
    cast = call("aten._to_copy.default", a, dtype="torch.bfloat16", outputs=(spec(4, 8, dtype="bfloat16"),))
    assert cost(cast).cost == Cost(0, 128, 64)  # reads fp32, writes bf16
    assert cost(call("aten.copy_.default", spec(2, 8), b, outputs=(spec(2, 8),))).cost == Cost(0, 32, 64)
    # clone of a broadcast view reads the one row it repeats
    expanded = TensorSpec((4, 8), "float32", (0, 1))
    assert cost(call("aten.clone.default", expanded, outputs=(spec(4, 8),))).cost == Cost(0, 32, 128)


def test_train_dropout():
    x = spec(4, 8)
    c = cost(call("aten.native_dropout.default", x, 0.1, True, outputs=(x, spec(4, 8, dtype="bool"))))
    assert c.cost == Cost(3 * 32, 128, 128 + 32)  # compare, mask, scale; writes output and bool mask
    assert cost(call("aten.native_dropout.default", x, 0.1, False, outputs=(x, x))).cost.flops == 0
