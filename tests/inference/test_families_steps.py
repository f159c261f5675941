"""Decode steps and prefills of the decoder families: MLA's absorbed form, sliding windows, sinks, repeats.

Tiny configs (widths 64, 4 heads) keep these fast; the numbers checked are closed forms written
here, or the same computation done another way (the expanded MLA, a prefill's last row).
"""

from __future__ import annotations

import json

import pytest
import torch

import dfx
from dfx.capture import capture
from dfx.costs import annotate
from dfx.inference.steps import capture_step
from dfx.models.decode import build_step
from dfx.models.decoder import Attention, DecoderConfig, SLIDING
from dfx.models.llama import Rotary
from dfx.models.mla import MLAttention

# ops the moe branch prices (aten._grouped_mm, aten.histc); every other op must have a rule
_MOE_OPS = {"aten._grouped_mm.default", "aten.histc.default"}

_TINY = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=128)
_TINY_FAMILIES = {
    "mistral": dict(sliding_window=8),
    "qwen2": {},
    "qwen3": dict(head_dim=32),
    "gemma2": dict(head_dim=32, sliding_window=8, attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
    "gemma3_text": dict(head_dim=32, sliding_window=8, num_hidden_layers=7),
    "phi3": {},
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2),
    "qwen3_moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, head_dim=32),
    "gpt_oss": dict(num_local_experts=4, num_experts_per_tok=2, head_dim=32, sliding_window=8, num_hidden_layers=5),
    "deepseek_v3": dict(
        num_key_value_heads=4,
        n_routed_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        n_shared_experts=1,
        first_k_dense_replace=2,
        num_hidden_layers=5,
        q_lora_rank=48,
        kv_lora_rank=32,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=16,
        n_group=4,
        topk_group=2,
    ),
}


def _tiny(tmp_path, model_type: str) -> str:
    config = {"model_type": model_type, "num_hidden_layers": 4, **_TINY, **_TINY_FAMILIES[model_type]}
    path = tmp_path / f"{model_type}.json"
    path.write_text(json.dumps(config))
    return f"hf:{path}"


@pytest.mark.parametrize("model_type", list(_TINY_FAMILIES))
@pytest.mark.parametrize("tokens, kv_len", [(12, 0), (1, 20)])  # a prefill, a decode step past the window
def test_repeated_step_equals_the_whole_capture(tmp_path, model_type, tokens, kv_len):
    spec = _tiny(tmp_path, model_type)
    step = capture_step(spec, batch=2, tokens=tokens, kv_len=kv_len, dtype="bfloat16")
    whole = build_step(spec, batch=2, tokens=tokens, kv_len=kv_len, dtype="bfloat16", layers=None)
    reference = annotate(capture(whole.spec.model, whole.spec.args, whole.spec.kwargs))
    assert step.costed.total == reference.total
    assert step.costed.unique_parameter_count() == reference.unique_parameter_count()
    assert {u.target for u in step.costed.unknown_ops} <= _MOE_OPS


def _mla_config() -> DecoderConfig:
    return DecoderConfig(
        dim=64, n_heads=4, q_lora_rank=48, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16
    )


def test_mla_absorbed_decode_equals_the_expanded_attention():
    torch.manual_seed(0)
    c = _mla_config()
    attn = MLAttention(c).float().eval()
    for p in attn.parameters():
        torch.nn.init.normal_(p, std=0.2)
    S = 6
    x = torch.randn(2, S + 1, 64)
    cos, sin = Rotary(8, 10000.0, 16)(S + 1)
    with torch.no_grad():
        expanded = attn(x, cos, sin)[:, -1]  # a causal prefill's last token
        c_kv, k_pe = attn.kv_a_proj_with_mqa(x[:, :S]).split([32, 8], dim=-1)
        from dfx.models.llama import apply_rotary

        k_pe = apply_rotary(k_pe.unsqueeze(1), cos[:S], sin[:S]).squeeze(1)
        cache = torch.cat((attn.kv_a_layernorm(c_kv), k_pe), dim=-1)  # (B, S, r + dr)
        absorbed, latent = attn(x[:, S:], cos[S:], sin[S:], cache)
    assert latent.shape == (2, 1, 40)
    torch.testing.assert_close(absorbed[:, 0], expanded, rtol=1e-4, atol=1e-4)


def test_mla_absorbed_decode_flops_by_the_paper():
    c = _mla_config()
    with torch.device("meta"):
        attn = MLAttention(c)
    B, T, S, C, H, qr, r, dr, dn, dv = 2, 1, 100, 64, 4, 48, 32, 8, 16, 16
    cos, sin = torch.zeros(T, dr, device="meta"), torch.zeros(T, dr, device="meta")
    x, cache = torch.zeros(B, T, C, device="meta"), torch.zeros(B, S, r + dr, device="meta")
    costed = annotate(capture(attn, (x, cos, sin, cache)))
    projections = 2 * B * T * (C * qr + qr * H * (dn + dr) + C * (r + dr) + H * dv * C)  # q_a, q_b, kv_a, o
    absorbed = (
        2 * B * T * H * dn * r  # q_nope @ W_UK: the query in the latent space
        + 2 * B * H * T * (S + T) * (r + dr)  # scores over the cached latents and the new one
        + 2 * B * H * T * (S + T) * r  # probabilities @ latents
        + 2 * B * T * H * r * dv  # @ W_UV: out of the latent space
    )
    assert costed.flops_by_category()["matmul"] == projections + absorbed
    # the cache is read as it is stored: (B, S, r + dr) once, never expanded per head
    assert max(n.outputs[0].numel for n in costed.graph.nodes if n.outputs) < B * H * S * (r + dr)


def test_sinks_softcap_and_window_decode_equals_the_prefill():
    torch.manual_seed(0)
    c = DecoderConfig(
        dim=64, n_heads=4, n_kv_heads=2, head_dim=16, qkv_bias=True, sinks=True, attn_softcap=5.0, query_scale=0.3
    )
    c.sliding_window, c.layer_types = 32, (SLIDING,)
    attn = Attention(c, 0).float().eval()
    for p in attn.parameters():
        torch.nn.init.normal_(p, std=0.3)
    S = 9  # within the window: the prefill's last row sees every earlier token, as the decode step does
    x = torch.randn(2, S + 1, 64)
    cos, sin = Rotary(16, 10000.0, 16)(S + 1)
    with torch.no_grad():
        prefill = attn(x, cos, sin)[:, -1]
        _, k, v = attn._qkv(x[:, :S])
        from dfx.models.llama import apply_rotary

        k = apply_rotary(k, cos[:S], sin[:S])
        decode, _ = attn(x[:, S:], cos[S:], sin[S:], (k, v))
    torch.testing.assert_close(decode[:, 0], prefill, rtol=1e-4, atol=1e-4)


def test_decode_kv_cache_bytes_past_the_window():
    # gemma-2-9b at kv_len 5,000, batch 1, bf16: 21 sliding layers keep 4,096 tokens, 21 global 5,000;
    # each token of each layer is K and V of 8 heads x 256: 2 * 8 * 256 * 2 B = 8,192 B
    a = dfx.analyze("hf:gemma-2-9b", hardware=[], dtype="bf16", phase="decode", kv_len=5000)
    assert a.inference.kv_cache_bytes == 8192 * (21 * 4096 + 21 * 5000)
    # DeepSeek-V3 at kv_len 4,096: 61 layers x (512 + 64) x 2 B per token
    d = dfx.analyze("hf:deepseek-v3", hardware=[], dtype="bf16", phase="decode", kv_len=4096)
    assert d.inference.kv_cache_bytes == 61 * 576 * 2 * 4096


@pytest.mark.parametrize("model_type", ["deepseek_v3"])  # MLA expanded, shared + routed experts
def test_training_step_captures_the_routed_experts(tmp_path, model_type):
    from dfx.capture.joint import capture_joint
    from dfx.models.hf import build_hf

    spec = build_hf(_tiny(tmp_path, model_type)[3:], seq=16, dtype="bfloat16", implementation="dfx")
    graph = capture_joint(spec.model, spec.args, spec.kwargs)
    grouped = [n for n in graph.nodes if any(c.op == "aten._grouped_mm.default" for c in n.aten_calls)]
    moe_layers = sum(1 for m in spec.model.modules() if type(m).__name__ == "Experts")
    # each MoE layer: 2 grouped GEMMs forward; backward 2 more per forward one (input and weight gradients)
    assert len(grouped) == moe_layers * 2 * 3
    assert {u.target for u in annotate(graph).unknown_ops} <= _MOE_OPS
