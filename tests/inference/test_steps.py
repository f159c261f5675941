"""Decode and prefill steps: the cache as an input, its bytes, and whole models from two captured layers."""

import json

import pytest

import dfx
from dfx.capture import capture
from dfx.costs import annotate
from dfx.errors import DfxError
from dfx.hardware import load_profile
from dfx.inference.repeat import repeat_layer
from dfx.inference.steps import cache_inputs, capture_step
from dfx.models import shipped_configs
from dfx.models.decode import build_step
from dfx.models.hf import CONFIG_DIR
from dfx.roofline import evaluate


def test_llama2_7b_decode_step_reads_weights_and_cache_and_is_memory_bound():
    # Llama-2-7B, bf16 (2 bytes), batch 1, KV length 1024, on the A100 (HBM 2.039 TB/s, 312 TFLOP/s bf16).
    a = dfx.analyze("hf:llama-2-7b", hardware=["nvidia-a100-sxm-80gb"], dtype="bf16", phase="decode", kv_len=1024)
    # Weights read once per step: all 6,738,415,616 parameters but the embedding table, of which
    # the step gathers one row: 6,738,415,616 - 32,000 * 4,096 = 6,607,343,616 -> x 2 bytes.
    weight_bytes = (6_738_415_616 - 32_000 * 4_096) * 2  # 13,214,687,232
    # The cache: K and V (2) x 32 layers x 32 heads x 128 x 1024 tokens x 2 bytes.
    cache_bytes = 2 * 32 * 32 * 128 * 1024 * 2  # 536,870,912
    assert a.inference.kv_cache_bytes == cache_bytes
    graph = a.costed.graph
    assert sum(n.outputs[0].nbytes for n in cache_inputs(graph)) == cache_bytes
    # Nodes that read the cache (through a transpose view or directly) read it whole, once.
    views = {n.name: n for n in a.costed.nodes if n.category.value == "view"}

    def from_cache(src):
        while src in views:
            src = views[src].node.inputs[0].src
        return src in {n.name for n in cache_inputs(graph)}

    readers = [
        n
        for n in a.costed.nodes
        if n.node.op != "placeholder" and n.name not in views and any(from_cache(e.src) for e in n.node.inputs)
    ]
    assert len(readers) == 2 * 32  # q.K^T and p.V in every layer
    read_by_readers = sum(n.cost.bytes_read for n in readers)
    assert cache_bytes <= read_by_readers <= cache_bytes * 1.01  # plus the 1-row q and p
    total_read = a.costed.total.bytes_read
    assert weight_bytes + cache_bytes <= total_read <= (weight_bytes + cache_bytes) * 1.01  # + activations
    # Memory-bound: 2 FLOPs per weight element (batch 1) is far below the A100's ridge of
    # 312e12 / 2.039e12 = 153 FLOP/byte; every matmul is memory-bound and the step takes at least
    # its bytes over HBM bandwidth: 13.75 GB / 2.039 TB/s = 6.74 ms.
    (result,) = a.hardware
    matmuls = [t for t, n in zip(result.nodes, a.costed.nodes) if n.category.value == "matmul"]
    assert matmuls and all(t.bound.value == "memory" for t in matmuls)
    assert result.latency_s >= (weight_bytes + cache_bytes) / 2.039e12


def _config_fields(name):
    c = json.loads((CONFIG_DIR / f"{name}.json").read_text())
    if c["model_type"] == "gpt2":
        return c["n_layer"], c["n_head"], c["n_embd"] // c["n_head"]
    heads = c["num_attention_heads"]
    return c["num_hidden_layers"], c.get("num_key_value_heads") or heads, c.get("head_dim") or c["hidden_size"] // heads


@pytest.mark.parametrize("name", shipped_configs())
def test_kv_cache_bytes_of_every_shipped_config(name):
    model_type = json.loads((CONFIG_DIR / f"{name}.json").read_text())["model_type"]
    if model_type == "bert":  # an encoder: no decode step, a clear refusal
        with pytest.raises(DfxError, match="causal decoder"):
            dfx.analyze(f"hf:{name}", hardware=[], dtype="bf16", phase="decode", kv_len=8)
        return
    layers, kv_heads, head_dim = _config_fields(name)
    tokens, batch = 8, 2  # 8 tokens: shorter than every sliding window, so every layer keeps all of them
    a = dfx.analyze(f"hf:{name}", hardware=[], dtype="bf16", phase="decode", kv_len=tokens, batch=batch)
    expected = 2 * layers * kv_heads * head_dim * tokens * batch * 2  # bf16: 2 bytes per element
    c = json.loads((CONFIG_DIR / f"{name}.json").read_text())
    if c.get("kv_lora_rank"):  # MLA (DeepSeek-V2 paper, section 2.1.2): one latent of r + dr per token and layer
        expected = layers * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * tokens * batch * 2
    assert a.to_dict()["inference"]["kv_cache_bytes"] == expected
    assert sum(n.outputs[0].nbytes for n in cache_inputs(a.costed.graph)) == expected
    # an fp8 cache is half of it
    a8 = dfx.analyze(
        f"hf:{name}", hardware=[], dtype="bf16", kv_dtype="fp8", phase="decode", kv_len=tokens, batch=batch
    )
    assert a8.inference.kv_cache_bytes == expected // 2


def test_repeated_layers_equal_the_whole_capture(tiny_llama):
    # The tiny Llama has 4 layers: capture all 4, and capture 2 and repeat the second twice.
    whole = build_step(tiny_llama, batch=2, tokens=1, kv_len=6, dtype="float32")
    assert whole.built_layers == 4
    full = annotate(capture(whole.spec.model, whole.spec.args, whole.spec.kwargs))
    step = capture_step(tiny_llama, batch=2, tokens=1, kv_len=6, dtype="float32")
    assert step.graph.meta and dict(step.graph.meta)["repeated_layer"] == "layers.1 repeated as layers.2 .. layers.3"
    assert len(step.graph.nodes) == len(full.graph.nodes)
    assert step.costed.total == full.total
    assert step.costed.unique_parameter_count() == full.unique_parameter_count()
    assert sorted(p.name for p in step.graph.parameters) == sorted(p.name for p in full.graph.parameters)
    assert len(cache_inputs(step.graph)) == 2 * 4

    # parameter placeholders carry the layer index as torch.export names them (p_layers_3_...)
    def param_nodes(g):
        return sorted(n.name for n in g.nodes if n.input_kind == "parameter")

    assert param_nodes(step.graph) == param_nodes(full.graph)
    a100 = load_profile("nvidia-a100-sxm-80gb")
    assert evaluate(step.costed, a100).latency_s == pytest.approx(evaluate(full, a100).latency_s, rel=1e-12)
    out = step.graph.nodes[-1]
    assert len(out.inputs) == 1 + 2 * 4  # logits, then K and V of every layer


def test_repeat_layer_refuses_too_few():
    step = capture_step("gpt2-block", batch=1, tokens=1, kv_len=4, dtype="float32")
    with pytest.raises(ValueError, match=">= 2"):
        repeat_layer(step.graph, "h", 1)


def test_builtin_decode_step_inputs_and_flops():
    # llama3-8b-layer: GQA 32 query / 8 KV heads of 128. Cache inputs (B, 8, S, 128).
    step = capture_step("llama3-8b-layer", batch=2, tokens=1, kv_len=100, dtype="bfloat16")
    assert [tuple(n.outputs[0].shape) for n in cache_inputs(step.graph)] == [(2, 8, 100, 128)] * 2
    # Attention matmul FLOPs: 4 * B * nh * T * (S + T) * hs = 4 * 2 * 32 * 1 * 101 * 128 = 3,309,568.
    # Projections at T = 1: 2 * B * (4096*4096*2 + 4096*1024*2 + 3 * 4096*14336) = 2 * 2 * 218,103,808.
    projections = 2 * 2 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
    assert step.costed.flops_by_category()["matmul"] == projections + 4 * 2 * 32 * 1 * 101 * 128


def test_not_a_decoder_is_refused():
    with pytest.raises(DfxError, match="causal decoder"):
        dfx.analyze("bert-layer", hardware=[], phase="decode")
    with pytest.raises(DfxError, match="causal decoder"):
        dfx.analyze("vit-block", hardware=[], phase="prefill")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"phase": "decoding"}, "unknown phase 'decoding'"),
        ({"phase": "decode", "seq": 5}, "--seq does not apply"),
        ({"phase": "prefill", "kv_len": 5}, "--kv-len applies to --phase decode"),
        ({"phase": "decode", "output_len": 5}, "--output-len applies to --phase generate"),
        ({"prompt_len": 5}, "prompt_len applies to an inference phase"),
        ({"prompt_len": 5, "kv_len": 3}, "prompt_len, kv_len apply to an inference phase"),
        ({"phase": "decode", "kv_len": 0}, "--kv-len must be a positive integer"),
        ({"phase": "decode", "kv_dtype": "fp7"}, "unknown --kv-dtype 'fp7'"),
    ],
)
def test_bad_phase_arguments(kwargs, message):
    with pytest.raises(DfxError, match=message):
        dfx.analyze("gpt2-block", hardware=[], **kwargs)


@pytest.mark.parametrize("spec", ["hf:gpt2", "hf:mistral-7b"])
def test_a_prefill_computes_logits_at_its_last_position_only(spec):
    # The LM head's GEMM: 2 FLOPs per MAC x rows x hidden x vocab. A prefill samples one token, so its
    # head reads the last position only (transformers' generate: logits_to_keep=1); a step over a
    # cache of 3 new tokens (a speculative verify step) keeps all 3.
    # hf:gpt2: hidden 768, vocab 50,257 (tied to wte); hf:mistral-7b: hidden 4,096, vocab 32,000.
    hidden, vocab = {"hf:gpt2": (768, 50_257), "hf:mistral-7b": (4_096, 32_000)}[spec]

    def head_flops(step):
        heads = [c for c in step.costed.nodes if "lm_head" in c.node.module_path]
        assert len(heads) == 1
        return heads[0].cost.flops

    prefill = capture_step(spec, batch=2, tokens=16, kv_len=0, dtype="bfloat16")
    assert head_flops(prefill) == 2 * (2 * 1) * hidden * vocab  # 2 sequences x their last position
    verify = capture_step(spec, batch=2, tokens=3, kv_len=8, dtype="bfloat16")
    assert head_flops(verify) == 2 * (2 * 3) * hidden * vocab
    # the logits output is (batch, 1, vocab) after the prefill
    assert build_step(spec, batch=2, tokens=16).spec.model.logits_to_keep == 1
