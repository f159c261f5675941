"""The ``hf:`` path through ``transformers`` (the ``hf`` extra); skipped when it is not installed."""

import json

import pytest

from dfx.capture import capture
from dfx.models import build_hf

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'dfx[hf]')")

# The published parameter counts; the hand derivations are in test_models_hf.py.
WHOLE = {
    "gpt2": ("GPT2LMHeadModel", 124_439_808),
    "bert-base-uncased": ("BertModel", 109_482_240),
    "llama-2-7b": ("LlamaForCausalLM", 6_738_415_616),
    "llama-3-8b": ("LlamaForCausalLM", 8_030_261_248),
}


@pytest.mark.parametrize("name", list(WHOLE))
def test_transformers_builds_the_shipped_config_on_meta(name):
    spec = build_hf(name, batch=1, seq=16, implementation="transformers")
    cls, params = WHOLE[name]
    assert type(spec.model).__name__ == cls
    assert sum(p.numel() for p in spec.model.parameters()) == params  # the same as dfx's own
    assert all(p.device.type == "meta" for p in spec.model.parameters())
    assert not spec.model.training
    assert spec.model.config._attn_implementation == "sdpa"


def test_auto_prefers_transformers_when_installed():
    assert type(build_hf("gpt2", seq=8).model).__module__.startswith("transformers.")


TINY_GPT2 = {
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "n_embd": 64,
    "n_head": 4,
    "n_layer": 2,
    "n_positions": 32,
    "vocab_size": 100,
}


@pytest.mark.parametrize("implementation", ["transformers", "dfx"])
def test_tiny_gpt2_flops_by_hand_in_both_implementations(tmp_path, implementation, flop_counter_total):
    # On CPU with real tensors: transformers' mask code calls .item(), which meta tensors refuse.
    # B = 2, T = 16, C = 64, 4 heads of 16: per layer linears 2*32*(64*192 + 64*64 + 2*64*256) =
    # 3,145,728 and attention 4*2*4*16*16*16 = 131,072; 2 layers = 6,553,600; lm_head
    # 2*32*64*100 = 409,600. Total 6,963,200.
    (tmp_path / "config.json").write_text(json.dumps(TINY_GPT2))
    spec = build_hf(str(tmp_path), batch=2, seq=16, device="cpu", implementation=implementation)
    assert flop_counter_total(spec) == 6_963_200


def test_tiny_transformers_model_captures_on_meta(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_GPT2))
    spec = build_hf(str(tmp_path), batch=1, seq=8, implementation="transformers")
    capture(spec.model, spec.args, spec.kwargs)
