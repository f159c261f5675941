"""Contractions: PB-03 (1-D and broadcast matmul, linear and addmm bias), PB-05 (FLOPs = 2 x MACs)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.costs import Cost
from dfx.costs.rules_einsum import einsum_flops

from ._helpers import call, cost, costed, flops_of, matmul_flops, spec


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


# PB-03: (function, input shapes, expected matmul FLOPs, expected total FLOPs incl. bias)
PB03 = [
    (torch.matmul, [(8,), (8,)], 16, 16),  # 8 MACs = 16 (buggy: 64 MACs)
    (torch.matmul, [(4, 8), (8,)], 64, 64),  # 4*8 = 32 MACs = 64 (buggy: 256 MACs)
    (torch.matmul, [(2, 1, 4, 8), (3, 8, 5)], 1920, 1920),  # batch (2,3): 2*3*4*5*8 = 960 MACs
    (F.linear, [(4, 8), (16, 8), (16,)], 1024, 1088),  # 2*4*8*16 + 4*16 bias
    (lambda b, x, y: torch.addmm(b, x, y), [(5,), (4, 8), (8, 5)], 320, 340),  # 2*4*8*5 + 4*5 bias
]


@pytest.mark.parametrize("fn, shapes, mm_flops, total", PB03)
def test_pb03_captured_matmul_family(fn, shapes, mm_flops, total):
    cg = costed(Fn(fn), tuple(torch.randn(*s) for s in shapes))
    assert matmul_flops(cg) == mm_flops
    assert cg.total.flops == total


def test_pb03_hand_built_calls():
    assert cost(call("aten.dot.default", spec(8), spec(8), outputs=(spec(),))).cost.flops == 16
    assert cost(call("aten.mv.default", spec(4, 8), spec(8), outputs=(spec(4),))).cost.flops == 64
    assert cost(call("aten.matmul.default", spec(2, 1, 4, 8), spec(3, 8, 5))).cost.flops == 1920
    lin = call("aten.linear.default", spec(4, 8), spec(16, 8), spec(16), outputs=(spec(4, 16),))
    assert (flops_of(lin, "matmul"), flops_of(lin, "elementwise")) == (1024, 64)
    addmm = call("aten.addmm.default", spec(5), spec(4, 8), spec(8, 5), outputs=(spec(4, 5),))
    assert (flops_of(addmm, "matmul"), cost(addmm).cost.flops) == (320, 340)
    assert cost(addmm).category.value == "matmul"


def test_linear_and_addmm_routes_agree():
    # the same layer as F.linear and as addmm(b, x, W^T): 2*4*8*16 + 4*16 both ways
    lin = call("aten.linear.default", spec(4, 8), spec(16, 8), spec(16), outputs=(spec(4, 16),))
    addmm = call("aten.addmm.default", spec(16), spec(4, 8), spec(8, 16), outputs=(spec(4, 16),))
    assert cost(lin).cost == cost(addmm).cost == Cost(1088, (16 + 32 + 128) * 4, 64 * 4)


def test_matmul_neighbours():
    # 1-D x 2-D: [8] x [8, 5] -> [5]: 2*8*5; broadcast the other way: [3, 4, 8] x [8, 5]: 2*3*4*8*5
    assert cost(call("aten.matmul.default", spec(8), spec(8, 5))).cost.flops == 80
    assert cost(call("aten.matmul.default", spec(3, 4, 8), spec(8, 5))).cost.flops == 960
    assert cost(call("aten.bmm.default", spec(6, 4, 8), spec(6, 8, 5))).cost.flops == 1920
    baddbmm = call("aten.baddbmm.default", spec(6, 4, 5), spec(6, 4, 8), spec(6, 8, 5), outputs=(spec(6, 4, 5),))
    assert cost(baddbmm).cost.flops == 1920 + 120  # + 6*4*5 bias
    addmv = call("aten.addmv.default", spec(4), spec(4, 8), spec(8), outputs=(spec(4),))
    assert cost(addmv).cost.flops == 64 + 4
    assert cost(call("aten.outer.default", spec(4), spec(5), outputs=(spec(4, 5),))).cost.flops == 20


def test_addmm_beta_alpha_scaling_and_beta_zero():
    x, w = spec(4, 8), spec(8, 5)
    scaled = call("aten.addmm.default", spec(5), x, w, outputs=(spec(4, 5),), beta=0.5, alpha=2.0)
    assert flops_of(scaled, "elementwise") == 3 * 20  # beta*bias, alpha*product, add
    no_bias = cost(call("aten.addmm.default", spec(5), x, w, outputs=(spec(4, 5),), beta=0))
    assert no_bias.cost == Cost(320, (32 + 40) * 4, 80)  # bias neither added nor read


def test_captured_3d_linear_without_bias():
    # (2, 3, 8) x W[16, 8]^T, no bias: 2*6*8*16
    cg = costed(nn.Linear(8, 16, bias=False), (torch.randn(2, 3, 8),))
    assert cg.total.flops == matmul_flops(cg) == 1536


def test_mixed_dtype_bytes_follow_each_tensor():
    # bf16 operands, fp32 result (accumulate in fp32): reads 2 B/element, writes 4 B/element
    c = call("aten.mm.default", spec(4, 8, dtype="bfloat16"), spec(8, 5, dtype="bfloat16"), outputs=(spec(4, 5),))
    assert cost(c).cost == Cost(320, (32 + 40) * 2, 20 * 4)
    fp8 = call(
        "aten._scaled_mm.default",
        spec(16, 32, dtype="float8_e4m3fn"),
        spec(32, 8, dtype="float8_e4m3fn"),
        spec(),
        spec(),
        outputs=(spec(16, 8, dtype="bfloat16"),),
    )
    assert flops_of(fp8, "matmul") == 2 * 16 * 32 * 8
    assert cost(fp8).cost.bytes_read == 16 * 32 + 32 * 8 + 4 + 4


@pytest.mark.parametrize(
    "eq, shapes, expected",
    [
        ("ij,jk->ik", [(4, 8), (8, 5)], 2 * 4 * 8 * 5),
        ("bij,bjk->bik", [(3, 4, 8), (3, 8, 5)], 2 * 3 * 4 * 8 * 5),
        ("...ij,...jk->...ik", [(2, 3, 4, 8), (3, 8, 5)], 2 * 6 * 4 * 8 * 5),  # broadcast batch
        ("i,i->", [(8,), (8,)], 16),  # dot
        ("i,j->ij", [(4,), (5,)], 20),  # outer: multiplies only
        ("ij,ij->ij", [(4, 5), (4, 5)], 20),  # Hadamard
        ("ij->j", [(4, 5)], 20),  # column sums: one add per element
        ("ij->ji", [(4, 5)], 0),  # a permutation
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], 2 * 2 * 3 * 4 + 2 * 2 * 4 * 5),  # left to right
        ("ij,jk", [(4, 8), (8, 5)], 2 * 4 * 8 * 5),  # implicit output "ik"
    ],
)
def test_einsum_closed_forms(eq, shapes, expected):
    assert einsum_flops(eq, shapes) == expected


def test_einsum_call_and_its_captured_lowering_agree():
    # torch lowers einsum to bmm; the aten.einsum rule gives the same count: 2*2*3*4*5
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    cg = costed(Fn(lambda x, y: torch.einsum("bij,bjk->bik", x, y)), (a, b))
    hand = call("aten.einsum.default", "bij,bjk->bik", (spec(2, 3, 4), spec(2, 4, 5)), outputs=(spec(2, 3, 5),))
    assert matmul_flops(cg) == cost(hand).cost.flops == 240


def test_pb05_mlp_flops_are_twice_the_macs():
    mlp = nn.Sequential(
        nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )
    cg = costed(mlp, (torch.randn(1, 1, 28, 28),))
    macs = 784 * 512 + 512 * 512 + 512 * 10  # 668,672
    assert matmul_flops(cg) == 2 * macs == 1_337_344
    by_cat = cg.flops_by_category()
    assert by_cat["elementwise"] == (512 + 512 + 10) + 1024  # bias adds + ReLU compares
    assert cg.total.flops == 1_338_378 + 1024


@pytest.mark.parametrize("u0", [2, 3])
def test_pb22_linear_per_batch_element(u0):
    # [u0, 16, 256] x W[3072, 256]^T: 2*16*256*3072 = 25,165,824 FLOPs per u0
    with torch.device("meta"):
        layer = nn.Linear(256, 3072, bias=False)
    cg = costed(layer, (torch.empty(u0, 16, 256, device="meta"),))
    assert cg.total.flops == 25_165_824 * u0
    # fp32: input 16,384 B and output 196,608 B per u0, the weight 3,145,728 B once
    assert cg.total == Cost(25_165_824 * u0, 16_384 * u0 + 3_145_728, 196_608 * u0)
