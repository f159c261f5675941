"""The KV cache's size rule, once: what a decoder keeps per token and per layer, and for how long.

A GQA or MHA layer caches K and V, ``2 * n_kv_heads * head_dim`` elements per token; an MLA layer
(DeepSeek-V2/V3) one latent of ``kv_lora_rank + qk_rope_head_dim`` elements (arXiv 2405.04434,
section 2.1.2). A sliding-window layer keeps at most its window's tokens (Mistral 7B, arXiv
2310.06825, section 2; Gemma 2's local layers). The torch-side geometry of a captured decoder
(:class:`dfx.models.decode.KVGeometry`), the capacity planner's geometry from a config
(:class:`dfx.arch.memory.model_shape.KvGeometry`) and a phase's result
(:class:`dfx.inference.phases.InferenceResult`) all count with these two functions.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["cached_layer_tokens", "kept_tokens", "layer_elements_per_token"]


def layer_elements_per_token(n_kv_heads: int, head_dim: int, latent_dim: int = 0) -> int:
    """Elements one token adds to one layer's cache: ``latent_dim`` (MLA) or ``2 * n_kv_heads * head_dim``.

    >>> layer_elements_per_token(8, 128)  # Llama-3-8B: K and V, 8 KV heads of 128
    2048
    >>> layer_elements_per_token(128, 192, latent_dim=576)  # DeepSeek-V3: 512 + 64
    576
    """
    return latent_dim or 2 * n_kv_heads * head_dim


def kept_tokens(window: int | None, tokens: int) -> int:
    """Tokens one layer keeps of ``tokens``: ``min(tokens, window)`` on a sliding layer, all on a full one.

    >>> kept_tokens(4096, 10000), kept_tokens(None, 10000)
    (4096, 10000)
    """
    return tokens if window is None else min(tokens, window)


def cached_layer_tokens(n_layers: int, windows: Sequence[int | None], tokens: int) -> int:
    """Sum over layers of the tokens each keeps of ``tokens``: ``min(tokens, window)`` on a sliding
    layer, ``tokens`` on a full one; ``windows`` empty means every layer is full.

    >>> cached_layer_tokens(2, (3, None), 10)  # 3 + 10
    13
    >>> cached_layer_tokens(32, (), 100)
    3200
    """
    if not windows:
        return n_layers * tokens
    return sum(kept_tokens(w, tokens) for w in windows)
