"""Benchmark: how fast ``dfx serve`` simulates, and how long and how well it prices the steps.

Usage::

    python bench/bench_serve.py                  # requests simulated per second, each scheduler
    python bench/bench_serve.py --price          # + pricing time per point on groq-lpu, cerebras-wse-3, h100
    python bench/bench_serve.py --check          # + interpolation against steps priced directly

The simulation part uses steps given as formulas (a 7B model's shape of costs on one GPU: 5 ms of
weight reads, 1 us a row, 2 ns a cached token read, 10 us a prompt token), so it times the
discrete-event loop alone. The goal (issue 33): 10,000 requests in well under 10 s after pricing.
This is a benchmark, not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import time

from dfx.serve.engine import ContinuousConfig, run_continuous
from dfx.serve.static import run_static
from dfx.serve.steps import IterationCost
from dfx.serve.workload import Arrivals, make_requests, parse_lengths


class Formula(IterationCost):
    def decode_line(self, batch, kv_tokens):
        return 5e-3 + 1e-6 * batch, 2e-9

    def prefill_s(self, tokens):
        return 5e-3 + 1e-5 * tokens

    def batch_prefill_s(self, batch, tokens):
        return 5e-3 + 1e-5 * batch * tokens


def simulate_speed(n: int = 10_000) -> None:
    cost = Formula()
    cases = [
        ("continuous, Poisson 4/s, ShareGPT-like", Arrivals(rate=4.0, requests=n), "continuous"),
        ("continuous, Poisson 40/s (saturated)", Arrivals(rate=40.0, requests=n), "continuous"),
        ("continuous, offline", Arrivals(requests=n), "continuous"),
        ("continuous, 64 users closed loop", Arrivals(concurrency=64, requests=n), "continuous"),
        ("static batch 8, Poisson 4/s", Arrivals(rate=4.0, requests=n), "static"),
        ("disaggregated, Poisson 4/s", Arrivals(rate=4.0, requests=n), "disaggregated"),
        ("continuous, separate prefill, Poisson 4/s", Arrivals(rate=4.0, requests=n), "separate"),
        ("continuous, speculative 4,0.7, Poisson 4/s", Arrivals(rate=4.0, requests=n), "speculative"),
    ]
    print(f"{'case':44s} {'wall s':>8s} {'requests/s simulated':>22s}")
    for name, arrivals, kind in cases:
        reqs = make_requests(arrivals, parse_lengths("lognormal:161,1.0"), parse_lengths("lognormal:194,1.0"), seed=0)
        cc = ContinuousConfig(kv_blocks=120_000 // 16)
        if kind == "separate":
            cc = ContinuousConfig(kv_blocks=120_000 // 16, mixed_prefill=False)
        elif kind == "speculative":  # no jump over identical iterations: each step's tokens differ
            cc = ContinuousConfig(kv_blocks=120_000 // 16, speculative_k=4, accept=0.7)
        t0 = time.perf_counter()
        if kind == "static":
            run_static(reqs, cost, 8, [2**k for k in range(16)])
        elif kind == "disaggregated":
            from dfx.serve.disagg import run_disaggregated

            run_disaggregated(reqs, cost, cc, lambda p: 1e-5 * p)
        else:
            run_continuous(reqs, cost, cc, concurrency=arrivals.concurrency)
        wall = time.perf_counter() - t0
        print(f"{name:44s} {wall:8.2f} {n / wall:22,.0f}")


def price_speed(check: bool) -> None:
    """Pricing time per point on the slow spatial models and the H100, and the interpolation error."""
    from dfx.hardware import load_profile
    from dfx.serve.steps import StepPricer, fit_costs

    for hw in ("groq-lpu", "cerebras-wse-3", "nvidia-h100-sxm"):
        pricer = StepPricer.from_model("hf:llama-2-7b", [load_profile(hw)])
        t0 = time.perf_counter()
        costs = fit_costs(pricer, max_kv=640, batch=8)[pricer.profile_ids[0]]
        fit_wall = time.perf_counter() - t0
        print(
            f"{hw}: KV refined at batch 8 in {fit_wall:.1f} s, {len(pricer.points)} points, KV lengths {costs.kv_lens}"
        )
        for p in pricer.points:
            print(f"  priced {p.batch, p.tokens, p.kv_len}: {p.latency_s[hw] * 1e3:.4f} ms in {p.wall_s:.2f} s")
        if not check:
            continue
        # interpolated values against steps priced directly, off the priced grid
        for batch, kv in ((4, 300), (20, 500), (40, 200)):
            interp = costs.decode_s(batch, batch * kv)
            direct = pricer.latency(batch, 1, kv)[hw]
            print(
                f"  decode B={batch} kv={kv}: interpolated {interp * 1e3:.4f} ms, priced {direct * 1e3:.4f} ms, error {interp / direct - 1:+.2%}"
            )
        for n in (200, 700):
            interp = costs.prefill_s(n)
            direct = pricer.latency(1, n, 0)[hw]
            print(
                f"  prefill {n}: interpolated {interp * 1e3:.4f} ms, priced {direct * 1e3:.4f} ms, error {interp / direct - 1:+.2%}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--price", action="store_true", help="also time pricing on groq-lpu, cerebras-wse-3, h100")
    ap.add_argument("--check", action="store_true", help="also check interpolation against direct pricing")
    args = ap.parse_args()
    simulate_speed(args.requests)
    if args.price or args.check:
        price_speed(args.check)


if __name__ == "__main__":
    main()
