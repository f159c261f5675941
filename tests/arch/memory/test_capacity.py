"""Capacity: hand-derived parameter counts, KV cache with GQA, chips needed and spills."""

from __future__ import annotations

import json

import pytest

from dfx.arch.memory.api import capture_costed, model_capacity
from dfx.arch.memory.capacity import capacity_report
from dfx.arch.memory.model_shape import (
    KvGeometry,
    graph_kv_cache_bytes,
    graph_kv_geometry,
    kv_geometry_from_config,
    parameter_count_from_config,
)
from dfx.hardware import load_profile
from dfx.models.hf import load_config

P70 = 68_976_648_192


def test_llama_2_70b_closed_form_by_hand():
    # d = 8192, F = 28672, V = 32000, 80 layers, 64 query / 8 KV heads of 128:
    # per layer q 8192^2 + k, v 2 * 8192 * 1024 + o 8192^2 + MLP 3 * 8192 * 28672 + 2 norms * 8192
    per_layer = 67_108_864 + 16_777_216 + 67_108_864 + 704_643_072 + 16_384  # 855,654,400
    total = 80 * per_layer + 2 * 32000 * 8192 + 8192  # + embed_tokens, lm_head (untied), final norm
    assert total == P70
    assert parameter_count_from_config(load_config("llama-2-70b")[0]) == P70


def test_kv_cache_uses_kv_heads():
    geo = kv_geometry_from_config(load_config("llama-2-70b")[0])
    assert (geo.layers, geo.kv_heads, geo.head_dim, geo.causal) == (80, 8, 128, True)
    # 2 (K and V) * 80 layers * batch 2 * 4096 tokens * 8 KV heads * 128 * 2 B
    assert geo.cache_bytes(2, 4096, 2) == 2 * 80 * 2 * 4096 * 8 * 128 * 2
    assert KvGeometry(12, 12, 64, causal=False).cache_bytes(1, 512, 2) == 0  # an encoder keeps none


def test_70b_on_groq_needs_599_chips():
    groq = load_profile("groq-lpu")
    r = capacity_report(
        groq,
        model="70b",
        dtype="bfloat16",
        batch=1,
        seq=1,
        parameter_count=P70,
        parameter_bytes=2 * P70,
        activation_bytes=0,
        kv_cache_bytes=0,
    )
    # the profile's SRAM is 220 MiB = 230,686,720 B: 137,953,296,384 / 230,686,720 = 598.01 -> 599
    assert r.onchip_capacity_bytes == 220 * 2**20
    assert r.chips_needed == 599 and not r.fits_on_chip
    assert r.to_dict()["spills_to"] == "other chips (no off-chip memory)"
    # with the product brief's 230 MB: 137,953,296,384 / 230e6 = 599.8 -> 600
    sram, c2c = groq.memory
    brief = groq.model_copy(update={"memory": (sram.model_copy(update={"capacity_bytes": 230e6}), c2c)})
    assert (
        capacity_report(
            brief,
            model="70b",
            dtype="bfloat16",
            batch=1,
            seq=1,
            parameter_count=P70,
            parameter_bytes=2 * P70,
            activation_bytes=0,
            kv_cache_bytes=0,
        ).chips_needed
        == 600
    )


def test_spill_order_weights_then_kv_then_activations():
    spyre = load_profile("ibm-spyre")  # 64 MB of LX per chip, 2 MB per core
    r = capacity_report(
        spyre,
        model="m",
        dtype="bfloat16",
        batch=1,
        seq=1,
        parameter_count=30_000_000,
        parameter_bytes=60_000_000,
        activation_bytes=3_000_000,
        kv_cache_bytes=2_000_000,
    )
    # 60 MB of weights fit; 4 MB are left: the 2 MB KV cache fits, 2 of the 3 MB of activations fit
    assert r.spill_bytes == {"weights": 0, "kv_cache": 0, "activations": 1_000_000}
    assert r.chips_needed == 1 and r.cores_needed == 30  # 60 MB / 2 MB
    assert not r.fits_on_chip and r.to_dict()["spills_to"] == "LPDDR5"


def _small_config(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return f"hf:{path}"


@pytest.mark.parametrize(
    "config",
    [
        {
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "num_hidden_layers": 2,
            "vocab_size": 100,
            "max_position_embeddings": 32,
        },
        {
            "model_type": "gpt2",
            "architectures": ["GPT2LMHeadModel"],
            "n_embd": 32,
            "n_head": 2,
            "n_layer": 2,
            "vocab_size": 50,
            "n_positions": 16,
        },
    ],
    ids=["llama-gqa", "gpt2-tied"],
)
def test_closed_form_equals_captured_unique_count(tmp_path, config):
    spec = _small_config(tmp_path, config)
    captured = capture_costed(spec, dtype="fp32", seq=8).unique_parameter_count()
    assert parameter_count_from_config(config) == captured


def test_builtin_kv_from_the_graph():
    costed = capture_costed("llama3-8b-layer", dtype="bf16", seq=64)
    # one layer, 8 KV heads (not 32 query heads) of 128: 2 * 1 * 64 * 8 * 128 * 2 B = 262,144
    assert graph_kv_cache_bytes(costed.graph) == 262_144
    geo = graph_kv_geometry(costed.graph)
    assert (geo.layers, geo.kv_heads, geo.head_dim) == (1, 8, 128)


def test_encoder_has_no_kv_cache():
    assert graph_kv_cache_bytes(capture_costed("bert-layer", dtype="bf16", seq=16).graph) == 0


def test_model_capacity_builtin(gpt2_small):
    r = model_capacity("gpt2-block", "ibm-spyre", dtype="bf16", seq=64)
    d = r.to_dict()
    for key in (
        "parameter_count",
        "parameter_bytes",
        "activation_bytes",
        "kv_cache_bytes",
        "onchip_capacity_bytes",
        "fits_on_chip",
        "chips_needed",
    ):
        assert key in d
    assert d["parameter_count"] == 7_087_872  # GPT-2 block: 12 * 768^2 + 13 * 768 weights and biases
    assert d["kv_cache_bytes"] == 2 * 64 * 12 * 64 * 2  # K and V: 64 tokens x 12 heads x 64 x 2 B
    assert d["fits_on_chip"] is True and d["chips_needed"] == 1
