"""A tiny Llama config (fast to capture) shared by the phase tests."""

import json

import pytest

# 4 layers, GQA 4 query / 2 KV heads of 16, SwiGLU 128, vocab 100: every code path of a Llama, small.
TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "vocab_size": 100,
    "tie_word_embeddings": False,
}


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tiny") / "config.json"
    path.write_text(json.dumps(TINY_LLAMA))
    return f"hf:{path}"
