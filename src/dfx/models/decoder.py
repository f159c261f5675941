"""A causal decoder for the families people serve: Mistral, Qwen2/3, Gemma 2/3, Phi-3, and their MoE kin.

One nanoGPT-style model, :class:`Decoder`, configured by a :class:`DecoderConfig` that
:mod:`dfx.models.families` fills from a Hugging Face ``config.json``. Module paths and parameter
shapes follow each family's ``modeling_*.py`` in transformers 5, so parameter counts and matmul
FLOPs match transformers' own model (tests/models/test_families.py). What varies per family:

- attention: GQA with an explicit ``head_dim``; q/k/v biases (Qwen2, gpt-oss); per-head RMSNorm
  of q and k (Qwen3, Gemma 3); one fused ``qkv_proj`` (Phi-3); logit soft-capping and
  ``query_pre_attn_scalar`` (Gemma 2); sliding-window layers (Mistral, Gemma 2/3, gpt-oss);
  per-head attention sinks (gpt-oss); multi-head latent attention (DeepSeek-V3, :mod:`dfx.models.mla`);
- feed-forward: SwiGLU or GeGLU (``gelu_pytorch_tanh``), fused ``gate_up_proj`` (Phi-3), or a
  mixture of experts (:mod:`dfx.models.moe`), with dense first layers (DeepSeek-V3);
- norms: Gemma's ``(1 + w)`` RMSNorm, its norms before and after attention and the MLP, the
  embedding scaled by ``sqrt(hidden)``, tied embeddings and final-logit soft-capping.

Dimension letters: B batch, T new tokens, S cached tokens, C hidden, nh query heads, nkv KV heads,
hs head size, V vocab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.models.kv import attend_with_cache
from dfx.models.layers import GatedMLP, RMSNorm, logit_positions
from dfx.models.llama import Rotary, apply_rotary

__all__ = [
    "Attention",
    "Decoder",
    "DecoderConfig",
    "DecoderLayer",
    "GatedMLP",
    "MTPModule",
    "RMSNorm",
    "FULL",
    "SLIDING",
]

FULL, SLIDING = "full_attention", "sliding_attention"  # transformers' layer_types values


@dataclass
class DecoderConfig:
    """Sizes and switches of one decoder (defaults: Mistral-7B-v0.1's config.json)."""

    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: int = 8
    head_dim: int = 128  # explicit in Qwen3 and Gemma (256 in Gemma 2 9B, not 3584 / 16 = 224)
    hidden_dim: int = 14336  # dense FFN width (DeepSeek-V3: its first dense layers)
    vocab_size: int = 32000
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0  # values only: scaling variants (YaRN, llama3) change no shape or cost
    max_seq_len: int = 4096  # rows of the rotary table
    act: str = "silu"  # "silu" (SwiGLU) or "gelu_tanh" (GeGLU, Gemma)
    qkv_bias: bool = False  # Qwen2, gpt-oss
    o_bias: bool = False  # gpt-oss
    qk_norm: bool = False  # Qwen3, Gemma 3: RMSNorm over each head's hs before rotary
    fused_qkv: bool = False  # Phi-3: one qkv_proj
    fused_gate_up: bool = False  # Phi-3: one gate_up_proj
    gemma_norms: bool = False  # (1 + w) RMSNorm, norms after attention and MLP too, embedding * sqrt(C)
    tie_embeddings: bool = False
    query_scale: float | None = None  # attention scale; None is hs**-0.5 (Gemma: query_pre_attn_scalar**-0.5)
    attn_softcap: float | None = None  # Gemma 2: scores = c * tanh(scores / c)
    final_softcap: float | None = None  # Gemma 2: logits = c * tanh(logits / c)
    sinks: bool = False  # gpt-oss: one learned logit per head joins each softmax
    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()  # per layer, FULL or SLIDING; () is all FULL
    # mixture of experts (0 experts: every layer dense)
    n_experts: int = 0
    top_k: int = 0
    moe_hidden_dim: int = 0
    n_shared_experts: int = 0  # DeepSeek: one dense MLP of n_shared * moe_hidden_dim beside the routed ones
    first_dense_layers: int = 0  # DeepSeek-V3's first_k_dense_replace
    router: str = (
        "softmax_topk"  # "softmax_topk" (Mixtral, Qwen3-MoE), "topk_softmax" (gpt-oss), "sigmoid_group" (DeepSeek-V3)
    )
    norm_topk_prob: bool = True
    router_bias: bool = False  # gpt-oss
    expert_bias: bool = False  # gpt-oss: biases on gate_up and down
    expert_act: str = "swiglu"  # "swiglu", or "clamped_swiglu" (gpt-oss: limit 7, alpha 1.702)
    n_group: int = 1  # DeepSeek-V3 grouped top-k: experts in n_group groups, topk_group of them kept
    topk_group: int = 1
    routed_scaling_factor: float = 1.0
    # multi-head latent attention (kv_lora_rank > 0: DeepSeek-V3)
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_layers: int = 0  # DeepSeek-V3's multi-token-prediction modules (off unless asked for)
    layer_map: tuple[int, ...] = ()  # built layer i is the config's layer layer_map[i] (a few layers of a model)
    family: str = field(default="decoder", compare=False)

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    def _source(self, i: int) -> int:
        return self.layer_map[i] if self.layer_map else i

    def layer_type(self, i: int) -> str:
        return self.layer_types[self._source(i)] if self.layer_types else FULL

    def window(self, i: int) -> int | None:
        """Layer ``i``'s sliding window in tokens, or None for full attention."""
        return self.sliding_window if self.layer_type(i) == SLIDING else None

    def is_moe(self, i: int) -> bool:
        return self.n_experts > 0 and self._source(i) >= self.first_dense_layers

    def layer_kind(self, i: int) -> tuple[str, bool]:
        """What makes layer ``i``'s graph differ from another's: its attention type and whether it is MoE."""
        return (self.layer_type(i) if self.sliding_window else FULL, self.is_moe(i))


def softcap(x: torch.Tensor, cap: float | None) -> torch.Tensor:
    """Gemma 2's soft cap ``cap * tanh(x / cap)`` (identity for ``cap=None``)."""
    return x if cap is None else torch.tanh(x / cap) * cap


def sliding_mask(T: int, window: int, device) -> torch.Tensor:
    """(T, T) bool: query i sees key j when ``i - window < j <= i`` (transformers' sliding causal mask)."""
    q_idx = torch.arange(T, device=device)[:, None]  # (T, 1) query positions
    kv_idx = torch.arange(T, device=device)[None, :]  # (1, T) key positions
    return (kv_idx <= q_idx) & (kv_idx > q_idx - window)


def grouped_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    cap: float | None = None,
    sinks: torch.Tensor | None = None,
) -> torch.Tensor:
    """Explicit attention for soft-capped or sink logits (SDPA has neither): (B, nh, T, hs) out.

    q (B, nh, T, hs), k and v (B, nkv, T, hs), mask (T, T) bool. The ``g = nh / nkv`` query heads of
    a KV head are rows of one matmul, so K and V are read at their own heads (no repeat_kv copy).
    Matmul FLOPs ``4 * B * nh * T * T * hs``, the SDPA convention of ``docs/cost-model.md``.
    """
    B, nh, T, hs = q.shape
    nkv = k.shape[1]
    g = nh // nkv
    s = torch.matmul(q.reshape(B, nkv, g * T, hs), k.transpose(-1, -2)) * scale  # (B, nkv, g*T, T)
    s = softcap(s, cap).masked_fill(~mask.repeat(g, 1), float("-inf"))  # row (j, t) is query t of head j
    if sinks is not None:  # one extra logit per head, dropped after the softmax
        sink = sinks.view(nkv, g, 1).expand(nkv, g, T).reshape(1, nkv, g * T, 1).expand(B, nkv, g * T, 1)
        p = F.softmax(torch.cat((s, sink.to(s.dtype)), dim=-1), dim=-1, dtype=torch.float32)[..., :T]
    else:
        p = F.softmax(s, dim=-1, dtype=torch.float32)
    y = torch.matmul(p.to(v.dtype), v)  # (B, nkv, g*T, hs)
    return y.view(B, nh, T, hs)


class Attention(nn.Module):
    """GQA self-attention of one layer, with the family switches of :class:`DecoderConfig`."""

    def __init__(self, c: DecoderConfig, layer: int):
        super().__init__()
        self.nh, self.nkv, self.hs = c.n_heads, c.n_kv_heads, c.head_dim
        self.window, self.cap = c.window(layer), c.attn_softcap
        self.scale = c.query_scale if c.query_scale is not None else c.head_dim**-0.5
        self.fused = c.fused_qkv
        if c.fused_qkv:
            self.qkv_proj = nn.Linear(c.dim, (c.n_heads + 2 * c.n_kv_heads) * c.head_dim, bias=c.qkv_bias)
        else:
            self.q_proj = nn.Linear(c.dim, c.n_heads * c.head_dim, bias=c.qkv_bias)
            self.k_proj = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=c.qkv_bias)
            self.v_proj = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=c.qkv_bias)
        self.o_proj = nn.Linear(c.n_heads * c.head_dim, c.dim, bias=c.o_bias)
        if c.qk_norm:
            self.q_norm = RMSNorm(c.head_dim, c.norm_eps, c.gemma_norms)
            self.k_norm = RMSNorm(c.head_dim, c.norm_eps, c.gemma_norms)
        self.qk_norm = c.qk_norm
        self.sinks = nn.Parameter(torch.zeros(c.n_heads)) if c.sinks else None

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape
        if self.fused:
            q, k, v = self.qkv_proj(x).split([self.nh * self.hs, self.nkv * self.hs, self.nkv * self.hs], dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(B, T, self.nh, self.hs)  # (B, T, nh, hs)
        k = k.view(B, T, self.nkv, self.hs)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        v = v.view(B, T, self.nkv, self.hs)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, nh|nkv, T, hs)

    def forward(self, x, cos, sin, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        """(B, T, C) -> (B, T, C); with ``cache`` (K, V of (B, nkv, S, hs)) also the new (K, V)."""
        B, T, _ = x.shape
        q, k, v = self._qkv(x)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if cache is not None:
            y = attend_with_cache(q, k, v, *cache, scale=self.scale, cap=self.cap, sinks=self.sinks)
        elif self.cap is None and self.sinks is None and (self.window is None or T <= self.window):
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, scale=self.scale, enable_gqa=self.nkv != self.nh
            )
        else:
            mask = sliding_mask(T, self.window or T, x.device)
            y = grouped_attention(q, k, v, mask, self.scale, self.cap, self.sinks)
        y = self.o_proj(y.transpose(1, 2).reshape(B, T, self.nh * self.hs))  # (B, T, C)
        return y if cache is None else (y, (k, v))


class DecoderLayer(nn.Module):
    """Pre-norm block ``x + attn(norm(x))``, ``x + mlp(norm(x))``; Gemma also norms each branch's output."""

    def __init__(self, c: DecoderConfig, layer: int):
        super().__init__()
        from dfx.models.mla import MLAttention
        from dfx.models.moe import MoE

        self.input_layernorm = RMSNorm(c.dim, c.norm_eps, c.gemma_norms)
        self.self_attn = MLAttention(c) if c.mla else Attention(c, layer)
        self.post_attention_layernorm = RMSNorm(c.dim, c.norm_eps, c.gemma_norms)
        self.gemma = c.gemma_norms
        if c.gemma_norms:
            self.pre_feedforward_layernorm = RMSNorm(c.dim, c.norm_eps, True)
            self.post_feedforward_layernorm = RMSNorm(c.dim, c.norm_eps, True)
        self.mlp = MoE(c) if c.is_moe(layer) else GatedMLP(c.dim, c.hidden_dim, c.act, c.fused_gate_up)

    def forward(self, x, cos, sin, cache=None):
        h = self.self_attn(self.input_layernorm(x), cos, sin, cache)
        h, new = (h, None) if cache is None else h
        if self.gemma:  # Gemma 2/3: post_attention_layernorm norms the attention's output
            x = x + self.post_attention_layernorm(h)
            x = x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        else:
            x = x + h
            x = x + self.mlp(self.post_attention_layernorm(x))
        return x if cache is None else (x, new)


class Decoder(nn.Module):
    """Embedding, ``n_layers`` :class:`DecoderLayer`, final norm, LM head (tied where the config ties it)."""

    def __init__(self, c: DecoderConfig):
        super().__init__()
        self.config = c
        self.embed_tokens = nn.Embedding(c.vocab_size, c.dim)
        self.rotary = Rotary(c.qk_rope_head_dim if c.mla else c.head_dim, c.rope_theta, c.max_seq_len)
        self.layers = nn.ModuleList([DecoderLayer(c, i) for i in range(c.n_layers)])
        self.norm = RMSNorm(c.dim, c.norm_eps, c.gemma_norms)
        self.lm_head = nn.Linear(c.dim, c.vocab_size, bias=False)
        self.logits_to_keep = 0  # positions the LM head reads (0: all; an inference step: dfx.models.decode)
        if c.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight  # one Parameter, two uses
        if c.mtp_layers:
            self.mtp = nn.ModuleList([MTPModule(c) for _ in range(c.mtp_layers)])

    def forward(self, input_ids: torch.Tensor, kv_cache: list[torch.Tensor] | None = None, start: int = 0):
        """(B, T) ids -> (B, T, V) logits ((B, k, V): the last k positions where ``logits_to_keep = k``).

        A decode step passes ``kv_cache``, one layer's cache after another (K and V, (B, nkv, S_l, hs)
        each, with ``S_l = min(start, window)`` on sliding layers; MLA: one latent (B, S, r + dr)),
        and ``start``, the position of the first new token; it gets ``(logits, new caches)`` back.
        """
        x = self.embed_tokens(input_ids)  # (B, T, C)
        if self.config.gemma_norms:  # Gemma scales the embedding by sqrt(C), in the model's dtype
            x = x * math.sqrt(self.config.dim)
        cos, sin = self.rotary(input_ids.shape[1], start=start)
        per = 1 if self.config.mla else 2  # cache tensors per layer
        new: list[torch.Tensor] = []
        for i, layer in enumerate(self.layers):
            if kv_cache is None:
                x = layer(x, cos, sin)
            else:
                cache = kv_cache[per * i] if per == 1 else (kv_cache[2 * i], kv_cache[2 * i + 1])
                x, kv = layer(x, cos, sin, cache)
                new += [kv] if per == 1 else list(kv)
        h = self.norm(x)
        logits = softcap(self.lm_head(logit_positions(h, self.logits_to_keep)), self.config.final_softcap)
        if self.config.mtp_layers and kv_cache is None:
            logits = (logits, *(m(h, input_ids, self.embed_tokens, self.lm_head, cos, sin) for m in self.mtp))
        return logits if kv_cache is None else (logits, new)


class MTPModule(nn.Module):
    """One DeepSeek-V3 multi-token-prediction depth (arXiv 2412.19437, section 2.2, Figure 3).

    ``h' = block(eh_proj([hnorm(h), enorm(embed(tokens))]))``, logits ``lm_head(shared_head.norm(h'))``
    with the main model's embedding and output head. Built only when asked for
    (``mtp_layers > 0``): transformers drops these weights, and inference usually skips them.
    """

    def __init__(self, c):
        super().__init__()
        self.enorm = RMSNorm(c.dim, c.norm_eps)
        self.hnorm = RMSNorm(c.dim, c.norm_eps)
        self.eh_proj = nn.Linear(2 * c.dim, c.dim, bias=False)
        self.block = DecoderLayer(c, c.n_layers)  # an MoE layer, as the main model's last
        self.shared_head = nn.Module()
        self.shared_head.norm = RMSNorm(c.dim, c.norm_eps)

    def forward(self, h, input_ids, embed, lm_head, cos, sin):
        e = self.enorm(embed(input_ids))  # (B, T, C): the next tokens' embeddings (shapes as the input's)
        x = self.eh_proj(torch.cat((self.hnorm(h), e), dim=-1))  # (B, T, C)
        return lm_head(self.shared_head.norm(self.block(x, cos, sin)))  # (B, T, V)
