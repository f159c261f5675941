"""MoE layers found in a graph, the routing distribution, and the expert weight bytes it implies."""

from __future__ import annotations

import json

import dfx

import pytest

from dfx.costs.moe import Routing, RoutingError, apply_routing, find_moe_layers, parse_routing
from tests.costs._helpers import costed

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.costs._moe import D, E, F, K, L, T, mixtral  # noqa: E402


@pytest.fixture(scope="module")
def mixtral_graph():
    model, ids = mixtral()
    return costed(model, (ids,))


def test_find_moe_layers_in_transformers_mixtral(mixtral_graph):
    layers = find_moe_layers(mixtral_graph.graph)
    assert len(layers) == L
    for layer in layers:
        assert (layer.num_experts, layer.top_k, layer.tokens) == (E, K, T)
        assert len(layer.experts) == 2  # gate_up [D, 2F] and down [F, D], each one grouped GEMM
        assert layer.weight_bytes_per_expert == 3 * D * F * 2  # gate, up, down in bf16
        assert layer.expert_flops == 2 * T * K * 3 * D * F
        assert ".experts" in layer.module_path


def test_uniform_expected_experts_closed_form():
    r = Routing()
    assert r.expected_experts(8, 2, 1) == pytest.approx(2.0)  # batch-1 decode: k experts
    assert r.expected_experts(8, 2, 4) == pytest.approx(8 * (1 - (6 / 8) ** 4))  # 5.46875
    assert r.expected_experts(8, 2, 512) == pytest.approx(8.0)


def test_zipf_shares_and_counts():
    r = parse_routing("zipf:1")
    # shares 1, 1/2, 1/3, 1/4 over H4 = 25/12: 12/25, 6/25, 4/25, 3/25
    assert r.shares(4) == pytest.approx((12 / 25, 6 / 25, 4 / 25, 3 / 25))
    assert r.expert_counts(4, 100) == (48, 24, 16, 12)
    # skewed routing touches fewer distinct experts than uniform at the same batch
    assert r.expected_experts(8, 2, 4) < Routing().expected_experts(8, 2, 4)


def test_counts_file_json_and_csv(tmp_path):
    j = tmp_path / "counts.json"
    j.write_text(json.dumps({"counts": [300, 100, 100, 0]}))
    r = parse_routing(str(j))
    assert r.expert_counts(4, 10) == (6, 2, 2, 0)
    # an expert no token ever reaches is never read: 3 of 4 experts at most
    assert r.expected_experts(4, 1, 10_000) == pytest.approx(3.0)
    c = tmp_path / "counts.csv"
    c.write_text("expert,tokens\n0,5\n1,5\n2,10\n3,0\n")
    assert parse_routing(str(c)).expert_counts(4, 20) == (5, 5, 10, 0)


@pytest.mark.parametrize(
    ("content", "words"),
    [("[1, -2]", "count 1"), ("{}", "expected a list"), ("[0, 0]", "sum to 0"), ("not json", "not valid JSON")],
)
def test_bad_counts_file_is_refused_naming_it(tmp_path, content, words):
    f = tmp_path / "bad.json"
    f.write_text(content)
    with pytest.raises(RoutingError, match=words) as info:
        parse_routing(str(f))
    assert str(f) in str(info.value)


def test_bad_routing_values():
    with pytest.raises(RoutingError, match="zipf"):
        parse_routing("zipf:x")
    with pytest.raises(RoutingError, match="neither"):
        parse_routing("/no/such/file.json")
    with pytest.raises(RoutingError, match="2 experts"):
        Routing("counts", counts=(1.0, 2.0), source="f.json").shares(8)


def test_apply_routing_sets_weight_bytes_to_the_expected_experts(mixtral_graph):
    layer = find_moe_layers(mixtral_graph.graph)[0]
    skewed = apply_routing(mixtral_graph, "zipf:2")
    expected = Routing("zipf", 2.0).expected_experts(E, K, T)
    for name in layer.experts:
        before, after = mixtral_graph[name].cost, skewed[name].cost
        assert after.flops == before.flops  # T*k routed rows whatever the routing
        assert after.bytes_read < before.bytes_read  # uniform at T=128 touches all 8, zipf:2 fewer
    gate_up = mixtral_graph[layer.experts[0]].cost.bytes_read - skewed[layer.experts[0]].cost.bytes_read
    assert gate_up == pytest.approx((E - expected) * D * 2 * F * 2, abs=2)  # [D, 2F] per expert, bf16
    assert skewed.meta["moe"]["routing"] == Routing("zipf", 2.0)
    # applying again with uniform restores the uniform bytes (routing sets, never scales)
    assert apply_routing(skewed, "uniform")[layer.experts[0]].cost == mixtral_graph[layer.experts[0]].cost


def test_weight_precision_reaches_the_experts_and_survives_rerouting():
    # one token (decode-like), top-2 of 8: the grouped GEMMs read 2 experts' weights; int4 weights are
    # 4/16 of their bf16 bytes. gate_up reads [D, 2F] per expert: 2 * 256 * 1024 * 2 B = 1,048,576 B in bf16
    from dfx.costs.precision import Precision, apply_precision

    model, ids = mixtral(tokens=1, layers=1)
    cg = costed(model, (ids,))
    (layer,) = find_moe_layers(cg.graph)
    gate_up = layer.experts[0]
    acts = cg[gate_up].cost.bytes_read - 2 * D * 2 * F * 2  # activations and offsets
    int4 = apply_precision(cg, Precision.of("bf16", "int4"))
    assert int4[gate_up].cost.bytes_read == acts + 2 * D * 2 * F * 2 // 4
    assert int4[gate_up].b_operand_bits == 4
    # routing again (uniform: 2 experts at T=1) keeps the int4 width
    assert apply_routing(int4, "uniform")[gate_up].cost.bytes_read == int4[gate_up].cost.bytes_read


@pytest.mark.parametrize("batch", [1, 256])
def test_a_mixtral_decode_step_reads_the_experts_its_tokens_touch(batch):
    # Mixtral-8x7B (hf_configs/mixtral-8x7b.json): d 4096, 32 layers, 32 query / 8 KV heads of 128,
    # 8 experts of SwiGLU width 14336, top-2, vocab 32000, bf16 (2 bytes per element).
    d, layers, kv, f, experts, vocab = 4096, 32, 8 * 128, 14336, 8, 32000
    attention = 2 * d * d + 2 * d * kv  # q, o: 16,777,216 each; k, v: 4,194,304 each
    router_and_norms = d * experts + 2 * d
    expert = 3 * d * f  # gate, up, down: 176,160,768
    # uniform routing: E * (1 - (1 - k/E)**T) experts per layer; T = 1: exactly k = 2; T = 256: all 8
    touched = 2 if batch == 1 else experts
    # every parameter a node reads counts whole: the embedding table (its lookup), the LM head, the final norm
    dense_rest = 2 * vocab * d + d
    hand_bytes = 2 * (layers * (attention + router_and_norms + touched * expert) + dense_rest)
    doc = dfx.analyze(
        "hf:mixtral-8x7b", hardware=["nvidia-h100-sxm"], phase="decode", kv_len=1024, batch=batch, dtype="bf16"
    ).to_dict()
    # the rotary cos/sin tables (buffers, 16.8 MB) are the rest: within 1% of the hand count
    assert doc["totals"]["parameter_traffic_bytes"] == pytest.approx(hand_bytes, rel=0.01)
