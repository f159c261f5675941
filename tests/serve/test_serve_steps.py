"""The iteration cost model: what is priced, and what is read off it, against formulas by hand."""

from __future__ import annotations

import pytest

from dfx.serve.steps import StepPricer, fit_costs


def _pricer(decode, prefill):
    """A pricer whose steps are formulas: ``decode(B, kv)`` and ``prefill(n)`` in seconds."""

    def price(batch, tokens, kv_len):
        t = decode(batch, kv_len) if kv_len else prefill(batch * tokens)
        return {"m": t}, {"m": 1}

    return StepPricer(price, ["m"])


def test_decode_affine_in_kv_and_batch_is_read_exactly():
    # D(B, kv) = 5 ms + 10 us B + 2 ns B kv: affine in both, so two batches and two KV lengths do
    pricer = _pricer(lambda b, k: 5e-3 + 1e-5 * b + 2e-9 * b * k, lambda n: 1e-5 * n)
    c = fit_costs(pricer, max_kv=600)["m"]
    assert c.kv_lens == (128, 640)  # the ends; the midpoint tested (384) lies on the chord
    # B = 5 sequences reading K = 5 x 300 tokens: 5e-3 + 5e-5 + 2e-9 x 1500
    assert c.decode_s(5, 1500) == pytest.approx(5e-3 + 5e-5 + 3e-6)
    # batch 1 and 64 and the linearity check at 8: nothing else priced for batches up to 64
    assert sorted({p.batch for p in pricer.points if p.kv_len}) == [1, 8, 64]


def test_a_convex_batch_axis_is_priced_at_powers_of_two():
    # D grows as B^2 below 64: the check at 8 fails, so B = 5 is read between 4 and 8
    pricer = _pricer(lambda b, k: 1e-3 * b * b + 1e-9 * b * k, lambda n: 1e-5 * n)
    c = fit_costs(pricer, max_kv=200)["m"]
    # between 4 (16 ms) and 8 (64 ms) at a quarter of the way: 16 + (64 - 16) / 4 = 28 ms, plus the KV
    assert c.decode_s(5, 5 * 200) == pytest.approx(28e-3 + 1e-9 * 5 * 200)
    assert {4, 8} <= {p.batch for p in pricer.points}


def test_prefill_is_linear_between_grid_points_and_zero_at_zero():
    pricer = _pricer(lambda b, k: 1e-3, lambda n: 2e-3 + 1e-5 * n)
    c = fit_costs(pricer, max_kv=128)["m"]
    assert c.prefill_s(0) == 0.0
    assert c.prefill_s(256) == pytest.approx(2e-3 + 2.56e-3)  # a grid point, priced
    assert c.prefill_s(300) == pytest.approx(2e-3 + 3e-3)  # between 256 and 384: exact for a line


def test_a_mixed_iteration_by_hand():
    # D(B, K) = 4 ms + 1 ns K (no batch term); P(n) = 4 ms + 10 us n above 1 token
    pricer = _pricer(lambda b, k: 4e-3 + 1e-9 * b * k, lambda n: 4e-3 + 1e-5 * n)
    c = fit_costs(pricer, max_kv=256)["m"]
    d = 4e-3 + 1e-9 * 1000  # the decode batch of 2 reading 1,000 cached tokens
    # one chunk of 128 tokens, no prefix: D + P(2 + 128) - P(2) = D + 1.28 ms
    assert c.iteration_s(2, 1000, [(128, 0)]) == pytest.approx(d + 1.28e-3)
    # a chunk after a 256-token prefix adds max(0, P(384) - P(256) - P(128)) = max(0, -4 ms) = 0
    assert c.iteration_s(2, 1000, [(128, 256)]) == pytest.approx(d + 1.28e-3)
    # no chunk: the decode step itself
    assert c.iteration_s(2, 1000) == pytest.approx(d)


def test_the_kv_bytes_per_token_of_a_latent_cache_are_the_mla_formula():
    from dfx.hardware import load_profile
    from dfx.serve.steps import StepPricer

    # DeepSeek-V3 (hf_configs/deepseek-v3.json): 61 layers, one latent of kv_lora_rank 512 + rope 64 = 576
    # elements per token per layer (DeepSeek-V2, arXiv 2405.04434, section 2.1), bf16: 61 * 576 * 2 = 70,272 B
    # (K and V of 128 heads would be 2 * 61 * 128 * 192 * 2 = 5,996,544 B)
    pricer = StepPricer.from_model("hf:deepseek-v3", [load_profile("nvidia-h200")], split=8)
    pricer.point(1, 1, 16)  # one decode step: batch 1, 1 token, 16 cached
    assert pricer.geometry.kv_bytes_per_token == 61 * 576 * 2


def test_the_servers_prefill_prices_keep_every_positions_logits(monkeypatch):
    # dfx serve prices a pass's extra tokens (prefill chunks, speculative drafts) as P(B + n) - P(B),
    # and a draft token needs its LM-head row: its prefill prices keep every position's logits, where
    # dfx analyze --phase prefill keeps the last one. hf:gpt2, batch 1, 16 tokens: the LM head is
    # 2 x 16 x 768 x 50,257 FLOPs with every position, 2 x 1 x 768 x 50,257 with the last only.
    import dfx.inference.phases as phases
    from dfx.analysis import evaluate_on
    from dfx.hardware import load_profile
    from dfx.inference.phases import Phase, PhaseRequest, run_phase

    profile = load_profile("nvidia-h100-sxm")

    def head_flops(keep):
        req = PhaseRequest(Phase.PREFILL, batch=1, prompt_len=16, logits_to_keep=keep)
        costed, _, _ = run_phase("hf:gpt2", [profile], req, evaluate=lambda c, p: evaluate_on(c, p, eager=False))
        return sum(c.cost.flops for c in costed.nodes if "lm_head" in c.node.module_path)

    assert head_flops(0) == 2 * 16 * 768 * 50_257
    assert head_flops(None) == 2 * 1 * 768 * 50_257
    seen = []

    def spy(spec, profiles, request, **kw):
        seen.append(request)
        return run_phase(spec, profiles, request, **kw)

    monkeypatch.setattr(phases, "run_phase", spy)
    StepPricer.from_model("hf:gpt2", [profile]).latency(1, 16, 0)
    assert [r.logits_to_keep for r in seen] == [0]
