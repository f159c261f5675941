"""Whole models from Hugging Face configs with dfx's own implementations (no transformers needed)."""

import json

import pytest
import torch

from dfx.capture import capture
from dfx.errors import ModelSpecError
from dfx.models import build_hf, resolve, shipped_configs
from dfx.models import hf as hf_module

# Whole-model parameter counts by hand (each is the published count of the checkpoint).
#
# gpt2 (124M): wte 50257 * 768 = 38,597,376; wpe 1024 * 768 = 786,432; 12 blocks * 7,087,872 =
#   85,054,464; ln_f 2 * 768 = 1,536; lm_head tied to wte (0 new). Total 124,439,808.
# bert-base-uncased (BertModel): word 30522 * 768 = 23,440,896; position 512 * 768 = 393,216;
#   segment 2 * 768 = 1,536; embedding LayerNorm 1,536; 12 layers * 7,087,872 = 85,054,464;
#   pooler 768 * 768 + 768 = 590,592. Total 109,482,240.
# llama-2-7b: embed 32000 * 4096 = 131,072,000; 32 layers * 202,383,360 = 6,476,267,520; final
#   norm 4,096; lm_head (untied) 131,072,000. Total 6,738,415,616.
# llama-3-8b: embed 128256 * 4096 = 525,336,576; 32 layers * 218,112,000 = 6,979,584,000; final
#   norm 4,096; lm_head (untied) 525,336,576. Total 8,030,261,248.
# llama-2-70b: layer = q, o 2 * 8192^2 = 134,217,728 + k, v 2 * 8192 * 1024 = 16,777,216 +
#   MLP 3 * 8192 * 28672 = 704,643,072 + norms 16,384 = 855,654,400; 80 layers = 68,452,352,000;
#   embed and lm_head 2 * 32000 * 8192 = 524,288,000; final norm 8,192. Total 68,976,648,192.
WHOLE_PARAMS = {
    "gpt2": 124_439_808,
    "bert-base-uncased": 109_482_240,
    "llama-2-7b": 6_738_415_616,
    "llama-3-8b": 8_030_261_248,
    "llama-2-70b": 68_976_648_192,
}


def test_shipped_configs():
    assert shipped_configs() == [
        "bert-base-uncased",
        "deepseek-v3",
        "gemma-2-9b",
        "gemma-3-12b",
        "gpt-oss-120b",
        "gpt-oss-20b",
        "gpt2",
        "llama-2-70b",
        "llama-2-7b",
        "llama-3-8b",
        "llama-3.1-70b",
        "mistral-7b",
        "mixtral-8x7b",
        "phi-3-mini",
        "qwen2-7b",
        "qwen3-30b-a3b",
        "qwen3-8b",
    ]


@pytest.mark.parametrize("name", list(WHOLE_PARAMS))
def test_whole_model_parameter_count_by_hand(name):
    spec = build_hf(name, batch=1, seq=16, implementation="dfx")
    assert sum(p.numel() for p in spec.model.parameters()) == WHOLE_PARAMS[name]
    assert all(p.device.type == "meta" for p in spec.model.parameters())
    assert not spec.model.training


def test_input_ids_default_to_the_config_context():
    # n_positions / max_position_embeddings of each config
    for name, seq in [("gpt2", 1024), ("bert-base", 512), ("llama-2-7b", 4096), ("llama-3-8b", 8192)]:
        (ids,) = build_hf(name, batch=2, implementation="dfx").args
        assert ids.shape == (2, seq) and ids.dtype == torch.int64 and ids.device.type == "meta"


def test_gpt2_ties_lm_head_to_the_token_embedding():
    model = build_hf("gpt2", seq=8, implementation="dfx").model
    assert model.lm_head.weight is model.wte.weight
    # counted twice when duplicates are kept: + 50257 * 768 = 38,597,376
    with_dupes = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert with_dupes == 124_439_808 + 38_597_376


def test_gpt2_tied_weight_is_one_parameter_in_the_captured_graph():
    spec = build_hf("gpt2", batch=1, seq=16, implementation="dfx")
    g = capture(spec.model, spec.args, spec.kwargs)
    assert sum(p.spec.numel for p in g.parameters if p.kind == "parameter") == 124_439_808


def test_whole_gpt2_flops_by_hand(flop_counter_total):
    # B = 2, T = 64: 12 blocks * (2*128*7,077,888 + 4*2*12*64*64*64) + lm_head 2*128*768*50257
    # = 12 * (1,811,939,328 + 25,165,824) + 9,880,928,256 = 22,045,261,824 + 9,880,928,256
    # = 31,926,190,080; the embedding lookups are gathers, 0 FLOPs.
    spec = build_hf("gpt2", batch=2, seq=64, implementation="dfx")
    assert flop_counter_total(spec) == 31_926_190_080


def test_whole_llama2_7b_flops_by_hand(flop_counter_total):
    # B = 1, T = 128: 32 layers * (2*128*202,375,168 + 4*32*128*128*128) + lm_head 2*128*4096*32000
    # = 32 * (51,808,043,008 + 268,435,456) + 33,554,432,000 = 1,700,001,742,848.
    spec = build_hf("llama-2-7b", batch=1, seq=128, implementation="dfx")
    assert flop_counter_total(spec) == 1_700_001_742_848


@pytest.fixture(scope="module")
def llama2_7b_graph():
    """A whole Llama-2-7B at its default seq (4096), captured once on meta.

    How long that takes is bench/bench_capture.py's business, not a test's (a timed test fails on a busy machine).
    """
    spec = build_hf("llama-2-7b", batch=1, seq=None, dtype="float32", implementation="dfx")
    g = capture(spec.model, spec.args, spec.kwargs)
    return g


@pytest.mark.slow
def test_whole_llama2_7b_captures_on_meta(llama2_7b_graph):
    g = llama2_7b_graph
    attention = [n for n in g.nodes if "scaled_dot_product_attention" in n.target]
    assert len(attention) == 32  # one per layer
    assert sum(p.spec.numel for p in g.parameters if p.kind == "parameter") == 6_738_415_616


@pytest.mark.slow
def test_whole_llama2_7b_matmul_flops_in_dfx(llama2_7b_graph, dfx_matmul_flops):
    # B = 1, T = 4096: 32 layers * 1,932,735,283,200 (test_models_flops: the llama-layer default)
    # + lm_head 2*4096*4096*32000 = 1,073,741,824,000 -> 61,847,529,062,400 + 1,073,741,824,000
    # = 62,921,270,886,400.
    g = llama2_7b_graph
    assert dfx_matmul_flops(g) == 62_921_270_886_400


def test_whole_bert_captures():
    spec = build_hf("bert-base", batch=2, seq=32, implementation="dfx")
    g = capture(spec.model, spec.args, spec.kwargs)
    assert sum(p.spec.numel for p in g.parameters if p.kind == "parameter") == 109_482_240


# --- configs given as paths ----------------------------------------------------------------------

TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 100,
    "max_position_embeddings": 32,
    "tie_word_embeddings": True,
}
# Hand count: embed 100 * 64 = 6,400 (lm_head tied); per layer q, o 2 * 64 * 64 = 8,192 +
# k, v 2 * 64 * 32 = 4,096 + MLP 3 * 64 * 160 = 30,720 + norms 128 = 43,136; 2 layers = 86,272;
# final norm 64. Total 92,736.
TINY_LLAMA_PARAMS = 92_736


def test_config_json_path_and_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    for given in [tmp_path / "config.json", tmp_path]:
        spec = build_hf(str(given), batch=1, seq=8, implementation="dfx")
        assert sum(p.numel() for p in spec.model.parameters()) == TINY_LLAMA_PARAMS
        assert spec.model.lm_head.weight is spec.model.embed_tokens.weight
    spec = resolve(f"hf:{tmp_path / 'config.json'}", batch=1, seq=8)
    assert spec.name.startswith("hf:")


def test_rope_models_take_a_seq_longer_than_the_config_context(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    spec = build_hf(str(tmp_path), batch=1, seq=64, implementation="dfx")  # context is 32
    capture(spec.model, spec.args, spec.kwargs)


def test_auto_falls_back_to_dfx_without_transformers(monkeypatch):
    monkeypatch.setattr(hf_module, "_have_transformers", lambda: False)
    spec = build_hf("gpt2", seq=8)
    assert type(spec.model).__module__ == "dfx.models.gpt2"
    with pytest.raises(ModelSpecError, match="pip install 'dfx\\[hf\\]'"):
        build_hf("gpt2", seq=8, implementation="transformers")


# --- errors -------------------------------------------------------------------------------------


def test_unknown_config_suggests_shipped_names():
    with pytest.raises(ModelSpecError) as info:
        resolve("hf:llama-2-7")
    message = str(info.value)
    assert "did you mean llama-2-7b" in message and "shipped:" in message and "\n" not in message


def test_seq_beyond_learned_positions():
    with pytest.raises(ModelSpecError, match="exceeds the 1024 learned positions"):
        resolve("hf:gpt2", seq=2048)


def test_model_type_dfx_cannot_build(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**TINY_LLAMA, "model_type": "falcon"}))  # dfx builds mistral now
    with pytest.raises(ModelSpecError, match="needs transformers"):
        build_hf(str(tmp_path), implementation="dfx")


@pytest.mark.parametrize("text, match", [("{not json", "cannot read"), ('{"hidden_size": 8}', 'no "model_type"')])
def test_bad_config_file(tmp_path, text, match):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ModelSpecError, match=match):
        build_hf(str(path), implementation="dfx")


def test_config_missing_a_field(tmp_path):
    fields = {k: v for k, v in TINY_LLAMA.items() if k != "intermediate_size"}
    (tmp_path / "config.json").write_text(json.dumps(fields))
    with pytest.raises(ModelSpecError, match="no 'intermediate_size' field"):
        build_hf(str(tmp_path), implementation="dfx")


def test_unknown_implementation():
    with pytest.raises(ModelSpecError, match="unknown implementation"):
        build_hf("gpt2", implementation="jax")
