"""Hugging Face ``config.json`` fields -> :class:`~dfx.models.decoder.DecoderConfig`, per model_type.

Each reader follows the field names and defaults of that family's ``configuration_*.py`` in
transformers 5 (a field a published config omits takes transformers' default, written here).
"""

from __future__ import annotations

from typing import Any, Callable

from dfx.errors import ModelSpecError
from dfx.models.decoder import FULL, SLIDING, DecoderConfig

__all__ = ["FAMILIES", "decoder_config"]


def _theta(c: dict[str, Any], default: float) -> float:
    rope = c.get("rope_parameters") or {}
    return float(c.get("rope_theta") or rope.get("rope_theta") or default)


def _common(c: dict[str, Any], seq: int, **defaults) -> dict[str, Any]:
    heads = c["num_attention_heads"]
    return dict(
        dim=c["hidden_size"],
        n_layers=c["num_hidden_layers"],
        n_heads=heads,
        n_kv_heads=c.get("num_key_value_heads") or heads,
        head_dim=c.get("head_dim") or c["hidden_size"] // heads,
        hidden_dim=c.get("intermediate_size", 0),
        vocab_size=c["vocab_size"],
        norm_eps=float(c.get("rms_norm_eps", defaults.get("eps", 1e-6))),
        rope_theta=_theta(c, defaults.get("theta", 10000.0)),
        max_seq_len=max(seq, c.get("max_position_embeddings") or 0),
        tie_embeddings=bool(c.get("tie_word_embeddings", defaults.get("tie", False))),
    )


def _layer_types(c: dict[str, Any], every: int | None) -> tuple[str, ...]:
    """Explicit ``layer_types``; else every ``every``-th layer full, the others sliding (Gemma, gpt-oss)."""
    L = c["num_hidden_layers"]
    if c.get("layer_types"):  # a config cut to fewer layers keeps its first layers' types
        return tuple(c["layer_types"][:L])
    if every is None:  # Mistral, Phi-3: every layer slides when the config names a window
        return (SLIDING,) * L if c.get("sliding_window") else ()
    return tuple(SLIDING if (i + 1) % every else FULL for i in range(L))


def _mistral(c, seq):  # also Phi-3 without fusion, and Mixtral's attention
    return DecoderConfig(**_common(c, seq), sliding_window=c.get("sliding_window"), layer_types=_layer_types(c, None))


def _qwen2(c, seq):
    # Qwen2/3 configs ship use_sliding_window false: full attention in every layer.
    window = c.get("sliding_window") if c.get("use_sliding_window") else None
    if window:
        raise ModelSpecError("dfx's Qwen models have no use_sliding_window; set it false or use transformers")
    return DecoderConfig(**_common(c, seq), qkv_bias=c.get("model_type") == "qwen2" or bool(c.get("attention_bias")))


def _qwen3(c, seq):
    cfg = _qwen2(c, seq)
    cfg.qkv_bias, cfg.qk_norm = bool(c.get("attention_bias")), True
    return cfg


def _qwen3_moe(c, seq):
    cfg = _qwen3(c, seq)
    if c.get("mlp_only_layers") or c.get("decoder_sparse_step", 1) != 1:
        raise ModelSpecError("dfx's Qwen3-MoE makes every layer sparse (decoder_sparse_step 1, no mlp_only_layers)")
    cfg.n_experts, cfg.top_k = c["num_experts"], c["num_experts_per_tok"]
    cfg.moe_hidden_dim, cfg.norm_topk_prob = c["moe_intermediate_size"], bool(c.get("norm_topk_prob", False))
    return cfg


def _mixtral(c, seq):
    cfg = _mistral(c, seq)
    cfg.n_experts, cfg.top_k, cfg.moe_hidden_dim = (
        c["num_local_experts"],
        c["num_experts_per_tok"],
        c["intermediate_size"],
    )
    return cfg


def _phi3(c, seq):
    cfg = _mistral(c, seq)
    cfg.fused_qkv = cfg.fused_gate_up = True
    if c.get("partial_rotary_factor", 1.0) != 1.0:
        raise ModelSpecError("dfx's Phi-3 applies rotary to the whole head (partial_rotary_factor 1.0)")
    return cfg


def _gemma(c, seq, every: int, qk_norm: bool, caps: bool):
    cfg = DecoderConfig(**_common(c, seq, tie=True), act="gelu_tanh", gemma_norms=True, qk_norm=qk_norm)
    cfg.query_scale = float(c.get("query_pre_attn_scalar", 256)) ** -0.5
    cfg.sliding_window = c.get("sliding_window", 4096)
    cfg.layer_types = _layer_types(c, every)
    if caps:
        cfg.attn_softcap, cfg.final_softcap = c.get("attn_logit_softcapping"), c.get("final_logit_softcapping")
    return cfg


def _gemma2(c, seq):
    return _gemma(c, seq, every=2, qk_norm=False, caps=True)  # transformers: layer i slides when (i+1) % 2


def _gemma3(c, seq):
    return _gemma(c, seq, every=c.get("sliding_window_pattern", 6), qk_norm=True, caps=True)


def _gpt_oss(c, seq):
    cfg = DecoderConfig(**_common(c, seq), qkv_bias=True, o_bias=True, sinks=True)
    cfg.sliding_window, cfg.layer_types = c.get("sliding_window", 128), _layer_types(c, 2)
    cfg.n_experts, cfg.top_k = c["num_local_experts"], c.get("num_experts_per_tok", c.get("experts_per_token", 4))
    cfg.moe_hidden_dim, cfg.router = c["intermediate_size"], "topk_softmax"
    cfg.router_bias = cfg.expert_bias = True
    cfg.expert_act = "clamped_swiglu"
    return cfg


def _deepseek_v3(c, seq):
    cfg = DecoderConfig(**_common(c, seq))
    cfg.q_lora_rank, cfg.kv_lora_rank = c.get("q_lora_rank"), c["kv_lora_rank"]
    cfg.qk_nope_head_dim, cfg.qk_rope_head_dim = c["qk_nope_head_dim"], c["qk_rope_head_dim"]
    cfg.v_head_dim = c["v_head_dim"]
    cfg.head_dim = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    cfg.n_experts, cfg.top_k = c["n_routed_experts"], c["num_experts_per_tok"]
    cfg.moe_hidden_dim, cfg.n_shared_experts = c["moe_intermediate_size"], c.get("n_shared_experts") or 0
    cfg.first_dense_layers, cfg.router = c.get("first_k_dense_replace", 0), "sigmoid_group"
    cfg.n_group, cfg.topk_group = c.get("n_group", 1), c.get("topk_group", 1)
    cfg.norm_topk_prob = bool(c.get("norm_topk_prob", True))
    cfg.routed_scaling_factor = float(c.get("routed_scaling_factor", 1.0))
    return cfg


FAMILIES: dict[str, Callable[[dict[str, Any], int], DecoderConfig]] = {
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3,
    "phi3": _phi3,
    "gpt_oss": _gpt_oss,
    "deepseek_v3": _deepseek_v3,
}


def decoder_config(c: dict[str, Any], seq: int, mtp: bool = False) -> DecoderConfig:
    """The :class:`DecoderConfig` of a ``config.json`` dict whose ``model_type`` is in :data:`FAMILIES`.

    ``mtp=True`` adds DeepSeek-V3's ``num_nextn_predict_layers`` multi-token-prediction modules.

    Raises
    ------
    ModelSpecError
        An unknown model_type, a missing field, or a variant dfx's decoder does not build.

    Examples
    --------
    >>> cfg = decoder_config({"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36,
    ...     "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    ...     "intermediate_size": 12288, "vocab_size": 151936}, 128)
    >>> cfg.qk_norm, cfg.qkv_bias, cfg.head_dim
    (True, False, 128)
    """
    kind = c.get("model_type")
    if kind not in FAMILIES:
        raise ModelSpecError(f"dfx's decoder has no model_type {kind!r}; it builds {', '.join(FAMILIES)}")
    try:
        cfg = FAMILIES[kind](c, seq)
    except KeyError as exc:
        raise ModelSpecError(f"the {kind} config has no {exc.args[0]!r} field") from None
    cfg.family = kind
    if mtp:
        cfg.mtp_layers = int(c.get("num_nextn_predict_layers") or 0)
    return cfg
