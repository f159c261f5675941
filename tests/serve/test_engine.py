"""Continuous batching by hand: a server whose every iteration takes a constant time.

The servers here cost what the arithmetic in each test says, so every expected value is derived in
the test from the queue and block arithmetic, not read off the simulator.
"""

from __future__ import annotations

import math

import pytest

from dfx.serve.engine import ContinuousConfig, run_continuous
from dfx.serve.metrics import summarize
from dfx.serve.steps import IterationCost
from dfx.serve.workload import Request


class ConstantServer(IterationCost):
    """Every iteration with work in it takes ``tau`` seconds; a prefill costs nothing extra."""

    def __init__(self, tau: float) -> None:
        self.tau = tau

    def decode_line(self, batch, kv_tokens):
        return self.tau, 0.0  # D(B, K) = tau

    def prefill_s(self, tokens):
        return 0.0

    def iteration_s(self, batch, kv_tokens, chunks=()):
        return self.tau if (batch or chunks) else 0.0


def _fixed_interval(n: int, gap: float, prompt: int, output: int) -> list[Request]:
    return [Request(i, gap * i, prompt, output) for i in range(n)]


def test_below_capacity_ttft_is_one_iteration_and_the_queue_stays_empty():
    # tau = 0.25 s (exact in binary), output 8 tokens: a request holds a slot for 8 iterations = 2 s.
    # Arrivals every 1 s land on iteration boundaries (1 / 0.25 = 4 iterations), and with 4 slots the
    # server holds at most ceil(2 / 1) = 2 requests at once: nobody waits. The request is admitted at
    # its arrival, its prompt goes through in that iteration, and its first token comes tau later.
    tau, gap, out = 0.25, 1.0, 8
    run = run_continuous(
        _fixed_interval(40, gap, 16, out), ConstantServer(tau), ContinuousConfig(kv_blocks=64, max_seqs=4)
    )
    ttft = [f - a for f, a in zip(run.first_token_s, run.arrival_s)]
    assert ttft == pytest.approx([tau] * 40)
    assert max(w for *_, w in run.timeline) == 0  # nobody ever waited
    # every request: 1 prefill iteration (first token) + 7 decode iterations, so e2e = 8 tau
    assert [z - a for z, a in zip(run.finish_s, run.arrival_s)] == pytest.approx([out * tau] * 40)


def test_above_capacity_the_queue_grows_linearly():
    # 4 slots, 8 iterations of tau = 1 s per request: the server finishes 4 / 8 = 0.5 requests/s.
    # One arrives every 1 s, so the queue grows at 1 - 0.5 = 0.5 requests/s. By hand: at t = 8k
    # (k >= 1) the first 4k requests have been admitted (4 per 8 s wave, the first wave at t = 0..3)
    # and 8k + 1 have arrived, so 8k + 1 - 4k = 4k + 1 wait.
    tau, gap, out, slots = 1.0, 1.0, 8, 4
    n = 60
    run = run_continuous(
        _fixed_interval(n, gap, 16, out), ConstantServer(tau), ContinuousConfig(kv_blocks=256, max_seqs=slots)
    )
    waiting_at = {t0: w for t0, _t1, _b, _kv, w in run.timeline}
    for k in range(1, 7):  # while arrivals last (t <= 59)
        t = 8.0 * k
        assert waiting_at[t] == 4 * k + 1 - 1  # the row is recorded after the admissions of t (4 admitted at t)
    # the slope: (waiting at 48 - waiting at 8) / 40 s = 0.5 requests/s = arrival rate - service rate
    assert (waiting_at[48.0] - waiting_at[8.0]) / 40.0 == pytest.approx(1 / gap - slots / (out * tau))


def _offline_throughput(kv_blocks: int) -> tuple[int, float]:
    # 64 requests at t = 0, prompt 8 + output 8: at most 8 + 8 - 1 = 15 tokens in the cache, one
    # block of 16. A request is admitted only while a block is free, so the batch is the number of
    # blocks; each wave takes 8 iterations of tau; output tokens/s = batch * 8 / (8 tau) = batch / tau.
    tau = 0.5
    reqs = [Request(i, 0.0, 8, 8) for i in range(64)]
    run = run_continuous(reqs, ConstantServer(tau), ContinuousConfig(kv_blocks=kv_blocks, kv_block=16, max_seqs=256))
    batch = max(b for _t0, _t1, b, _kv, _w in run.timeline)
    s = summarize(run.arrival_s, run.first_token_s, run.finish_s, [8] * 64, [8] * 64, [])
    return batch, s.output_tokens_per_s


def test_offline_halving_the_kv_cache_halves_the_batch_and_the_throughput():
    full_batch, full_tps = _offline_throughput(16)
    half_batch, half_tps = _offline_throughput(8)
    assert (full_batch, half_batch) == (16, 8)  # blocks of one request each
    # 64 requests / 16 per wave = 4 waves of 8 iterations of 0.5 s = 16 s for 512 tokens: 32 tokens/s
    assert full_tps == pytest.approx(64 * 8 / (64 / 16 * 8 * 0.5))
    assert half_tps == pytest.approx(64 * 8 / (64 / 8 * 8 * 0.5))
    assert full_tps == pytest.approx(2 * half_tps)


def test_preemption_when_the_cache_runs_out():
    # 2 blocks of 4 tokens. Two requests of prompt 4, output 4 are admitted (one block each for the
    # prompt); their first decode needs a second block each (cache 4 + 1 = 5 tokens): only the older
    # gets it, the newer is preempted and recomputed after the older finishes.
    run = run_continuous(
        [Request(0, 0.0, 4, 4), Request(1, 0.0, 4, 4)], ConstantServer(1.0), ContinuousConfig(kv_blocks=2, kv_block=4)
    )
    assert run.preemptions == (0, 1)
    assert run.finish_s[0] < run.finish_s[1]
    # the first: 1 prefill + 3 decodes = 4 s; the second keeps its first token from t = 1
    assert run.finish_s[0] == pytest.approx(4.0)
    assert run.first_token_s[1] == pytest.approx(1.0)


class AffineServer(IterationCost):
    """D(B, K) = a + b B + s K; P(n) = c n: the jump over decode iterations must sum them exactly."""

    def decode_line(self, batch, kv_tokens):
        return 0.004 + 0.0001 * batch, 2e-7

    def prefill_s(self, tokens):
        return 1e-5 * tokens


def test_the_jump_equals_stepping_one_iteration_at_a_time():
    # one request alone: prompt P = 100, output O = 50. Its prefill costs 100e-5 s; then 49 decode
    # iterations with B = 1 over caches of 100 .. 148 tokens: sum of (0.0041 + 2e-7 k).
    run = run_continuous([Request(0, 0.0, 100, 50)], AffineServer(), ContinuousConfig(kv_blocks=100))
    decode = sum(0.0041 + 2e-7 * k for k in range(100, 149))
    assert run.first_token_s[0] == pytest.approx(100e-5)
    assert run.finish_s[0] == pytest.approx(100e-5 + decode)
    assert run.iterations == 50


def test_a_request_too_long_for_the_cache_is_refused():
    from dfx.errors import DfxError

    with pytest.raises(DfxError, match="KV blocks"):
        run_continuous([Request(0, 0.0, 100, 50)], AffineServer(), ContinuousConfig(kv_blocks=2, kv_block=16))


def test_closed_loop_keeps_concurrency_requests_in_flight():
    # 2 users, requests of 4 iterations (output 4) of 1 s: each user's next request starts when its
    # last one ends, so 8 requests take 8 / 2 * 4 = 16 s.
    reqs = [Request(i, None, 4, 4) for i in range(8)]
    run = run_continuous(reqs, ConstantServer(1.0), ContinuousConfig(kv_blocks=64), concurrency=2)
    assert max(run.finish_s) == pytest.approx(16.0)
    assert math.isclose(min(run.arrival_s[2:]), 4.0)


class PhaseServer(IterationCost):
    """A decode iteration takes 1 s whatever its batch, a prefill 0.5 s whatever its tokens; a mixed
    iteration 1.5 s."""

    def decode_line(self, batch, kv_tokens):
        return 1.0, 0.0

    def prefill_s(self, tokens):
        return 0.5 if tokens else 0.0

    def iteration_s(self, batch, kv_tokens, chunks=()):
        return (1.0 if batch else 0.0) + (0.5 if chunks else 0.0)


def test_separate_prefill_pauses_the_decode_batch():
    # SGLang v0.3's order (enable_mixed_chunk off): a prefill runs alone, first, whenever one can.
    # A (prompt 10, output 5) at 0; B (prompt 10, output 3) at 1.2.
    #   0.0-0.5 prefill A (A's first token at 0.5)   0.5-1.5 decode A (A: 2 tokens)
    #   1.5-2.0 prefill B, A waits (B's first at 2.0) 2.0-3.0 decode A, B (A: 3, B: 2)
    #   3.0-4.0 decode A, B (A: 4, B: 3, B done)      4.0-5.0 decode A (A: 5, done)
    reqs = [Request(0, 0.0, 10, 5), Request(1, 1.2, 10, 3)]
    run = run_continuous(reqs, PhaseServer(), ContinuousConfig(kv_blocks=64, mixed_prefill=False))
    assert run.first_token_s == pytest.approx((0.5, 2.0))
    assert run.finish_s == pytest.approx((5.0, 4.0))
    # A's TPOT: 4 decode steps of 1 s and B's 0.5 s prefill between its tokens: 4.5 / 4
    assert (run.finish_s[0] - run.first_token_s[0]) / 4 == pytest.approx(1.125)
    assert run.iterations == 6
    # mixed (vLLM V1): B's chunk joins A's decode at 1.5 (1.5 s), so B's first token is at 3.0
    mixed = run_continuous(reqs, PhaseServer(), ContinuousConfig(kv_blocks=64))
    assert mixed.first_token_s == pytest.approx((0.5, 3.0))


def test_separate_prefill_keeps_the_blocks_the_next_decode_needs():
    # 3 blocks of 4 tokens. A prefill is admitted whole, and only while the blocks the decoding
    # sequences' next tokens need, and its own first decode's, stay free (else the next decode
    # would preempt what the prefill just computed).
    #   0.0-0.5 prefill A (prompt 4: 1 block; its 5th token needs a 2nd)      free 2
    #   0.5-1.5 decode A (block 2)                                            free 1
    #   1.5: B needs 1 block + 1 for its first decode > 1 free: decode A  2.5: A done, free 3
    #   2.5-3.0 prefill B (1 block, 1 kept); C would need 2 of the 1 left: waits
    #   3.0-4.0 decode B (B needs its kept block; C's 2 > 3 - 1 - 1): B done at 4.0, free 3
    #   4.0-4.5 prefill C;  4.5-5.5 decode C, done
    reqs = [Request(0, 0.0, 4, 3), Request(1, 0.6, 4, 2), Request(2, 0.7, 4, 2)]
    run = run_continuous(reqs, PhaseServer(), ContinuousConfig(kv_blocks=3, kv_block=4, mixed_prefill=False))
    assert run.preemptions == (0, 0, 0)
    assert run.first_token_s == pytest.approx((0.5, 3.0, 4.5))
    assert run.finish_s == pytest.approx((2.5, 4.0, 5.5))


def test_speculative_decoding_takes_the_expected_accepted_tokens_a_step():
    # K = 4 proposed, acceptance 0.5: (1 - 0.5^5) / (1 - 0.5) = 1.9375 tokens a verify step
    # (Leviathan et al. 2023, eq. 1). Output 32: the first token from the prefill iteration
    # (ConstantServer: tau), then 31 tokens at 1.9375 a step: 16 steps (16 x 1.9375 = 31 exactly).
    tau = 0.25
    spec = ContinuousConfig(kv_blocks=64, speculative_k=4, accept=0.5)
    assert spec.tokens_per_step == pytest.approx(1 + 0.5 + 0.25 + 0.125 + 0.0625)
    run = run_continuous([Request(0, 0.0, 16, 32)], ConstantServer(tau), spec)
    assert run.first_token_s[0] == pytest.approx(tau)
    assert run.finish_s[0] == pytest.approx(tau + 16 * tau)
    assert run.iterations == 17


def test_a_verify_step_prices_k_more_tokens_a_sequence_and_the_cache_grows_by_the_accepted():
    # AffineServer: D(B, K) = 0.004 + 0.0001 B + 2e-7 K, P(n) = 1e-5 n. K = 1 accepted always:
    # 2 tokens a step. Prompt 100, output 5: prefill 100e-5; then 4 tokens in 2 verify steps, each
    # D(1, cache) + P(1 + 1) - P(1) (the draft token joins the pass), at caches of 100 and 102.
    spec = ContinuousConfig(kv_blocks=100, speculative_k=1, accept=1.0)
    run = run_continuous([Request(0, 0.0, 100, 5)], AffineServer(), spec)
    steps = sum(0.0041 + 2e-7 * k + 1e-5 for k in (100, 102))
    assert run.first_token_s[0] == pytest.approx(100e-5)
    assert run.finish_s[0] == pytest.approx(100e-5 + steps)


def test_speculative_steps_taken_at_once_sum_as_one_at_a_time():
    # one request alone, prompt 100, output 50, K = 4 at acceptance 0.5: E = 1.9375 tokens a step.
    # Worked here step by step: step d adds floor(d E) - floor((d - 1) E) tokens (the last capped at
    # what is left) and costs D(1, cache) + P(1 x 5) - P(1) = 0.0041 + 2e-7 cache + 4e-5.
    e = 1.9375
    cache, left, d, t = 100, 49, 0, 100e-5  # after the prefill: the first token, 49 to go
    while left > 0:
        d += 1
        t += 0.0041 + 2e-7 * cache + 4e-5
        g = min(left, math.floor(d * e + 1e-9) - math.floor((d - 1) * e + 1e-9))
        cache += g
        left -= g
    spec = ContinuousConfig(kv_blocks=100, speculative_k=4, accept=0.5)
    run = run_continuous([Request(0, 0.0, 100, 50)], AffineServer(), spec)
    assert run.finish_s[0] == pytest.approx(t)
    assert run.iterations == 1 + d  # 26 verify steps: 25 x 1.9375 = 48.4 < 49 <= 26 x 1.9375
    assert len(run.timeline) < run.iterations  # and the loop took them in jumps
