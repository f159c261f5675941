"""Bucket assignment, ladders, the optimiser and FLOP waste, with hand-derived values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfx.errors import DfxError
from dfx.shapes import buckets, linear_ladder, optimal_buckets, plan, pow2_ladder
from dfx.shapes.cost import QuadraticFit, SeqCost
from dfx.shapes.dist import parse_dist, sample_lengths
from dfx.shapes.optimize import brute_force_buckets, total_cost


def test_issue_example_tokens():
    p = plan([100, 130, 300, 512], [128, 256, 512])
    assert [r.padded_tokens for r in p.rows] == [128, 256, 1024]  # 100->128, 130->256, 300 and 512->512
    assert p.padded_tokens == 1408  # 128 + 256 + 512 + 512
    assert p.waste_tokens == 366  # 28 + 126 + 212 + 0
    assert p.waste_fraction == pytest.approx(366 / 1408)
    assert p.graphs == 3
    d = p.to_dict()
    assert d["schema"] == "dfx.buckets/1" and d["buckets"] == [128, 256, 512]
    assert (d["padded_tokens"], d["waste_tokens"], d["graphs"]) == (1408, 366, 3)


def test_length_equal_to_bucket_has_no_waste():
    p = plan([128, 128], [128, 256])
    assert (p.waste_tokens, p.rows[1].count) == (0, 0)
    assert p.to_dict()["graphs_used"] == 1


def test_overflow_split():
    # 1100 over a largest bucket of 512: 512 + 512 + 76, the 76 padded to 128
    p = plan([1100], [128, 512], overflow="split")
    assert p.split_inputs == 1 and p.items == 3
    assert p.padded_tokens == 512 + 512 + 128 and p.waste_tokens == 128 - 76


@pytest.mark.parametrize(
    "lengths, sizes, overflow, match",
    [
        ([1, 2], [], "error", "empty"),
        ([1, 2], [256, 128], "error", "strictly increasing"),
        ([1, 2], [128, 128], "error", "strictly increasing"),
        ([1, 2], [0, 128], "error", "positive"),
        ([0, 5], [128], "error", "positive integers"),
        ([-3], [128], "error", "positive integers"),
        ([], [128], "error", "no lengths"),
        ([600], [128, 512], "error", "exceed the largest bucket 512"),
        ([1], [128], "drop", "error or split"),
    ],
)
def test_bad_input_is_one_line_error(lengths, sizes, overflow, match):
    with pytest.raises(DfxError, match=match) as err:
        plan(lengths, sizes, overflow=overflow)
    assert "\n" not in str(err.value)


def test_ladders():
    assert pow2_ladder([100, 130, 300, 512]) == (128, 256, 512)
    assert pow2_ladder([1, 3]) == (1, 2, 4)
    assert linear_ladder([100, 300], 128) == (128, 256, 384)
    assert buckets([100, 130, 300, 512], ladder="linear:256").buckets == (256, 512)
    with pytest.raises(DfxError, match="--ladder"):
        buckets([1], ladder="fib")


def test_exactly_one_mode_and_one_source():
    with pytest.raises(DfxError, match="exactly one of --buckets"):
        buckets([1, 2], sizes=[2], ladder="pow2")
    with pytest.raises(DfxError, match="exactly one of --lengths"):
        buckets(sizes=[2])
    with pytest.raises(DfxError, match="K >= 1"):
        buckets([1, 2], optimize=0)
    with pytest.raises(DfxError, match="--overflow split does not apply"):
        buckets([1, 2], optimize=1, overflow="split")


def test_optimizer_small_hand_case():
    # lengths 1,2,3,10 with K=2: {3,10} pads to 3+3+3+10 = 19 tokens; {1,10}: 31, {2,10}: 24
    assert optimal_buckets([1, 2, 3, 10], 2) == (3, 10)
    assert optimal_buckets([5, 5, 7], 4) == (5, 7)  # fewer distinct lengths than K: zero waste


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 30), min_size=1, max_size=10),
    k=st.integers(1, 4),
    quadratic=st.booleans(),
)
def test_optimizer_matches_brute_force(lengths, k, quadratic):
    weight = (lambda s: s * s + 7 * s) if quadratic else float
    got = optimal_buckets(lengths, k, weight)
    assert len(got) <= k and max(got) == max(lengths)
    assert total_cost(lengths, got, weight) == pytest.approx(brute_force_buckets(lengths, k, weight))


def test_optimize_compares_with_pow2():
    d = buckets([100, 130, 300, 512], optimize=3).to_dict()
    # three buckets for four distinct lengths: {130, 300, 512} pads 100->130: waste 30 tokens
    assert d["buckets"] == [130, 300, 512] and d["waste_tokens"] == 30
    assert d["compare"]["method"] == "ladder:pow2" and d["compare"]["waste_tokens"] == 366


def _square_cost(model: str, seq: int, hw: str) -> SeqCost:
    return SeqCost(seq, float(seq * seq), seq * 1e-6)  # FLOPs s^2 (attention-like), time linear


def test_flop_waste_differs_from_token_waste():
    d = buckets([100, 130, 300, 512], sizes=[128, 256, 512], model="fake", analyzer=_square_cost).to_dict()
    padded = 128**2 + 256**2 + 512**2 + 512**2  # 606,208
    useful = 100**2 + 130**2 + 300**2 + 512**2  # 379,044 (the fit through 3 exact squares is exact)
    assert d["padded_flops"] == pytest.approx(padded)
    assert d["useful_flops"] == pytest.approx(useful)
    assert d["waste_flops_fraction"] == pytest.approx((padded - useful) / padded)  # 37.5% vs 26.0% of tokens
    assert d["predicted_time_s"] == pytest.approx((128 + 256 + 512 + 512) * 1e-6)
    assert d["model"]["flops_fit"]["a"] == pytest.approx(1.0)


def test_optimize_with_model_minimises_flops():
    calls = []

    def cost(model, seq, hw):
        calls.append(seq)
        return _square_cost(model, seq, hw)

    lengths = [1, 2, 3, 10]
    # weight s^2: {3,10}: 9+9+9+100 = 127; {2,10}: 4+4+100+100 = 208; {1,10}: 301
    p = buckets(lengths, optimize=2, model="fake", analyzer=cost)
    assert p.buckets == (3, 10)
    assert len(calls) == len(set(calls))  # each length analysed once


def test_quadratic_fit():
    f = QuadraticFit.through([(1, 6), (2, 17), (3, 34), (4, 57)])  # 3s^2 + 2s + 1
    assert (f.a, f.b, f.c) == pytest.approx((3, 2, 1))
    assert f.max_rel_residual == pytest.approx(0, abs=1e-12)


def test_distributions():
    assert parse_dist("uniform:1:512").spec() == "uniform:1:512"
    ls = sample_lengths("uniform:3:5", samples=200, seed=7)
    assert set(ls) <= {3, 4, 5} and ls == sample_lengths("uniform:3:5", samples=200, seed=7)
    assert min(sample_lengths("normal:2:50", samples=200)) >= 1  # clipped at 1
    assert max(sample_lengths("zipf:1.2:64", samples=200)) <= 64
    assert min(sample_lengths("lognormal:5:0.5", samples=50)) >= 1


@pytest.mark.parametrize("spec", ["foo:1:2", "uniform:1", "uniform:5:1", "normal:a:b", "zipf:0:10", "normal:1:-1", ""])
def test_bad_dist_is_one_line_error(spec):
    with pytest.raises(DfxError, match="--dist") as err:
        parse_dist(spec)
    assert "\n" not in str(err.value)


def test_real_model_linear_in_seq_has_flop_waste_equal_to_token_waste():
    # the built-in mlp runs each of its T images through the same MLP: FLOPs = T * const, so
    # padding 1 -> 2 and 3 -> 4 wastes (1 + 1) / (2 + 4) = 1/3 of tokens and of FLOPs alike
    d = buckets([1, 3], sizes=[2, 4], model="mlp", hardware="nvidia-h100-sxm").to_dict()
    assert d["waste_fraction"] == pytest.approx(1 / 3)
    assert d["waste_flops_fraction"] == pytest.approx(1 / 3, rel=1e-9)
    assert [c["seq"] for c in d["model"]["analysed"]] == [2, 3, 4]  # the buckets plus a midpoint for the fit
