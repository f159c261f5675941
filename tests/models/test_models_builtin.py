"""The built-in models: names, shapes, dtypes, parameter counts by hand, capture, errors."""

import dataclasses

import pytest
import torch

import dfx.models
from dfx.capture import capture
from dfx.errors import ModelSpecError
from dfx.models import ModelSpec, available, build

BUILTINS = ["gpt2-block", "llama-layer", "llama3-8b-layer", "bert-layer", "vit-block", "resnet-block", "mlp"]


def test_available_lists_every_builtin_with_the_default_first():
    assert available() == BUILTINS


# Input shape of each built-in at (batch, seq); seq is tokens, the image side, or images per sample.
SHAPES = {
    "gpt2-block": lambda b, t: (b, t, 768),
    "llama-layer": lambda b, t: (b, t, 4096),
    "llama3-8b-layer": lambda b, t: (b, t, 4096),
    "bert-layer": lambda b, t: (b, t, 768),
    "vit-block": lambda b, t: (b, t, 768),
    "resnet-block": lambda b, s: (b, 256, s, s),
    "mlp": lambda b, t: (b, t, 28, 28),
}
DEFAULT_SEQ = {
    "gpt2-block": 1024,  # GPT-2 n_positions
    "llama-layer": 4096,  # Llama 2 context
    "llama3-8b-layer": 8192,  # Llama 3 context
    "bert-layer": 512,  # BERT max_position_embeddings
    "vit-block": 197,  # (224 / 16)^2 patches + [CLS]
    "resnet-block": 56,  # conv2_x feature map side
    "mlp": 1,  # PB-05 input (1, 1, 28, 28)
}


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("batch, seq", [(1, None), (2, None), (3, 40)])
def test_builds_on_meta_at_any_batch_and_seq(name, batch, seq):
    spec = build(name, batch=batch, seq=seq)
    (x,) = spec.args
    assert x.shape == SHAPES[name](batch, seq or DEFAULT_SEQ[name])
    assert x.device.type == "meta" and x.dtype == torch.float32
    assert spec.kwargs == {} and spec.name == name and spec.description
    assert not spec.model.training
    assert all(p.device.type == "meta" for p in spec.model.parameters())


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("batch, seq", [(1, None), (2, 48)])
def test_captures_on_meta(name, batch, seq):
    spec = build(name, batch=batch, seq=seq)
    g = capture(spec.model, spec.args, spec.kwargs)
    assert len(g.nodes) > 3
    (out,) = [n for n in g.nodes if n.op == "output"]
    assert out is g.nodes[-1]


HALF = [(name, "bfloat16", torch.bfloat16) for name in BUILTINS] + [
    (name, "fp16", torch.float16) for name in ("gpt2-block", "resnet-block", "mlp")
]


@pytest.mark.parametrize("name, dtype, torch_dtype", HALF)
def test_builds_and_captures_in_half_precision(name, dtype, torch_dtype):
    spec = build(name, batch=1, seq=16, dtype=dtype)
    assert spec.args[0].dtype == torch_dtype
    assert {p.dtype for p in spec.model.parameters()} == {torch_dtype}
    capture(spec.model, spec.args, spec.kwargs)


def test_builds_on_cpu_with_real_tensors_that_run():
    spec = build("mlp", batch=2, device="cpu")
    assert spec.model(*spec.args).shape == (2, 1, 10)
    spec = build("gpt2-block", batch=1, seq=8, device="cpu")
    assert spec.model(*spec.args).shape == (1, 8, 768)


def test_model_spec_is_frozen():
    spec = build("mlp")
    assert isinstance(spec, ModelSpec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"


# --- parameter counts, by hand ------------------------------------------------------------------

# GPT-2 block (d = 768, biases):
#   ln_1 weight + bias          2 * 768              =     1,536
#   c_attn  768 -> 2304         768 * 2304 + 2304    = 1,771,776
#   attn c_proj 768 -> 768      768 * 768 + 768      =   590,592
#   ln_2                        2 * 768              =     1,536
#   c_fc    768 -> 3072         768 * 3072 + 3072    = 2,362,368
#   mlp c_proj 3072 -> 768      3072 * 768 + 768     = 2,360,064
#                                              total = 7,087,872
GPT2_BLOCK_PARAMS = 7_087_872

# Llama-2-7B layer (d = 4096, no biases):
#   q, k, v, o  4 * 4096 * 4096            =  67,108,864
#   gate, up, down  3 * 4096 * 11008       = 135,266,304
#   two RMSNorm weights  2 * 4096          =       8,192
#                                    total = 202,383,360
LLAMA2_LAYER_PARAMS = 202_383_360

# Llama-3-8B layer (d = 4096, 8 KV heads of 128 -> k, v project to 1024):
#   q, o  2 * 4096 * 4096                  =  33,554,432
#   k, v  2 * 4096 * 1024                  =   8,388,608
#   gate, up, down  3 * 4096 * 14336       = 176,160,768
#   two RMSNorm weights  2 * 4096          =       8,192
#                                    total = 218,112,000
LLAMA3_LAYER_PARAMS = 218_112_000

# BERT-base layer: q, k, v, dense 4 * (768 * 768 + 768) = 2,362,368; two LayerNorms 2 * 1,536 =
# 3,072; intermediate 768 * 3072 + 3072 = 2,362,368; output 3072 * 768 + 768 = 2,360,064;
# total 7,087,872 (the same tensors as the GPT-2 block, split differently).
BERT_LAYER_PARAMS = 7_087_872

# ResNet-50 bottleneck (256 -> 64 -> 64 -> 256, convs without bias):
#   conv1 1x1  256 * 64 = 16,384    bn1  2 * 64  = 128
#   conv2 3x3  64 * 64 * 9 = 36,864 bn2  2 * 64  = 128
#   conv3 1x1  64 * 256 = 16,384    bn3  2 * 256 = 512
#   total 70,400 (running mean/var are buffers, not parameters)
RESNET_BLOCK_PARAMS = 70_400

# MLP: 784 * 512 + 512 = 401,920; 512 * 512 + 512 = 262,656; 512 * 10 + 10 = 5,130; total 669,706.
MLP_PARAMS = 669_706

PARAMS = {
    "gpt2-block": GPT2_BLOCK_PARAMS,
    "llama-layer": LLAMA2_LAYER_PARAMS,
    "llama3-8b-layer": LLAMA3_LAYER_PARAMS,
    "bert-layer": BERT_LAYER_PARAMS,
    "vit-block": GPT2_BLOCK_PARAMS,  # the same shapes: QKV, proj, 4x MLP, two LayerNorms, biases
    "resnet-block": RESNET_BLOCK_PARAMS,
    "mlp": MLP_PARAMS,
}


@pytest.mark.parametrize("name", BUILTINS)
def test_parameter_count_by_hand(name):
    spec = build(name)
    assert sum(p.numel() for p in spec.model.parameters()) == PARAMS[name]


@pytest.mark.parametrize("name", ["gpt2-block", "llama3-8b-layer", "resnet-block"])
def test_captured_graph_holds_every_parameter_once(name):
    spec = build(name, batch=1, seq=8)
    g = capture(spec.model, spec.args, spec.kwargs)
    captured = sum(p.spec.numel for p in g.parameters if p.kind == "parameter")
    assert captured == PARAMS[name]


def test_llama3_layer_is_grouped_query_attention():
    attn = build("llama3-8b-layer").model.layer.self_attn
    assert (attn.n_heads, attn.n_kv_heads, attn.head_dim) == (32, 8, 128)
    assert attn.k_proj.weight.shape == (8 * 128, 4096)  # (nkv * hs, C)


# --- errors ------------------------------------------------------------------------------------


def test_unknown_name_suggests_close_matches_on_one_line():
    with pytest.raises(ModelSpecError) as info:
        build("gpt2-blok")
    message = str(info.value)
    assert "gpt2-blok" in message and "did you mean gpt2-block" in message
    assert "\n" not in message


def test_unknown_name_lists_the_builtins_when_nothing_is_close():
    with pytest.raises(ModelSpecError, match="built-ins: gpt2-block, llama-layer"):
        build("zzz")


@pytest.mark.parametrize("kwargs", [{"batch": 0}, {"batch": -1}, {"seq": 0}, {"seq": -5}, {"batch": 1.5}])
def test_non_positive_batch_or_seq_is_an_error(kwargs):
    with pytest.raises(ModelSpecError, match="must be a positive integer"):
        build("gpt2-block", **kwargs)


@pytest.mark.parametrize("dtype", ["int8", "float8", torch.int64])
def test_non_float_dtype_is_an_error(dtype):
    with pytest.raises(ModelSpecError, match="dtype"):
        build("mlp", dtype=dtype)


def test_public_surface():
    assert set(dfx.models.__all__) >= {"ModelSpec", "available", "build", "resolve", "PRESETS"}


def test_describe_is_one_line_with_the_default_input():
    assert dfx.models.describe("resnet-block").endswith("input (B, 256, 56, 56), seq = image side")
    assert all("\n" not in dfx.models.describe(name) for name in BUILTINS)
    with pytest.raises(ModelSpecError, match="did you mean mlp"):
        dfx.models.describe("mpl")
