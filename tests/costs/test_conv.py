"""Convolutions: PB-08 (grouped/depthwise transposed conv), forward depthwise, 1-3 d, every entry point."""

import pytest
import torch
import torch.nn as nn

from dfx.costs.rules_conv import conv_macs

from ._helpers import call, cost, costed, flop_counter_total, flops_of, matmul_flops, spec

# PB-08: batch 2, 8x8 input, bias. (module, expected MACs, expected FLOPs incl. bias)
PB08 = [
    (lambda: nn.ConvTranspose2d(4, 6, 4, stride=2, padding=1), 49_152, 101_376),  # 2*64*4*6*16; + 2*6*16*16
    (lambda: nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=4), 4_608, 11_264),
    (lambda: nn.ConvTranspose2d(6, 6, 2, stride=2, groups=3), 6_144, 15_360),  # 2*64*6*2*4; + 2*6*16*16
]


@pytest.mark.parametrize("make, macs, flops", PB08)
def test_pb08_transposed_conv(make, macs, flops):
    cg = costed(make(), (torch.randn(2, make().in_channels, 8, 8),))
    assert matmul_flops(cg) == 2 * macs
    assert cg.total.flops == flops


def test_pb08_depthwise_transposed_by_hand():
    # weight [C_in, C_out/G, k, k] = [4, 1, 3, 3]; MACs = N*H_in*W_in*C_in*(C_out/G)*9 = 2*64*4*9
    c = call(
        "aten.convolution.default",
        spec(2, 4, 8, 8),
        spec(4, 1, 3, 3),
        spec(4),
        (2, 2),
        (1, 1),
        (1, 1),
        True,
        (1, 1),
        4,
        outputs=(spec(2, 4, 16, 16),),
    )
    assert (flops_of(c, "matmul"), flops_of(c, "elementwise")) == (9_216, 2_048)
    same = call(
        "aten.conv_transpose2d.input", spec(2, 4, 8, 8), spec(4, 1, 3, 3), spec(4), outputs=(spec(2, 4, 16, 16),)
    )
    assert cost(same).cost == cost(c).cost


@pytest.mark.parametrize("c, hw", [(8, 16), (32, 7)])
def test_forward_depthwise_conv(c, hw):
    # Conv2d(C, C, 3, groups=C, padding=1): MACs = N*H_out*W_out*C*9, bias excluded
    cg = costed(nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), (torch.randn(2, c, hw, hw),))
    assert matmul_flops(cg) == 2 * (2 * hw * hw * c * 9)


@pytest.mark.parametrize(
    "module, x",
    [
        (nn.Conv1d(4, 6, 3, stride=2), (2, 4, 17)),
        (nn.Conv2d(4, 8, 3, groups=2, dilation=2), (1, 4, 12, 12)),
        (nn.Conv3d(2, 4, (1, 3, 3), padding=(0, 1, 1)), (1, 2, 3, 6, 6)),
        (nn.ConvTranspose1d(4, 2, 5, stride=3), (2, 4, 7)),
        (nn.ConvTranspose3d(4, 4, 2, stride=2, groups=2), (1, 4, 2, 3, 3)),
    ],
)
def test_matmul_flops_match_flop_counter_mode(module, x):
    # FlopCounterMode's conv formula is right for these (it ignores bias, as our matmul entry does)
    cg = costed(module, (torch.randn(*x),))
    assert matmul_flops(cg) == flop_counter_total(module, torch.randn(*x))
    assert cg.flops_by_category()["elementwise"] == module(torch.randn(*x)).numel()  # one per output


def test_closed_form_1d_and_3d():
    # Conv1d 4->6, k3, stride 2 on L=17: L_out 8; MACs = 2*8*6*4*3
    assert conv_macs((2, 4, 17), (6, 4, 3), (2, 6, 8), transposed=False) == 1_152
    # Conv3d 2->4, k(1,3,3) on 3x6x6, same padding: MACs = 3*6*6*4*2*9
    assert conv_macs((1, 2, 3, 6, 6), (4, 2, 1, 3, 3), (1, 4, 3, 6, 6), transposed=False) == 7_776
    # unbatched input (C, L): N = 1
    assert conv_macs((4, 17), (6, 4, 3), (6, 8), transposed=False) == 576


X, W, ONES = spec(2, 4, 8, 8), spec(6, 4, 3, 3), (1, 1)


@pytest.mark.parametrize(
    "op, args",
    [
        ("aten.conv2d.default", (X, W, spec(6))),
        ("aten._convolution.default", (X, W, spec(6), ONES, ONES, ONES, False, (0, 0), 1, False, False, True, True)),
        ("aten.mkldnn_convolution.default", (X, W, spec(6), ONES, ONES, ONES, 1)),
        ("aten.cudnn_convolution.default", (X, W, ONES, ONES, ONES, 1, False, False, True)),
    ],
)
def test_every_conv_entry_point(op, args):
    # 2*8*8*6*4*9 MACs, padding 1; bias adds 2*6*8*8 where the op takes one
    c = call(op, *args, outputs=(spec(2, 6, 8, 8),))
    assert flops_of(c, "matmul") == 2 * 27_648
    assert flops_of(c, "elementwise") == (768 if any(a == spec(6) for a in args) else 0)


def test_conv_bytes_read_input_weight_bias_and_write_output():
    c = call("aten.conv2d.default", spec(2, 4, 8, 8), spec(6, 4, 3, 3), spec(6), outputs=(spec(2, 6, 8, 8),))
    assert cost(c).cost.bytes_read == (512 + 216 + 6) * 4
    assert cost(c).cost.bytes_written == 768 * 4


@pytest.mark.parametrize("batch", [2, 5])
def test_pb22_conv_scales_with_the_batch(batch):
    # Conv2d(3, 16, 3, padding=1) on 32x32: 2*32*32*16*3*9 = 884,736 FLOPs per sample, bias excluded
    cg = costed(nn.Conv2d(3, 16, 3, padding=1), (torch.randn(batch, 3, 32, 32),))
    assert matmul_flops(cg) == 884_736 * batch
