"""GPT-2: the pre-LN transformer block, and the whole model (nanoGPT's ``model.py``, pared down).

The same block with ``causal=False`` and exact GELU is the ViT encoder block (see ``registry.py``).

Dimension letters: B batch, T tokens, C = n_embd, nh = n_head, hs = C // nh (head size), V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.models.kv import attend_with_cache
from dfx.models.layers import logit_positions

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

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        """(B, T, C) -> (B, T, C); with ``cache`` (K, V of (B, nh, S, hs)) also the new (K, V) to append."""
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, nh, T, hs)
        else:
            y = attend_with_cache(q, k, v, *cache)  # (B, nh, T, hs) over S cached + T new keys
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y) if cache is None else (self.c_proj(y), (k, v))


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

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor | None = None, v_cache: torch.Tensor | None = None):
        """(B, T, C) -> (B, T, C). A decode step passes the block's K and V cache, (B, nh, S, hs)
        each, and gets ``(y, k_new, v_new)`` back, the new token's K and V (B, nh, T, hs)."""
        if k_cache is None:
            x = x + self.attn(self.ln_1(x))  # (B, T, C)
            return x + self.mlp(self.ln_2(x))  # (B, T, C)
        h, (k, v) = self.attn(self.ln_1(x), (k_cache, v_cache))
        x = x + h  # (B, T, C)
        return x + self.mlp(self.ln_2(x)), k, v


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
        self.logits_to_keep = 0  # positions the LM head reads (0: all; an inference step: dfx.models.decode)
        if tie_word_embeddings:
            self.lm_head.weight = self.wte.weight  # one Parameter, two uses

    def forward(self, input_ids: torch.Tensor, kv_cache: list[torch.Tensor] | None = None):
        """(B, T) token ids -> (B, T, V) logits ((B, k, V): the last k positions where ``logits_to_keep = k``).

        A decode step passes ``kv_cache = [k_0, v_0, k_1, v_1, ...]``, each (B, nh, S, hs), and
        gets ``(logits, [k_new_0, v_new_0, ...])`` back (each (B, nh, T, hs)), to append.
        """
        S, T = (0 if kv_cache is None else kv_cache[0].shape[2]), input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(self.position_ids[S : S + T])  # (B, T, C), positions S..S+T-1
        new_kv: list[torch.Tensor] = []
        for i, block in enumerate(self.h):
            if kv_cache is None:
                x = block(x)
            else:
                x, k, v = block(x, kv_cache[2 * i], kv_cache[2 * i + 1])
                new_kv += [k, v]
        logits = self.lm_head(logit_positions(self.ln_f(x), self.logits_to_keep))  # (B, T or kept, V)
        return logits if kv_cache is None else (logits, new_kv)
