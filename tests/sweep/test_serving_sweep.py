"""``dfx sweep`` with ``rate:``: a serving sweep, each rate one ``dfx serve`` run (dfx.sweep.serving)."""

from __future__ import annotations

import csv

import pytest

from dfx.errors import DfxError
from dfx.serve import Arrivals, ServeConfig, simulate
from dfx.serve.steps import KvGeometry, StepPricer
from dfx.sweep.serving import SERVING_COLUMNS, run_serving_sweep
from dfx.sweep.spec import from_mapping


def _pricer(profiles, split):
    """D(B, K) = 5 ms + 1 us a row + 2 ns a cached token; P(n) = 5 ms + 10 us a token (as tests/serve)."""

    def price(batch, tokens, kv_len):
        t = 5e-3 + 1e-6 * batch + 2e-9 * batch * kv_len if kv_len else 5e-3 + 1e-5 * batch * tokens
        return {p.id: t for p in profiles}, {p.id: 1 for p in profiles}

    return StepPricer(price, [p.id for p in profiles], "test", KvGeometry(512 * 1024, 13_500_000_000, 2**30))


SPEC = {
    "models": ["hf:llama-2-7b"],
    "hardware": ["nvidia-h100-sxm", "groq-lpu"],
    "rate": [2, 8],
    "serve": {"requests": 100, "input_len": 256, "output_len": 32},
}


def test_each_rate_and_machine_is_one_row_as_dfx_serve_gives_it(tmp_path):
    spec = from_mapping(SPEC).check()
    rows = run_serving_sweep(spec, tmp_path, pricer_factory=_pricer)
    assert {(r["hardware"], r["rate_per_s"]) for r in rows} == {
        (h, r) for h in ("nvidia-h100-sxm", "groq-lpu") for r in (2.0, 8.0)
    }
    # each continuous row is what dfx serve gives at that one rate on its own (the sweep shares the
    # pricing only; a static machine's compiled batch is chosen once, for the sweep's highest rate)
    for rate in (2.0, 8.0):
        alone = simulate(
            ServeConfig(
                "hf:llama-2-7b",
                ("nvidia-h100-sxm",),
                Arrivals(rate=rate, requests=100),
                "256",
                "32",
                rates=(),
            ),
            pricer_factory=_pricer,
        )
        for m in alone.machines:
            row = next(r for r in rows if r["hardware"] == m.profile_id and r["rate_per_s"] == rate)
            assert row["ttft_p50_s"] == pytest.approx(m.summary.ttft_s.p50)
            assert row["output_tokens_per_s"] == pytest.approx(m.summary.output_tokens_per_s)
            assert row["scheduler"] == m.scheduler == "continuous"
    assert {r["scheduler"] for r in rows if r["hardware"] == "groq-lpu"} == {"static"}
    with open(tmp_path / "serving.csv") as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == SERVING_COLUMNS and len(table) == 4
    assert (tmp_path / "latency_vs_rate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(DfxError, match="exist"):  # a second run without force is refused
        run_serving_sweep(spec, tmp_path, pricer_factory=_pricer)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"rate": [0]}, "positive number"),
        ({"rate": [2, 2]}, "repeats"),
        ({"serve": {"lenght": 3}}, "unknown serve option 'lenght'"),
        ({"batch": [4]}, "does not read the batch axis"),
        ({"rate": [], "serve": {"requests": 5}}, "needs rate"),
    ],
)
def test_a_bad_serving_sweep_is_one_line(change, message):
    with pytest.raises(DfxError, match=message):
        from_mapping({**SPEC, **change}).check()
