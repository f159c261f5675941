"""BERT: the post-LN encoder layer, and the whole encoder (Devlin et al. 2019; HF ``modeling_bert.py``).

Post-LN means the LayerNorm comes after each residual add: ``LN(x + attn(x))``, then
``LN(x + ffn(x))``. Attention is bidirectional (no causal mask). Dimension letters: B batch,
T tokens, C hidden, nh heads, hs = C // nh, F intermediate, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["Bert", "BertConfig", "BertLayer", "SelfAttention"]


@dataclass
class BertConfig:
    """Defaults are bert-base (110M): Devlin et al. 2019, section 3; HF ``bert-base-uncased``."""

    hidden: int = 768
    n_heads: int = 12
    intermediate: int = 3072
    n_layers: int = 12
    vocab_size: int = 30522  # uncased WordPiece vocabulary
    max_positions: int = 512  # learned positions: the longest T the whole model takes
    type_vocab_size: int = 2  # segment A / segment B
    layer_norm_eps: float = 1e-12


class SelfAttention(nn.Module):
    """Separate Q, K, V projections (as in BERT checkpoints), bidirectional SDPA, output dense."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.query = nn.Linear(config.hidden, config.hidden)
        self.key = nn.Linear(config.hidden, config.hidden)
        self.value = nn.Linear(config.hidden, config.hidden)
        self.dense = nn.Linear(config.hidden, config.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q = self.query(x).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)
        k = self.key(x).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v)  # (B, nh, T, hs), every token sees every token
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.dense(y)


class BertLayer(nn.Module):
    """One post-LN encoder layer. (B, T, C) in and out."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = SelfAttention(config)
        self.attention_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden, config.intermediate)
        self.output = nn.Linear(config.intermediate, config.hidden)
        self.output_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.attention(x))  # (B, T, C)
        h = F.gelu(self.intermediate(x))  # (B, T, F); exact (erf) GELU, as BERT's "gelu"
        return self.output_norm(x + self.output(h))  # (B, T, C)


class Bert(nn.Module):
    """HF ``BertModel``: embeddings (word + position + segment, LayerNorm), layers, and the pooler.

    Returns the sequence output (B, T, C); the pooler (dense + tanh on the first token) is computed
    too, so its parameters and FLOPs are part of the graph, as in ``BertModel``.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden)
        self.position_embeddings = nn.Embedding(config.max_positions, config.hidden)
        self.register_buffer("position_ids", torch.arange(config.max_positions), persistent=False)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden)
        self.embeddings_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.layers = nn.ModuleList([BertLayer(config) for _ in range(config.n_layers)])
        self.pooler = nn.Linear(config.hidden, config.hidden)

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = self.position_ids[: input_ids.shape[1]]  # (T,)
        segment = torch.zeros_like(input_ids)  # (B, T): every token in segment A
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(segment)
        x = self.embeddings_norm(x)  # (B, T, C)
        for layer in self.layers:
            x = layer(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))  # (B, C)
        return x, pooled
