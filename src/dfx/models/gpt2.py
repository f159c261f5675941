"""GPT-2: the pre-LN transformer block, and the whole model (nanoGPT's ``model.py``, pared down).

The same block with ``causal=False`` and exact GELU is the ViT encoder block (see ``registry.py``).

Dimension letters: B batch, T tokens, C = n_embd, nh = n_head, hs = C // nh (head size), V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["GPT2", "GPT2Config", "Block", "CausalSelfAttention", "MLP"]


@dataclass
class GPT2Config:
    """Defaults are GPT-2 small (124M), as in OpenAI's released ``gpt2`` config."""

    n_embd: int = 768
    n_head: int = 12
    n_layer: int = 12
    block_size: int = 1024  # learned positions (n_positions): the longest T the whole model takes
    vocab_size: int = 50257  # 50,000 BPE merges + 256 bytes + <|endoftext|>
    bias: bool = True
    causal: bool = True  # False gives a bidirectional encoder block (ViT)
    gelu_approximate: str = "tanh"  # GPT-2's "gelu_new" is the tanh form; ViT and BERT use "none" (erf)
    layer_norm_eps: float = 1e-5
    n_inner: int | None = None  # MLP width; None is 4 * n_embd (HF's convention)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention with one fused QKV projection (``c_attn``)."""

    def __init__(self, config: GPT2Config):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be a multiple of n_head"
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head = config.n_head
        self.causal = config.causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPT2Config):
        super().__init__()
        hidden = config.n_inner or 4 * config.n_embd
        self.c_fc = nn.Linear(config.n_embd, hidden, bias=config.bias)
        self.gelu = nn.GELU(approximate=config.gelu_approximate)
        self.c_proj = nn.Linear(hidden, config.n_embd, bias=config.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))  # (B, T, C) -> (B, T, 4C) -> (B, T, C)


class Block(nn.Module):
    """Pre-LN block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``. Input and output (B, T, C)."""

    def __init__(self, config: GPT2Config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))  # (B, T, C)
        x = x + self.mlp(self.ln_2(x))  # (B, T, C)
        return x


class GPT2(nn.Module):
    """Token + position embeddings, ``n_layer`` blocks, final LayerNorm, LM head tied to ``wte``."""

    def __init__(self, config: GPT2Config, tie_word_embeddings: bool = True):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.register_buffer("position_ids", torch.arange(config.block_size), persistent=False)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if tie_word_embeddings:
            self.lm_head.weight = self.wte.weight  # one Parameter, two uses

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(input_ids) + self.wpe(self.position_ids[: input_ids.shape[1]])  # (B, T, C)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))  # (B, T, V)
