"""Generate = prefill + decode steps: the metrics' definitions and the exact sum over steps."""

import json
import subprocess
import sys

import pytest

import dfx
from dfx.inference import PhaseRequest, Phase, sum_over_steps
from dfx.inference.phases import STEP_REL_TOL


def test_sum_over_steps_is_exact_for_affine_and_convex_piecewise():
    # affine: sum_{k=3}^{40} (0.5 k + 2) = 0.5 * (sum 1..40 - sum 1..2) + 2 * 38 = 0.5 * 817 + 76 = 484.5
    total, seen = sum_over_steps(lambda k: 0.5 * k + 2, 3, 40)
    assert total == pytest.approx(484.5, rel=1e-12) and len(seen) == 3
    # convex piecewise: max(10, k) over k = 0..30: 11 tens (k = 0..10) + 11 + ... + 30 = 110 + 410 = 520
    total, seen = sum_over_steps(lambda k: float(max(10, k)), 0, 30)
    assert total == pytest.approx(520.0, rel=1e-12)
    assert len(seen) < 31  # fewer evaluations than steps
    assert sum_over_steps(lambda k: 1.0, 5, 4) == (0.0, ())  # no steps


def test_generate_metrics_match_every_step_evaluated(tiny_llama):
    hw = ["nvidia-a100-sxm-80gb", "groq-lpu", "cerebras-wse-3"]
    prompt, out, batch = 4, 10, 2
    gen = dfx.analyze(
        tiny_llama, hardware=hw, dtype="bf16", phase="generate", prompt_len=prompt, output_len=out, batch=batch
    )
    pre = dfx.analyze(tiny_llama, hardware=hw, dtype="bf16", phase="prefill", prompt_len=prompt, batch=batch)
    steps = [  # decode steps at KV lengths 4 .. 4 + 10 - 2 = 12: the 9 tokens after the first
        dfx.analyze(tiny_llama, hardware=hw, dtype="bf16", phase="decode", kv_len=k, batch=batch)
        for k in range(prompt, prompt + out - 1)
    ]
    for i, pid in enumerate(hw):
        m = gen.inference.metrics(pid)
        ttft = pre.hardware[i].latency_s
        decode = sum(s.hardware[i].latency_s for s in steps)
        assert m.ttft_s == pytest.approx(ttft, rel=1e-12)
        tol = 2 * STEP_REL_TOL  # the trapezoids' bound (dfx.inference.phases.STEP_REL_TOL)
        assert m.decode_s == pytest.approx(decode, rel=tol)
        assert m.tpot_s == pytest.approx(decode / (out - 1), rel=tol)
        assert m.total_s == pytest.approx(ttft + decode, rel=tol)
        assert m.tokens_per_s == pytest.approx(batch * out / (ttft + decode), rel=tol)
        assert m.tokens_per_s_per_user == pytest.approx((out - 1) / decode, rel=tol)
        assert steps[0].inference.metrics(pid).tpot_s == steps[0].hardware[i].latency_s
        assert pre.inference.metrics(pid).prefill_tokens_per_s == pytest.approx(batch * prompt / ttft)


def test_request_lengths():
    r = PhaseRequest(Phase.GENERATE, batch=3, prompt_len=128, output_len=128)
    assert list(r.decode_kv_lens)[:2] == [128, 129] and r.decode_kv_lens[-1] == 254  # 127 steps
    assert len(r.decode_kv_lens) == 127
    assert r.kv_cache_tokens == 255  # 128 prompt + 127 decoded tokens have K and V
    assert PhaseRequest(Phase.DECODE, kv_len=1024).kv_cache_tokens == 1024
    assert list(PhaseRequest(Phase.PREFILL).decode_kv_lens) == []


def test_output_len_one_is_prefill_only(tiny_llama):
    a = dfx.analyze(
        tiny_llama, hardware=["nvidia-h100-sxm"], dtype="bf16", phase="generate", prompt_len=8, output_len=1
    )
    m = a.inference.metrics("nvidia-h100-sxm")
    assert m.tpot_s is None and m.decode_s == 0.0 and m.total_s == m.ttft_s
    assert m.tokens_per_s == pytest.approx(1 / m.ttft_s)


def test_cli_generate_reports_ttft_tpot_tokens_per_s_per_profile():
    cmd = [
        sys.executable,
        "-m",
        "dfx.cli",
        "analyze",
        "hf:llama-2-7b",
        "--phase",
        "generate",
        "--prompt-len",
        "128",
        "--output-len",
        "128",
        "--dtype",
        "bf16",
        "--hw",
        "nvidia-a100-sxm-80gb",
        "--json",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    inf = doc["inference"]
    assert (inf["phase"], inf["prompt_len"], inf["output_len"], inf["batch"]) == ("generate", 128, 128, 1)
    m = inf["profiles"]["nvidia-a100-sxm-80gb"]
    for key in ("ttft_s", "tpot_s", "tokens_per_s", "tokens_per_s_per_user"):
        assert m[key] > 0
    # A decode step reads at least the 13.2 GB of weights at 2.039 TB/s: TPOT >= 6.48 ms, so one
    # user gets at most 154 tokens/s; TTFT is one prefill of 128 tokens, at least its weight reads too.
    assert m["tpot_s"] >= 6_607_343_616 * 2 / 2.039e12
    assert m["tokens_per_s_per_user"] == pytest.approx(1 / m["tpot_s"])
    assert m["total_s"] == pytest.approx(m["ttft_s"] + 127 * m["tpot_s"])
    # the cache at the end: 255 tokens x 2 x 32 layers x 32 heads x 128 x 2 bytes
    assert inf["kv_cache_bytes"] == 255 * 2 * 32 * 32 * 128 * 2


def test_each_profile_is_evaluated_at_its_own_kv_lengths_and_prices_as_alone(tiny_llama):
    # independent construction: each profile run alone (no other profile's KV lengths to share)
    from collections import Counter

    from dfx.analysis import evaluate_on
    from dfx.hardware import load_profile
    from dfx.inference.phases import first_steps, run_phase

    profiles = [load_profile(h) for h in ("nvidia-h100-sxm", "groq-lpu", "cerebras-wse-3")]
    request = PhaseRequest(Phase.GENERATE, batch=2, prompt_len=16, output_len=40)
    seen: Counter = Counter()

    def evaluate(costed, profile):
        seen[profile.id, costed.graph.name] += 1  # the graph's name carries its step (decode-kvK, prefill-P)
        return evaluate_on(costed, profile)

    _, _, together = run_phase(tiny_llama, profiles, request, dtype="float32", evaluate=evaluate)
    shared = set(first_steps(16, 16 + 40 - 2, STEP_REL_TOL))  # every profile's sum evaluates these first
    for p in profiles:
        _, _, alone = run_phase(tiny_llama, [p], request, dtype="float32", evaluate=evaluate_on)
        assert together.metrics(p.id) == alone.metrics(p.id)  # every number, and the KV lengths evaluated
        own = set(alone.metrics(p.id).decode_kv_lens_evaluated)
        evaluated = {name for (pid, name), n in seen.items() if pid == p.id}
        assert all(n == 1 for (pid, _), n in seen.items() if pid == p.id)  # no step evaluated twice
        assert evaluated == {f"{tiny_llama}:decode-kv{k}" for k in own | shared} | {f"{tiny_llama}:prefill-16"}
