"""Commitment versus dynamism: a Mixtral-8x7B MoE layer on a compile-time machine and on a GPU.

The layer is transformers' own Mixtral (one layer) with Mixtral-8x7B's widths (hidden 4096, expert
FFN 14336, 8 experts, top-2; config.json of mistralai/Mixtral-8x7B-v0.1), over 512 tokens, on the
meta device. Expected values are by hand from GShard's capacity (arXiv 2006.16668, section 2.2).
"""

from __future__ import annotations

import pytest

from dfx.compile.moe import expert_capacity, lower_layer
from dfx.costs.moe import MoeLayer, Routing

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.costs._moe import mixtral  # noqa: E402

HIDDEN, FFN, EXPERTS, TOP_K, TOKENS = 4096, 14336, 8, 2, 512


@pytest.fixture(scope="module")
def analysis():
    import dfx

    model, ids = mixtral(
        tokens=TOKENS, layers=1, hidden=HIDDEN, ffn=FFN, experts=EXPERTS, top_k=TOP_K, heads=32, kv_heads=8, vocab=1000
    )
    return dfx.analyze(model, (ids,), hardware=["groq-lpu", "nvidia-h100-sxm"], capacity_factor=1.5)


def test_groq_pads_every_expert_to_its_capacity(analysis):
    moe = analysis.to_dict()["hardware"]["groq-lpu"]["moe"]
    (layer,) = moe["layers"]
    # C = ceil(1.5 * 512 * 2 / 8) = ceil(192.0) = 192 slots per expert
    assert layer["capacity"] == 192
    # 8 experts x 192 = 1,536 slots for 512 x 2 = 1,024 routed slots: 512 padding slots
    assert (layer["computed_slots"], layer["routed_slots"], layer["padding_slots"]) == (1536, 1024, 512)
    assert moe["padding_fraction"] == pytest.approx(1 / 3)  # 512 / 1,536 of the expert FLOPs wasted
    assert layer["dropped_slots"] == 0  # uniform routing: 128 per expert < 192
    assert moe["strategy"] == "capacity"
    assert moe["padding_s"] == pytest.approx(moe["expert_s"] / 3)


def test_groq_expert_flops_are_the_padded_slots(analysis):
    doc = analysis.to_dict()
    names = [n["name"] for n in doc["nodes"] if n["name"].startswith("_grouped_mm")]
    assert len(names) == 2
    routed = sum(n["flops"] for n in doc["nodes"] if n["name"] in names)
    assert routed == 2 * 1024 * 3 * HIDDEN * FFN  # the document's graph: routed slots only
    groq = doc["hardware"]["groq-lpu"]["nodes"]
    padded = sum(groq[n]["flops"] for n in names)
    assert padded == 2 * 1536 * 3 * HIDDEN * FFN  # what Groq runs: 1,536 slots x 3 GEMMs of D x F


def test_h100_runs_a_grouped_gemm_without_padding(analysis):
    moe = analysis.to_dict()["hardware"]["nvidia-h100-sxm"]["moe"]
    (layer,) = moe["layers"]
    assert moe["strategy"] == "grouped-gemm"
    assert layer["capacity"] is None
    assert (layer["computed_slots"], layer["padding_slots"], layer["dropped_slots"]) == (1024, 0, 0)
    assert moe["padding_fraction"] == 0.0
    # 2 grouped GEMMs (gate_up, down) + histc + cumsum computing their offsets, 1.5 us each (H100 op_overhead_s)
    assert layer["overhead_kernels"] == 4
    assert moe["overhead_s"] == pytest.approx(4 * 1.5e-6)


def test_capacity_drops_tokens_under_skewed_routing():
    # zipf:1 over 4 experts, 100 slots: 48, 24, 16, 12; capacity ceil(1.0 * 100 / 4) = 25
    layer = MoeLayer("topk", ("up",), "mlp.experts", 4, 1, 100, 0, 0)
    counts = Routing("zipf", 1.0).expert_counts(4, 100)
    x = lower_layer(layer, counts, True, 1.0)
    assert x.capacity == expert_capacity(1.0, 100, 1, 4) == 25
    assert x.dropped_slots == 48 - 25  # only the busiest expert overflows
    assert x.padding_slots == (25 - 24) + (25 - 16) + (25 - 12)  # 100 computed, 77 kept
    assert x.dropped_fraction == pytest.approx(23 / 100)


TINY = {  # a 2-layer Mixtral config.json, tiny widths
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 100,
    "max_position_embeddings": 256,
    "sliding_window": None,
}


def test_cli_analyze_and_compile_print_padding_and_drops_side_by_side(tmp_path):
    import json

    from typer.testing import CliRunner

    from dfx.cli import app
    from dfx.schema.compile import read_compile

    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY))
    runner = CliRunner()
    args = ["analyze", f"hf:{config}", "--seq", "64", "--hw", "h100", "--hw", "groq-lpu", "--capacity-factor", "1.5"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "Mixture of experts" in out.output and "fixed capacity" in out.output and "grouped GEMM" in out.output
    # seq 64, top-2 of 8, factor 1.5: ceil(1.5 * 128 / 8) = 24 slots per expert, 2 layers x 192 for 2 x 128
    assert "24 slots per expert" in out.output and "384 / 256" in out.output and "33.3%" in out.output
    result = runner.invoke(app, ["compile", f"hf:{config}", "--seq", "64", "--hw", "groq-lpu", "--json"])
    assert result.exit_code == 0, result.output
    record = read_compile(json.loads(result.output))
    assert record.moe is not None and record.moe.layers[0].capacity == 20  # ceil(1.25 * 128 / 8)
    bad = tmp_path / "counts.csv"
    bad.write_text("1,2,x\n")
    refused = runner.invoke(app, ["analyze", f"hf:{config}", "--seq", "64", "--routing", str(bad)])
    from dfx.errors import DfxError

    assert isinstance(refused.exception, DfxError) and str(bad) in str(refused.exception)  # one line, naming it
