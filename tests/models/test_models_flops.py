"""Matmul FLOPs of every built-in by hand, checked against FlopCounterMode and (when written) dfx.

Conventions (docs/cost-model.md): a contraction [M, K] x [K, N] is 2*M*K*N FLOPs; bias adds are not
matmul FLOPs (FlopCounterMode leaves them out too); attention is 4*B*H_q*T*T*hs for QK^T and AV,
not halved for a causal mask, with the query head count under GQA. B batch, T tokens.
"""

import pytest

from dfx.capture import capture
from dfx.models import build


def transformer_block_flops(B: int, T: int, linear_weights: int, heads: int, head_dim: int) -> int:
    """Every linear (2 * B*T * in * out, summed as 2 * B*T * total weight elements) + attention."""
    return 2 * B * T * linear_weights + 4 * B * heads * T * T * head_dim


# Weight elements of each block's linear layers (biases excluded).
GPT2_LINEAR = 768 * 2304 + 768 * 768 + 768 * 3072 + 3072 * 768  # QKV, out, fc, proj = 7,077,888
BERT_LINEAR = 4 * 768 * 768 + 768 * 3072 + 3072 * 768  # Q, K, V, dense, intermediate, output = 7,077,888
LLAMA2_LINEAR = 4 * 4096 * 4096 + 3 * 4096 * 11008  # q, k, v, o, gate, up, down = 202,375,168
LLAMA3_LINEAR = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336  # q, o; k, v (8 KV heads); MLP


def hand_flops(name: str, B: int, T: int) -> int:
    if name in ("gpt2-block", "vit-block"):
        return transformer_block_flops(B, T, GPT2_LINEAR, heads=12, head_dim=64)
    if name == "bert-layer":
        return transformer_block_flops(B, T, BERT_LINEAR, heads=12, head_dim=64)
    if name == "llama-layer":
        return transformer_block_flops(B, T, LLAMA2_LINEAR, heads=32, head_dim=128)
    if name == "llama3-8b-layer":
        return transformer_block_flops(B, T, LLAMA3_LINEAR, heads=32, head_dim=128)  # query heads
    if name == "resnet-block":  # T is the image side S: 2 * B*S*S * (1x1 + 3x3 + 1x1 MACs per pixel)
        return 2 * B * T * T * (256 * 64 + 64 * 64 * 9 + 64 * 256)
    if name == "mlp":  # T images per sample, each 784 -> 512 -> 512 -> 10
        return 2 * B * T * (784 * 512 + 512 * 512 + 512 * 10)
    raise KeyError(name)


# The literal values at each model's default shape (batch 1), written out.
DEFAULT_FLOPS = {
    # GPT-2 block, T = 1024: QKV 2*1024*768*2304 = 3,623,878,656; scores 2*12*1024*1024*64 =
    # 1,610,612,736; AV 1,610,612,736; out 2*1024*768*768 = 1,207,959,552; MLP 2 * 2*1024*768*3072
    # = 9,663,676,416; total 17,716,740,096.
    "gpt2-block": 17_716_740_096,
    # Llama-2-7B layer, T = 4096: linears 2*4096*202,375,168 = 1,657,857,376,256; attention
    # 4*32*4096*4096*128 = 274,877,906,944; total 1,932,735,283,200.
    "llama-layer": 1_932_735_283_200,
    # Llama-3-8B layer, T = 8192: linears 2*8192*218,103,808 = 3,573,412,790,272; attention
    # 4*32*8192*8192*128 = 1,099,511,627,776; total 4,672,924,418,048.
    "llama3-8b-layer": 4_672_924_418_048,
    # BERT-base layer, T = 512: linears 2*512*7,077,888 = 7,247,757,312; attention
    # 4*12*512*512*64 = 805,306,368; total 8,053,063,680.
    "bert-layer": 8_053_063_680,
    # ViT-B/16 block, T = 197: linears 2*197*7,077,888 = 2,788,687,872; attention
    # 4*12*197*197*64 = 119,221,248; total 2,907,909,120.
    "vit-block": 2_907_909_120,
    # ResNet-50 bottleneck at 56x56: 3136 pixels * 69,632 MACs = 218,365,952 MACs = 436,731,904.
    "resnet-block": 436_731_904,
    # PB-05 MLP: 668,672 MACs = 1,337,344 FLOPs (bias adds excluded).
    "mlp": 1_337_344,
}


def test_hand_formula_matches_the_literal_values():
    defaults = {
        "gpt2-block": 1024,
        "llama-layer": 4096,
        "llama3-8b-layer": 8192,
        "bert-layer": 512,
        "vit-block": 197,
        "resnet-block": 56,
        "mlp": 1,
    }
    for name, flops in DEFAULT_FLOPS.items():
        assert hand_flops(name, 1, defaults[name]) == flops, name


@pytest.mark.parametrize("name", list(DEFAULT_FLOPS))
def test_flop_counter_mode_agrees_at_the_default_shape(name, flop_counter_total):
    assert flop_counter_total(build(name)) == DEFAULT_FLOPS[name]


@pytest.mark.parametrize("name", list(DEFAULT_FLOPS))
@pytest.mark.parametrize("batch, seq", [(2, 64), (3, 40)])
def test_flop_counter_mode_agrees_at_other_shapes(name, batch, seq, flop_counter_total):
    assert flop_counter_total(build(name, batch=batch, seq=seq)) == hand_flops(name, batch, seq)


def test_gpt2_block_split_by_term(flop_counter_total):
    """The issue's breakdown of the default block, term by term."""
    B, T, C = 1, 1024, 768
    qkv = 2 * B * T * C * 3 * C  # 3,623,878,656
    scores = 2 * B * 12 * T * T * 64  # 1,610,612,736
    av = 2 * B * 12 * T * T * 64  # 1,610,612,736
    out = 2 * B * T * C * C  # 1,207,959,552
    mlp = 2 * (2 * B * T * C * 4 * C)  # 9,663,676,416
    assert (qkv, scores, av, out, mlp) == (3_623_878_656, 1_610_612_736, 1_610_612_736, 1_207_959_552, 9_663_676_416)
    assert qkv + scores + av + out + mlp == 17_716_740_096 == flop_counter_total(build("gpt2-block"))


@pytest.mark.parametrize("name", list(DEFAULT_FLOPS))
def test_dfx_matmul_total_matches_the_hand_value(name, dfx_matmul_flops):
    spec = build(name, batch=2, seq=32)
    assert dfx_matmul_flops(capture(spec.model, spec.args, spec.kwargs)) == hand_flops(name, 2, 32)


def test_dfx_matmul_total_of_the_default_gpt2_block(dfx_matmul_flops):
    spec = build("gpt2-block")
    assert dfx_matmul_flops(capture(spec.model, spec.args, spec.kwargs)) == 17_716_740_096
