"""``dfx.serve.simulate`` with a pricer whose steps are given, not captured: the schedulers each
machine gets, the KV cache it is sized to, and the document it writes."""

from __future__ import annotations

import pytest

from dfx.errors import DfxError
from dfx.serve import Arrivals, ServeConfig, simulate
from dfx.serve.steps import KvGeometry, StepPricer

GIB = 2**30


def _pricer(profiles, split):
    """D(B, K) = 5 ms + 1 us per row + 2 ns per cached token read; P(n) = 5 ms + 10 us per token.

    A 13.5 GB model, 512 KiB of K and V per token, 1 GiB of activations, on one chip."""

    def price(batch, tokens, kv_len):
        if kv_len:
            t = 5e-3 + 1e-6 * batch + 2e-9 * batch * kv_len
        else:
            t = 5e-3 + 1e-5 * batch * tokens
        return {p.id: t for p in profiles}, {p.id: 1 for p in profiles}

    return StepPricer(price, [p.id for p in profiles], "test", KvGeometry(512 * 1024, 13_500_000_000, GIB))


def _config(**kw) -> ServeConfig:
    base = dict(
        model="hf:llama-2-7b",
        hardware=("groq-lpu", "nvidia-h100-sxm"),
        arrivals=Arrivals(rate=4.0, requests=200),
        input_len="512",
        output_len="128",
    )
    return ServeConfig(**{**base, **kw})


def test_each_machine_gets_its_runtimes_scheduler_and_the_h100_its_cache():
    r = simulate(_config(), pricer_factory=_pricer)
    groq, h100 = r.machine("groq-lpu"), r.machine("nvidia-h100-sxm")
    assert (groq.scheduler, h100.scheduler) == ("static", "continuous")
    # (1 chip x 80 GB (the profile's HBM3, decimal) x 0.9 - 13.5e9 B of weights - 1 GiB of
    # activations) / 512 KiB per token, rounded down to blocks of 16 tokens
    free = 80e9 * 0.9 - 13_500_000_000 - GIB
    assert h100.kv_capacity_tokens == int(free / (512 * 1024)) // 16 * 16
    # the static machine reports its padding and its wait for a batch. 512-token prompts fill the
    # 512 bucket exactly, so the prompt padding is the empty rows: 200 requests in k batches of 4
    k = groq.static["batches_run"]
    assert groq.static["prompt_padding_fraction"] == pytest.approx(1 - 200 / (4 * k))
    assert groq.static["wait_s"]["p99"] >= groq.static["wait_s"]["p50"] >= 0.0
    # the smallest power of two batch that keeps up with 4 requests/s: a batch of 1 takes
    # P(512) + 127 decode steps = (5 ms + 5.12 ms) + 127 x (5.001 ms + 2 ns x 512..638) ~ 0.655 s,
    # 1.53 requests/s; 2 rows: 3.0/s; 4 rows: ~5.9/s >= 4
    assert groq.static["batch"] == 4


def test_the_document_reads_back_and_names_its_schema():
    from dfx.schema.ids import SERVING_SCHEMA
    from dfx.schema.serving import read_serving

    doc = simulate(_config(hardware=("nvidia-h100-sxm",)), pricer_factory=_pricer).to_dict()
    assert doc["schema"] == SERVING_SCHEMA
    back = read_serving(doc)
    assert back.machines[0].scheduler == "continuous"
    assert len(back.machines[0].requests["ttft_s"]) == 200
    assert back.to_dict() == doc


def test_a_rate_sweep_gives_one_curve_row_per_machine_and_rate():
    r = simulate(_config(hardware=("nvidia-h100-sxm",), rates=(1.0, 4.0, 16.0)), pricer_factory=_pricer)
    assert [m.rate_per_s for m in r.curve] == [1.0, 4.0, 16.0]
    # more load, never a shorter median wait for the first token
    p50 = [m.summary.ttft_s.p50 for m in r.curve]
    assert p50 == sorted(p50)


def test_goodput_counts_requests_within_the_slo():
    tight = simulate(_config(hardware=("nvidia-h100-sxm",), slo={"ttft_s": 1e-9}), pricer_factory=_pricer)
    loose = simulate(_config(hardware=("nvidia-h100-sxm",), slo={"ttft_s": 1e3}), pricer_factory=_pricer)
    assert tight.machines[0].summary.goodput_per_s == 0.0
    assert loose.machines[0].summary.goodput_per_s == pytest.approx(loose.machines[0].summary.requests_per_s)


def test_disaggregated_moves_the_cache_over_the_interconnect():
    r = simulate(_config(hardware=("nvidia-h100-sxm",), scheduler="disaggregated"), pricer_factory=_pricer)
    m = r.machines[0]
    # one send of 512 tokens x 512 KiB over NVLink: the profile's hop latency and 450 GB/s
    from dfx.hardware import load_profile
    from dfx.parallel import Collective, collective_s

    link = load_profile("nvidia-h100-sxm").interconnect
    assert m.disaggregated["mean_transfer_s"] == pytest.approx(
        collective_s(link, Collective.SEND_RECV, 512 * 512 * 1024, 2)
    )
    assert m.summary.requests == 200


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(arrivals=Arrivals(rate=0.0)), "--rate 0.0"),
        (dict(scheduler="fifo"), "unknown --scheduler"),
        (dict(input_len="many"), "bad --input-len"),
        (dict(mem_fraction=1.5), "--mem-fraction"),
        (dict(hardware=("h100", "nvidia-h100-sxm")), "same profile twice"),
        (dict(prefill="chunky"), "--prefill 'chunky'"),
        (dict(speculative=(0, 0.5)), "--speculative"),
        (dict(speculative=(4, 1.5)), "--speculative"),
        (dict(speculative=(4, 0.7)), "not a static compiled batch"),  # Groq's default scheduler
    ],
)
def test_bad_options_are_one_line_errors(kw, message):
    with pytest.raises(DfxError, match=message):
        simulate(_config(**kw), pricer_factory=_pricer)


def test_a_cache_too_small_for_one_request_is_refused():
    def huge(profiles, split):
        p = _pricer(profiles, split)
        p.geometry = KvGeometry(512 * 1024, 80 * GIB, GIB)  # weights fill the device
        return p

    with pytest.raises(DfxError, match="more chips"):
        simulate(_config(hardware=("nvidia-h100-sxm",)), pricer_factory=huge)


def test_the_console_table_for_each_kind_of_arrivals():
    from rich.console import Console

    from dfx.serve.console import serving_table

    for arrivals in (Arrivals(rate=4.0, requests=50), Arrivals(requests=50), Arrivals(concurrency=4, requests=50)):
        r = simulate(_config(hardware=("nvidia-h100-sxm",), arrivals=arrivals), pricer_factory=_pricer)
        console = Console(width=200, record=True)
        console.print(serving_table(r))
        assert "continuous" in console.export_text()
    r = simulate(
        _config(hardware=("nvidia-h100-sxm",), prefill="separate", speculative=(4, 0.7)), pricer_factory=_pricer
    )
    console = Console(width=200, record=True)
    console.print(serving_table(r))
    assert "prefill separate, speculative K=4, accept 0.7" in console.export_text()


def test_the_pictures_are_pngs():
    from dfx.serve.plot import rate_curve_png, timeline_png

    doc = simulate(_config(rates=(2.0, 8.0)), pricer_factory=_pricer).to_dict()
    for png in (timeline_png(doc), rate_curve_png(doc)):
        assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_separate_prefill_and_speculation_reach_the_continuous_server():
    # one request alone (rate 0.001/s: each served before the next arrives), prompt 512, output 128
    # on the H100 with _pricer's steps: with K = 3 all accepted, 127 tokens after the first come in
    # ceil(127 / 4) = 32 verify steps instead of 127 decode steps
    one = dict(hardware=("nvidia-h100-sxm",), arrivals=Arrivals(rate=0.001, requests=3))
    plain = simulate(_config(**one), pricer_factory=_pricer).machines[0]
    spec = simulate(_config(**one, speculative=(3, 1.0)), pricer_factory=_pricer).machines[0]
    assert spec.summary.tpot_s.p50 < plain.summary.tpot_s.p50 / 3.5
    sep = simulate(_config(**one, prefill="separate"), pricer_factory=_pricer).machines[0]
    assert sep.summary.ttft_s.p50 == pytest.approx(plain.summary.ttft_s.p50)  # alone, nothing to mix
    assert sep.to_dict()["summary"] and _config(prefill="separate").to_dict()["prefill"] == "separate"


def test_a_run_over_the_token_budget_is_refused_before_any_pricing():
    # 100,000 requests x (512 + 100,000) tokens = 10,051,200,000 > 2**30 = 1,073,741,824: it ran past
    # 100 s with no refusal (dfx serve gpt2-block --requests 100000 --output-len 100000 --rate 1000)
    config = _config(
        hardware=("nvidia-h100-sxm",), arrivals=Arrivals(rate=1000.0, requests=100_000), output_len="100000"
    )
    with pytest.raises(DfxError, match=r"100,000 requests hold 10,051,200,000 prompt \+ output tokens, above"):
        simulate(config, pricer_factory=lambda ps, sp: pytest.fail("priced before the refusal"))
    # on two machines the budget counts each: 2 x 1,000 x (512 + 600,000) = 1,201,024,000 > 2**30
    config = _config(arrivals=Arrivals(rate=10.0, requests=1000), output_len="600000")
    with pytest.raises(DfxError, match=r"1,000 requests hold 600,512,000 prompt \+ output tokens x 2 machines"):
        simulate(config, pricer_factory=lambda ps, sp: pytest.fail("priced before the refusal"))
