"""Sweep specs: axes from YAML and flags, refusals up front, and the Pareto front."""

import pytest

from dfx.errors import DfxError
from dfx.sweep import load_spec
from dfx.sweep.report import pareto_front

BASE = {"models": ["gpt2-block"], "hardware": ["h100"]}


def test_yaml_and_flags(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("models: [gpt2-block, bert-layer]\nhardware: [h100, spyre]\nbatch: [1, 2]\nseq: 64\ndtype: [bf16]\n")
    spec = load_spec(f, {"batch": [4, 8, 16]})  # a flag replaces the file's axis
    assert spec.batch == (4, 8, 16) and spec.seq == (64,) and spec.dtype == ("bfloat16",)
    assert spec.n_points == 2 * 2 * 3 * 1 * 1 == 12
    # aliases resolve to profile ids; points are keyed by them
    assert {p.hardware for p in spec.points()} == {"nvidia-h100-sxm", "ibm-spyre"}
    assert len(spec.groups()) == 2 * 3  # model x batch share a graph across the 2 profiles


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"batch": [0]}, "positive integers"),
        ({"dtype": ["int3"]}, "unknown sweep dtype"),
        ({"dtype": ["int4"]}, "unknown sweep dtype"),
        ({"phase": ["train"]}, "unknown sweep phase"),
        ({"hardware": ["h100", "nvidia-h100-sxm"]}, "list each profile once"),
        ({"hardware": ["no-such-chip"]}, "unknown hardware profile"),
        ({"seq": [1, 1]}, "repeats a value"),
        ({"batc": [1]}, "unknown key 'batc'"),
        ({"parallel": [0]}, "chip count must be a whole number >= 1"),
        ({"parallel": ["tp=x"]}, "is not a whole number"),
        ({"parallel": ["zp=2"]}, "expected comma-separated"),
        ({"parallel": ["dp=2"]}, "applies to training steps"),
        ({"parallel": [2, "chips=2"]}, "repeats a value"),
    ],
)
def test_bad_specs_are_one_line_errors(extra, message):
    with pytest.raises(DfxError, match=message) as info:
        load_spec(None, {**BASE, **extra})
    assert "\n" not in str(info.value)


def test_models_are_required_and_hardware_defaults_to_analyzes():
    with pytest.raises(DfxError, match="no models to sweep"):
        load_spec(None, {"hardware": ["h100"]})
    assert load_spec(None, {"models": ["mlp"]}).profile_refs() == {
        "nvidia-h100-sxm": "nvidia-h100-sxm",
        "ibm-spyre": "ibm-spyre",
    }


def test_absurd_sweep_is_refused_before_any_work():
    # 1 x 1 x 100 x 100 x 1 = 10,000 points > 5,000
    with pytest.raises(DfxError, match="sweep has 10,000 points, more than max_points 5,000"):
        load_spec(None, {**BASE, "batch": list(range(1, 101)), "seq": list(range(1, 101)), "max_points": 5000})


def test_pareto_front_by_hand():
    # (latency, tokens/s): (2, 5) is beaten by (1, 10); (4, 40) and (3, 30) and (1, 10) are not beaten
    pts = [(2.0, 5.0), (1.0, 10.0), (4.0, 40.0), (3.0, 30.0), (5.0, 40.0), (float("nan"), 1e9)]
    assert pareto_front(pts) == [1, 3, 2]
