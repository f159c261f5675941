"""transformers' own Mixtral, tiny, on the meta device: the MoE tests' reference model."""

from __future__ import annotations

import torch
import transformers

T, D, F, E, K, L = 128, 256, 512, 8, 2, 2  # tokens, hidden, expert width, experts, top-k, layers
H, HKV, HD, V = 8, 2, 32, 1000  # query heads, KV heads, head dim (D / H), vocab


def mixtral(
    tokens: int = T,
    layers: int = L,
    hidden: int = D,
    ffn: int = F,
    experts: int = E,
    top_k: int = K,
    heads: int = H,
    kv_heads: int = HKV,
    vocab: int = V,
    batch: int = 1,
):
    """``(MixtralForCausalLM in bf16 on meta, input_ids [batch, tokens])``."""
    cfg = transformers.MixtralConfig(
        hidden_size=hidden,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        num_local_experts=experts,
        num_experts_per_tok=top_k,
        vocab_size=vocab,
        sliding_window=None,  # full causal attention (a sliding-window mask calls .item(), not on meta)
        use_cache=False,
    )
    with torch.device("meta"):
        model = transformers.MixtralForCausalLM._from_config(cfg, attn_implementation="sdpa")
        model = model.to(torch.bfloat16).eval()  # bf16: transformers calls torch._grouped_mm (fp32: its fallback)
        ids = torch.zeros(batch, tokens, dtype=torch.int64)
    return model, ids
