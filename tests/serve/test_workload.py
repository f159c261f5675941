"""Requests and their lengths: the specs, the arrivals and the messages for bad input."""

from __future__ import annotations

import math

import pytest

from dfx.errors import DfxError
from dfx.serve.api import parse_slo
from dfx.serve.workload import Arrivals, make_requests, parse_lengths


def test_fixed_range_and_file_lengths(tmp_path):
    f = tmp_path / "lens.txt"
    f.write_text("3\n5, 7\n")
    reqs = make_requests(Arrivals(requests=4), parse_lengths(f"file:{f}"), parse_lengths("10:12"), seed=1)
    assert [r.prompt_len for r in reqs] == [3, 5, 7, 3]  # the file, cycled
    assert all(10 <= r.output_len <= 12 for r in reqs)
    assert all(r.arrival_s == 0.0 for r in reqs)  # offline: all at once


def test_lognormal_by_mean_has_that_mean():
    # mu = ln(200) - 0.5**2 / 2 makes E[exp(N(mu, 0.5))] = 200; ceil adds 0.5 on average
    lens = parse_lengths("lognormal:200,0.5").draw(20000, __import__("random").Random(0))
    assert sum(lens) / len(lens) == pytest.approx(200.5, rel=0.02)


def test_poisson_arrivals_have_the_rate():
    reqs = make_requests(Arrivals(rate=4.0, requests=20000), parse_lengths(8), parse_lengths(8), seed=3)
    # the mean gap of Exponential(4) is 1/4 s; 20,000 gaps: the standard error is 0.25 / sqrt(2e4) = 0.0018
    assert reqs[-1].arrival_s / len(reqs) == pytest.approx(0.25, abs=0.01)
    assert all(b.arrival_s > a.arrival_s for a, b in zip(reqs, reqs[1:]))


@pytest.mark.parametrize(
    "arrivals, message",
    [
        (Arrivals(rate=0.0), "--rate 0.0"),
        (Arrivals(rate=-1.0), "positive number"),
        (Arrivals(rate=math.inf), "positive number"),
        (Arrivals(concurrency=0), "--concurrency 0"),
        (Arrivals(requests=0), "--requests 0"),
        (Arrivals(rate=1.0, concurrency=2), "give one of them"),
    ],
)
def test_bad_arrivals(arrivals, message):
    with pytest.raises(DfxError, match=message.replace("+", r"\+")):
        make_requests(arrivals, parse_lengths(8), parse_lengths(8))


@pytest.mark.parametrize(
    "spec, message",
    [
        ("abc", "expected a length"),
        ("0", "1.."),
        ("9:3", "LO <= HI"),
        ("lognormal:0,1", "MEAN >= 1"),
        ("lognormal:x,1", "two numbers"),
        ("uniform:5", "bad --input-len"),
        ("file:/no/such/file", "no such file"),
    ],
)
def test_bad_length_specs(spec, message):
    with pytest.raises(DfxError, match=message):
        parse_lengths(spec, "--input-len")


def test_bad_length_file(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("12\nseven\n")
    with pytest.raises(DfxError, match="entry 2 is 'seven'"):
        parse_lengths(f"file:{f}")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    with pytest.raises(DfxError, match="holds no lengths"):
        parse_lengths(f"file:{empty}")


def test_slo_parsing():
    assert parse_slo("ttft=200ms,tpot=0.05") == {"ttft_s": 0.2, "tpot_s": 0.05}
    with pytest.raises(DfxError, match="bad --slo"):
        parse_slo("latency=3")
    with pytest.raises(DfxError, match="positive"):
        parse_slo("ttft=0")
