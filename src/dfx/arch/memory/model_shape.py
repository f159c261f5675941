"""What capacity needs from a model without capturing all of it: parameter count and KV geometry.

Two sources, one per kind of model:

* ``hf:`` configs: closed forms from the config JSON (no capture; a 70B model counts in
  microseconds). ``parameter_count_from_config`` covers Llama-style decoders (``llama``,
  ``mistral``, ``qwen2``: q/k/v/o projections with GQA, SwiGLU, RMSNorm) and GPT-2; tests check
  each equals the captured unique parameter count on a small config. KV geometry is
  ``num_hidden_layers`` (``n_layer``), ``num_key_value_heads`` (else the query heads) and
  ``head_dim`` (else ``hidden_size / num_attention_heads``).
* Built-ins and file models: the captured graph. :mod:`.kv_cache` finds each causal attention
  (SDPA or eager, ``is_causal`` or an explicit causal mask) and the key and value tensors before any
  GQA ``repeat_kv`` expansion, so their bytes are what a decoder caches: KV heads, not query heads.
  Non-causal attention (BERT, ViT) keeps no cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dfx.errors import DfxError
from dfx.arch.memory.kv_cache import cached_attentions, kv_cache_bytes
from dfx.ir import Graph

__all__ = [
    "KvGeometry",
    "graph_kv_cache_bytes",
    "graph_kv_geometry",
    "kv_geometry_from_config",
    "parameter_count_from_config",
]

_LLAMA_LIKE = ("llama", "mistral", "qwen2")


@dataclass(frozen=True)
class KvGeometry:
    """Layers, KV heads and head size of a decoder; ``causal=False`` means no cache (an encoder)."""

    layers: int
    kv_heads: int
    head_dim: int
    causal: bool = True
    latent_dim: int = 0  # MLA (DeepSeek-V3): kv_lora_rank + qk_rope_head_dim elements per token and layer
    windows: tuple[int | None, ...] = ()  # per layer sliding window (None: full attention)

    def cache_bytes(self, batch: int, seq: int, itemsize: int) -> int:
        """``2 * L * B * S * H_kv * D * itemsize`` (0 for an encoder).

        MLA caches ``latent_dim`` elements per token and layer instead of ``2 * H_kv * D``; a
        sliding-window layer keeps ``min(S, window)`` tokens.

        Examples
        --------
        >>> KvGeometry(layers=80, kv_heads=8, head_dim=128).cache_bytes(1, 4096, 2)  # Llama-2-70B
        1342177280
        >>> KvGeometry(61, 1, 576, latent_dim=576).cache_bytes(1, 4096, 2)  # DeepSeek-V3: 61 * 576 * 4096 * 2
        287834112
        """
        from dfx.ir.kv import cached_layer_tokens, layer_elements_per_token

        if not self.causal:
            return 0
        per_layer = layer_elements_per_token(self.kv_heads, self.head_dim, self.latent_dim)
        return per_layer * batch * cached_layer_tokens(self.layers, self.windows, seq) * itemsize


def _is_decoder(config: dict[str, Any]) -> bool:
    return any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.get("architectures") or [])


def kv_geometry_from_config(config: dict[str, Any]) -> KvGeometry:
    """KV geometry from a Hugging Face config dict (field names as in ``transformers``)."""
    try:
        layers = config.get("num_hidden_layers", config.get("n_layer"))
        heads = config.get("num_attention_heads", config.get("n_head"))
        hidden = config.get("hidden_size", config.get("n_embd"))
        kv_heads = config.get("num_key_value_heads") or heads
        head_dim = config.get("head_dim") or hidden // heads
        if config.get("kv_lora_rank"):  # MLA: one latent per token and layer (arXiv 2405.04434, 2.1.2)
            latent = int(config["kv_lora_rank"]) + int(config.get("qk_rope_head_dim") or 0)
            return KvGeometry(int(layers), 1, latent, causal=_is_decoder(config), latent_dim=latent)
        windows = _windows(config, int(layers))
        return KvGeometry(int(layers), int(kv_heads), int(head_dim), causal=_is_decoder(config), windows=windows)
    except TypeError:
        raise DfxError(f"config of model_type {config.get('model_type')!r} names no layer/head/hidden sizes") from None


# Families whose layers alternate sliding and full attention without listing layer_types: every
# n-th layer full (transformers' configuration_gemma2.py, configuration_gemma3.py, configuration_gpt_oss.py).
_FULL_EVERY = {"gemma2": 2, "gpt_oss": 2, "gemma3_text": 6}
_ALL_SLIDING = ("mistral", "phi3", "mixtral")  # a sliding_window applies to every layer


def _windows(c: dict[str, Any], layers: int) -> tuple[int | None, ...]:
    """Per layer sliding window of a config (dfx.models.families reads the same fields), () for none."""
    w = c.get("sliding_window")
    kind = c.get("model_type")
    if not w or (kind not in _FULL_EVERY and kind not in _ALL_SLIDING and not c.get("layer_types")):
        return ()
    if c.get("layer_types"):
        return tuple(w if t == "sliding_attention" else None for t in c["layer_types"])
    if kind in _ALL_SLIDING:
        return (int(w),) * layers
    every = int(c.get("sliding_window_pattern") or _FULL_EVERY[kind])
    return tuple(int(w) if (i + 1) % every else None for i in range(layers))


def _llama_count(c: dict[str, Any]) -> int:
    d, f, v, layers = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    heads = c["num_attention_heads"]
    kv, hd = c.get("num_key_value_heads") or heads, c.get("head_dim") or d // heads
    attn = d * heads * hd + 2 * d * kv * hd + heads * hd * d  # q, k, v, o weights
    if c.get("attention_bias"):
        attn += heads * hd + 2 * kv * hd + d
    elif c.get("model_type") == "qwen2":  # Qwen2 always biases q, k and v (modeling_qwen2.py), not o
        attn += heads * hd + 2 * kv * hd
    mlp = 3 * d * f + (2 * f + d if c.get("mlp_bias") else 0)  # gate, up, down
    per_layer = attn + mlp + 2 * d  # two RMSNorm weights
    embed = v * d * (1 if c.get("tie_word_embeddings", False) else 2)  # embed_tokens (+ lm_head)
    return embed + layers * per_layer + d  # + final norm


def _gpt2_count(c: dict[str, Any]) -> int:
    d, v, p, layers = c["n_embd"], c["vocab_size"], c.get("n_positions", 1024), c["n_layer"]
    inner = c.get("n_inner") or 4 * d
    per_layer = (
        2 * 2 * d  # ln_1, ln_2 (weight + bias)
        + d * 3 * d
        + 3 * d  # c_attn (fused qkv) + bias
        + d * d
        + d  # attn c_proj
        + d * inner
        + inner
        + inner * d
        + d  # mlp c_fc, c_proj
    )
    lm_head = 0 if c.get("tie_word_embeddings", True) else v * d
    return v * d + p * d + layers * per_layer + 2 * d + lm_head  # wte, wpe, blocks, ln_f


def parameter_count_from_config(config: dict[str, Any]) -> int | None:
    """Closed-form parameter count of a Hugging Face config, or ``None`` for an unsupported model type.

    Examples
    --------
    >>> from dfx.models.hf import load_config
    >>> parameter_count_from_config(load_config("llama-2-70b")[0])
    68976648192
    """
    kind = config.get("model_type")
    try:
        if kind in _LLAMA_LIKE:
            return _llama_count(config)
        if kind == "gpt2":
            return _gpt2_count(config)
    except KeyError as exc:
        raise DfxError(f"the {kind} config has no {exc.args[0]!r} field") from None
    return None


def graph_kv_cache_bytes(graph: Graph) -> int:
    """Bytes of the key and value tensors a decoder caches, read from ``graph`` (:mod:`.kv_cache`)."""
    return kv_cache_bytes(graph)


def graph_kv_geometry(graph: Graph) -> KvGeometry | None:
    """Layers (cached attentions), KV heads and head size of the first one; None without a cache."""
    found = cached_attentions(graph)
    if not found:
        return None
    return KvGeometry(len(found), found[0].kv_heads, found[0].head_dim)
