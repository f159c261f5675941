"""A Mixtral-like MoE model served: each target's MoE lowering reaches the step prices.

A compile-time target (Groq's TSP) computes every expert's fixed capacity, ``ceil(factor x tokens x
top-k / experts)`` slots (GShard section 2.2), so its steps grow with the capacity factor; a GPU
runs the routed rows as a grouped GEMM and ignores the factor (dfx.compile.moe). A served step is
the step ``dfx analyze --phase decode`` prices with the same options (the reference path).
"""

from __future__ import annotations

import json

import pytest

from dfx.serve import Arrivals, ServeConfig, simulate
from dfx.serve.steps import StepPricer

TINY = {  # a 2-layer Mixtral config.json, tiny widths (as tests/compile/test_moe_lowering.py)
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
MACHINES = ("nvidia-h100-sxm", "groq-lpu")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("mixtral") / "config.json"
    path.write_text(json.dumps(TINY))
    return f"hf:{path}"


def _decode_s(model: str, factor: float) -> dict:
    from dfx.hardware import load_profile

    pricer = StepPricer.from_model(model, [load_profile(h) for h in MACHINES], capacity_factor=factor)
    return dict(pricer.latency(8, 1, 32))  # batch 8, one token each, 32 cached tokens each


def test_the_capacity_factor_reaches_a_static_targets_steps_only(model):
    low, high = _decode_s(model, 1.0), _decode_s(model, 2.0)
    # 8 tokens x top-2 / 8 experts: capacity 2 slots an expert at 1.0, 4 at 2.0 (twice the padded rows)
    assert high["groq-lpu"] > low["groq-lpu"]
    assert high["nvidia-h100-sxm"] == pytest.approx(low["nvidia-h100-sxm"])


def test_a_served_step_is_dfx_analyzes_decode_step(model):
    import dfx

    served = _decode_s(model, 2.0)
    a = dfx.analyze(
        model, hardware=list(MACHINES), phase="decode", batch=8, prompt_len=32, kv_len=32, capacity_factor=2.0
    )
    for h in MACHINES:
        assert served[h] == pytest.approx(a.inference.metrics(h).tpot_s, rel=1e-9)


def test_a_mixtral_like_model_serves_on_both_kinds_of_machine(model):
    r = simulate(
        ServeConfig(model, MACHINES, Arrivals(rate=50.0, requests=20), "16", "8", capacity_factor=1.5),
    )
    assert {m.profile_id: m.scheduler for m in r.machines} == {"nvidia-h100-sxm": "continuous", "groq-lpu": "static"}
    for m in r.machines:
        assert m.summary.requests == 20
        assert m.summary.tpot_s.p50 > 0
    assert r.to_dict()["config"]["capacity_factor"] == 1.5
