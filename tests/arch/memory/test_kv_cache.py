"""KV-cache bytes read from a captured graph equal 2 * layers * kv_heads * head_dim * tokens * bytes.

Each expected value is that closed form (Pope et al. 2022, section 2) from the model's own config
fields, never the code's output. Models: every shipped ``hf:`` config (transformers' and dfx's own
builds), transformers Llama with GQA and MQA under SDPA and eager attention given an explicit
``attention_mask``, Mistral's sliding window, GPT-2 and BERT with masks, nanoGPT's buffer mask, and
a hand-written encoder-decoder whose cross-attention is cached.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.arch.memory.kv_cache import cached_attentions, kv_cache_bytes
from dfx.arch.memory.model_shape import graph_kv_geometry
from dfx.capture import capture
from dfx.models.hf import build_hf, load_config, shipped_configs

transformers = pytest.importorskip("transformers")

_FP32 = 4  # bytes per element


def _formula(layers: int, kv_heads: int, head_dim: int, tokens: int, batch: int = 1, itemsize: int = _FP32) -> int:
    return 2 * layers * kv_heads * head_dim * tokens * batch * itemsize


class _Masked(nn.Module):
    """A transformers model called with an explicit ``attention_mask`` input."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def _masked_graph(model: nn.Module, batch: int, seq: int):
    ids = torch.zeros(batch, seq, dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    return capture(_Masked(model.eval()), (ids, mask))


def _llama(impl: str, kv_heads: int, layers: int = 2, **extra) -> nn.Module:
    cfg = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=kv_heads,
        vocab_size=100,
        max_position_embeddings=64,
        use_cache=False,
        **extra,
    )
    return transformers.LlamaForCausalLM._from_config(cfg, attn_implementation=impl)


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
@pytest.mark.parametrize("kv_heads", [2, 1, 8], ids=["gqa", "mqa", "mha"])
def test_llama_with_explicit_mask(impl, kv_heads):
    graph = _masked_graph(_llama(impl, kv_heads), batch=2, seq=16)
    # 8 query heads of 64 / 8 = 8; GQA 2 KV heads: 2 * 2 layers * 2 * 8 * 16 tokens * 2 seqs * 4 B = 4,096
    assert kv_cache_bytes(graph) == _formula(2, kv_heads, 8, 16, batch=2)
    geo = graph_kv_geometry(graph)
    assert (geo.layers, geo.kv_heads, geo.head_dim) == (2, kv_heads, 8)


def test_mistral_sliding_window_mask_is_causal():
    cfg = transformers.MistralConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        vocab_size=100,
        max_position_embeddings=64,
        sliding_window=8,
        use_cache=False,
    )
    model = transformers.MistralForCausalLM._from_config(cfg, attn_implementation="sdpa")
    graph = _masked_graph(model, batch=1, seq=16)
    # the window is in the mask (kv_idx > q_idx - 8); the captured call's 16 tokens are counted
    assert kv_cache_bytes(graph) == _formula(2, 2, 8, 16)


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_gpt2_with_explicit_mask(impl):
    cfg = transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    graph = _masked_graph(transformers.GPT2LMHeadModel._from_config(cfg, attn_implementation=impl), batch=1, seq=16)
    assert kv_cache_bytes(graph) == _formula(2, 4, 16, 16)  # 4 heads of 64 / 4 = 16


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_bert_with_padding_mask_keeps_no_cache(impl):
    cfg = transformers.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=100
    )
    graph = _masked_graph(transformers.BertModel._from_config(cfg, attn_implementation=impl), batch=1, seq=16)
    assert kv_cache_bytes(graph) == 0 and graph_kv_geometry(graph) is None


def _small_config(tmp_path, name: str) -> str:
    config = dict(load_config(name)[0])
    for key in ("num_hidden_layers", "n_layer"):
        if key in config:
            config[key] = 2
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("impl", ["transformers", "dfx"])
@pytest.mark.parametrize("name", shipped_configs())
def test_every_shipped_config(tmp_path, name, impl):
    config = load_config(name)[0]
    if config.get("kv_lora_rank"):
        pytest.skip("MLA caches a latent the graph's attention never reads; capacity reads its config")
    moe = any(k in config for k in ("num_local_experts", "num_experts", "n_routed_experts"))
    dtype = "bfloat16" if moe else "float32"  # torch's grouped-GEMM shape rule takes bfloat16 only
    spec = build_hf(_small_config(tmp_path, name), batch=1, seq=8, implementation=impl, dtype=dtype)
    graph = capture(spec.model, spec.args, spec.kwargs)
    if not any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.get("architectures", [])):
        assert kv_cache_bytes(graph) == 0  # an encoder (BERT) caches nothing
        return
    heads = config.get("num_attention_heads", config.get("n_head"))
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config.get("hidden_size", config.get("n_embd")) // heads
    # e.g. Llama-3-8B, 2 layers kept: 2 * 2 * 8 KV heads * 128 * 8 tokens * 4 B = 65,536
    assert kv_cache_bytes(graph) == _formula(2, kv_heads, head_dim, 8) // (2 if moe else 1)  # bf16: 2 B


class _NanoGptAttention(nn.Module):
    """nanoGPT's manual path: a registered lower-triangular ``bias`` buffer and ``masked_fill``."""

    def __init__(self, dim: int = 32, heads: int = 4, block: int = 16):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        return (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)


def test_nanogpt_buffer_mask():
    graph = capture(_NanoGptAttention(), (torch.randn(1, 16, 32),))
    assert kv_cache_bytes(graph) == _formula(1, 4, 8, 16)  # 4 heads of 32 / 4 = 8


class _EncoderDecoder(nn.Module):
    """One encoder self-attention, then a decoder layer: causal self-attention and cross-attention."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.enc = nn.Linear(dim, 3 * dim)
        self.dec = nn.Linear(dim, 3 * dim)
        self.cross_q, self.cross_kv = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim)

    def _split(self, x):
        b, t, c = x.shape
        return x.view(b, t, self.heads, c // self.heads).transpose(1, 2)

    def _merge(self, x):
        b, h, t, d = x.shape
        return x.transpose(1, 2).reshape(b, t, h * d)

    def forward(self, src, tgt):
        q, k, v = (self._split(z) for z in self.enc(src).chunk(3, dim=-1))
        memory = self._merge(F.scaled_dot_product_attention(q, k, v))  # encoder: not cached
        q, k, v = (self._split(z) for z in self.dec(tgt).chunk(3, dim=-1))
        h = self._merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))  # cached over tgt tokens
        k, v = (self._split(z) for z in self.cross_kv(memory).chunk(2, dim=-1))
        return F.scaled_dot_product_attention(self._split(self.cross_q(h)), k, v)  # cached over src tokens


def test_cross_attention_is_cached_over_the_encoder_tokens():
    graph = capture(_EncoderDecoder(), (torch.randn(1, 24, 32), torch.randn(1, 10, 32)))
    # self-attention 2 * 4 heads * 8 * 10 tgt tokens * 4 B = 2,560; cross 2 * 4 * 8 * 24 src * 4 B = 6,144
    assert kv_cache_bytes(graph) == _formula(1, 4, 8, 10) + _formula(1, 4, 8, 24)
    assert [a.cross for a in cached_attentions(graph)] == [False, True]
