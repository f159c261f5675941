"""Llama (2 and 3): RMSNorm, rotary positions, grouped-query attention, SwiGLU; layer and whole model.

Follows Meta's reference ``llama/model.py`` and Hugging Face's ``modeling_llama.py`` (rotate-half
form of RoPE, as in HF). Dimension letters: B batch, T tokens, C = dim, nh query heads, nkv
key/value heads, hs = C // nh (head size), F = hidden_dim (SwiGLU width), V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.models.kv import attend_with_cache
from dfx.models.layers import logit_positions

KVPair = tuple[torch.Tensor, torch.Tensor]  # one layer's (K, V) cache, each (B, nkv, S, hs)

__all__ = ["Attention", "DecoderLayer", "FeedForward", "Llama", "LlamaConfig", "LlamaLayer", "RMSNorm", "Rotary"]


@dataclass
class LlamaConfig:
    """Defaults are Llama-2-7B (Touvron et al. 2023, Table 1; HF ``meta-llama/Llama-2-7b-hf``)."""

    dim: int = 4096
    n_heads: int = 32
    n_kv_heads: int = 32  # < n_heads is grouped-query attention (Llama-3-8B: 8)
    hidden_dim: int = 11008  # SwiGLU width; 2/3 * 4 * 4096 = 10923, rounded up to a multiple of 256
    n_layers: int = 32
    vocab_size: int = 32000
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0  # Llama-3 raises it to 500,000 for its longer context
    max_seq_len: int = 4096  # rows of the rotary tables: the longest T a forward takes
    head_dim: int | None = None  # None is dim // n_heads (128 in every Llama 2 and 3 model)

    @property
    def hs(self) -> int:
        return self.head_dim or self.dim // self.n_heads


class RMSNorm(nn.Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dim, in float32 as Meta and HF compute it."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x if x.dtype == torch.float32 else x.float()  # upcast only when needed: no copy in fp32
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)  # (B, T, C)
        return self.weight * (h if h.dtype == x.dtype else h.to(x.dtype))


class Rotary(nn.Module):
    """Cos and sin tables for positions ``0..max_len-1``; forward returns the first T rows.

    The tables are buffers computed once at build time (as Meta's reference precomputes
    ``freqs_cis``), so the forward pass slices them instead of creating tensors on a device.
    """

    def __init__(self, head_dim: int, theta: float, max_len: int):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))  # (hs/2,)
        freqs = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)  # (max_len, hs/2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (max_len, hs)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, T: int, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows ``start .. start+T-1``: the positions of T tokens after ``start`` cached ones."""
        if start + T > self.cos.shape[0]:
            raise ValueError(f"position {start + T} is past the rotary table ({self.cos.shape[0]} rows)")
        return self.cos[start : start + T], self.sin[start : start + T]  # 2 x (T, hs)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + _rotate_half(x) * sin  # (B, nh, T, hs) with (T, hs) broadcast


class Attention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        assert config.n_heads % config.n_kv_heads == 0, "n_heads must be a multiple of n_kv_heads"
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.hs
        self.q_proj = nn.Linear(config.dim, config.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.dim, config.n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.dim, config.n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.n_heads * self.head_dim, config.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVPair | None = None):
        """(B, T, C) -> (B, T, C); with ``cache`` (K, V of (B, nkv, S, hs)) also the new (K, V) to append."""
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, nkv, T, hs)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, nkv, T, hs)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if cache is None:
            gqa = self.n_kv_heads != self.n_heads  # each KV head serves nh / nkv query heads
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)  # (B, nh, T, hs)
        else:
            y = attend_with_cache(q, k, v, *cache)  # (B, nh, T, hs) over S cached + T new keys
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_heads * self.head_dim)  # (B, T, nh * hs)
        return self.o_proj(y) if cache is None else (self.o_proj(y), (k, v))  # (B, T, C)


class FeedForward(nn.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.dim, config.hidden_dim, bias=False)
        self.up_proj = nn.Linear(config.dim, config.hidden_dim, bias=False)
        self.down_proj = nn.Linear(config.hidden_dim, config.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # (B, T, F) -> (B, T, C)


class DecoderLayer(nn.Module):
    """Pre-RMSNorm block: ``x + attn(norm(x))``, then ``x + mlp(norm(x))``. (B, T, C) in and out."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(config.dim, config.norm_eps)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.dim, config.norm_eps)
        self.mlp = FeedForward(config)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVPair | None = None):
        """(B, T, C) -> (B, T, C); with ``cache``, also the new (K, V) (see :class:`Attention`)."""
        h = self.self_attn(self.input_layernorm(x), cos, sin, cache)
        h, new_kv = (h, None) if cache is None else h
        x = x + h  # (B, T, C)
        x = x + self.mlp(self.post_attention_layernorm(x))  # (B, T, C)
        return x if cache is None else (x, new_kv)


class LlamaLayer(nn.Module):
    """One decoder layer with its rotary tables: the ``llama-layer`` built-in. (B, T, C) in and out."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.rotary = Rotary(config.hs, config.rope_theta, config.max_seq_len)
        self.layer = DecoderLayer(config)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor | None = None, v_cache: torch.Tensor | None = None):
        """(B, T, C) -> (B, T, C). A decode step passes the layer's K and V cache, (B, nkv, S, hs)
        each, and gets ``(y, k_new, v_new)`` back, the new token's K and V (B, nkv, T, hs)."""
        if k_cache is None:
            cos, sin = self.rotary(x.shape[1])  # 2 x (T, hs)
            return self.layer(x, cos, sin)
        cos, sin = self.rotary(x.shape[1], start=k_cache.shape[2])  # positions S .. S+T-1
        y, (k, v) = self.layer(x, cos, sin, (k_cache, v_cache))
        return y, k, v


class Llama(nn.Module):
    """Token embedding, ``n_layers`` decoder layers, final RMSNorm, LM head (untied in Llama 2 and 3)."""

    def __init__(self, config: LlamaConfig, tie_word_embeddings: bool = False):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.dim)
        self.rotary = Rotary(config.hs, config.rope_theta, config.max_seq_len)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.n_layers)])
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.logits_to_keep = 0  # positions the LM head reads (0: all; an inference step: dfx.models.decode)
        if tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight  # one Parameter, two uses

    def forward(self, input_ids: torch.Tensor, kv_cache: list[torch.Tensor] | None = None):
        """(B, T) token ids -> (B, T, V) logits ((B, k, V): the last k positions where ``logits_to_keep = k``).

        A decode step passes ``kv_cache = [k_0, v_0, k_1, v_1, ...]``, each (B, nkv, S, hs), and
        gets ``(logits, [k_new_0, v_new_0, ...])`` back (each (B, nkv, T, hs)), to append.
        """
        x = self.embed_tokens(input_ids)  # (B, T, C)
        start = 0 if kv_cache is None else kv_cache[0].shape[2]
        cos, sin = self.rotary(input_ids.shape[1], start=start)  # 2 x (T, hs), shared by every layer
        new_kv: list[torch.Tensor] = []
        for i, layer in enumerate(self.layers):
            if kv_cache is None:
                x = layer(x, cos, sin)
            else:
                x, (k, v) = layer(x, cos, sin, (kv_cache[2 * i], kv_cache[2 * i + 1]))
                new_kv += [k, v]
        logits = self.lm_head(logit_positions(self.norm(x), self.logits_to_keep))  # (B, T or kept, V)
        return logits if kv_cache is None else (logits, new_kv)
