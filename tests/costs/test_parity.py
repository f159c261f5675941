"""Our matmul FLOPs against FlopCounterMode: equal where it is right, our hand value where it is not."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ._helpers import costed, flop_counter_total, matmul_flops


class GPTBlock(nn.Module):
    """nanoGPT's block: LN, causal self-attention via SDPA, LN, GELU MLP. (B, T, C) = (2, 16, 64)."""

    def __init__(self, c: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.c_attn, self.c_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(approximate="tanh"), nn.Linear(4 * c, c))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp(self.ln_2(x))


# qkv 2*32*64*192 + proj 2*32*64*64 + MLP 2*(2*32*64*256) + attention 4*2*4*16*16*16
GPT_MATMUL = 786_432 + 262_144 + 2_097_152 + 131_072
ATTENTION = 131_072

MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), (4, 32)),
    "convnet": (
        lambda: nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 8, 3, stride=2, groups=2),
            nn.Flatten(),
            nn.Linear(8 * 7 * 7, 10),
        ),
        (2, 3, 16, 16),
    ),
    "gpt_block_math": (GPTBlock, (2, 16, 64)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_matmul_flops_equal_flop_counter_mode(name):
    make, shape = MODELS[name]
    model, x = make().eval(), torch.randn(*shape)
    with sdpa_kernel(SDPBackend.MATH):  # the backend FlopCounterMode counts on CPU
        reference = flop_counter_total(model, x)
        ours = matmul_flops(costed(model, (x,)))
    assert ours == reference
    if name == "gpt_block_math":
        assert ours == GPT_MATMUL


def test_gpt_block_on_the_default_cpu_backend():
    # SDPA lowers to the CPU flash kernel: FlopCounterMode (torch 2.13) drops the attention (PB-01)
    model, x = GPTBlock().eval(), torch.randn(2, 16, 64)
    reference = flop_counter_total(model, x)
    assert reference in (GPT_MATMUL - ATTENTION, GPT_MATMUL)
    assert matmul_flops(costed(model, (x,))) == GPT_MATMUL


@pytest.mark.parametrize(
    "fn, shapes, expected",
    [
        (torch.matmul, [(8,), (8,)], 16),  # aten.dot: no FlopCounterMode formula
        (torch.matmul, [(4, 8), (8,)], 64),  # aten.mv: no formula either
    ],
)
def test_vector_products_flop_counter_mode_misses(fn, shapes, expected):
    class Fn(nn.Module):
        def forward(self, a, b):
            return fn(a, b)

    args = [torch.randn(*s) for s in shapes]
    assert flop_counter_total(fn, *args) in (0, expected)
    assert matmul_flops(costed(Fn(), tuple(args))) == expected
