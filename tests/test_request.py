"""AnalyzeRequest: one frozen request, validated once before any capture, that analyze() runs."""

import dataclasses

import pytest

from dfx.analysis import AnalyzeRequest, analyze, run
from dfx.errors import DfxError
from dfx.request import DEFAULT_DTYPE, DEFAULT_HARDWARE, Mode
from dfx.roofline import ExecutionModel


def test_defaults_are_parsed_values():
    r = AnalyzeRequest.of("gpt2-block")
    assert [p.id for p in r.profiles] == list(DEFAULT_HARDWARE)  # loaded profiles, not ids
    assert r.dtype == DEFAULT_DTYPE == "bf16"  # a model name is built in bf16 unless told otherwise
    assert r.execution_model is ExecutionModel.COMPILED
    assert r.capacity_factor == 1.25  # GShard/Switch's capacity factor, dfx's default (docs/compile.md)
    assert r.mode is Mode.FORWARD


@pytest.mark.parametrize(
    ("options", "mode"),
    [
        ({}, Mode.FORWARD),
        ({"phase": "decode"}, Mode.PHASE),
        ({"kv_len": 64}, Mode.PHASE),  # a length alone asks for an inference step
        ({"dtype": "fp8"}, Mode.PHASE),  # a storage width is re-priced from a bf16 capture
        ({"weight_dtype": "int4"}, Mode.PHASE),
        ({"train": True}, Mode.TRAIN),
        ({"train": True, "optimizer": "sgd"}, Mode.TRAIN),
    ],
)
def test_mode_follows_the_options(options, mode):
    assert AnalyzeRequest.of("gpt2-block", hardware=["h100"], **options).mode is mode


def test_a_request_is_frozen():
    r = AnalyzeRequest.of("gpt2-block", hardware=["h100"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.seq = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"hardware": ["no-such-chip"]}, "no-such-chip"),
        ({"hardware": ["groq"], "execution_model": "eager"}, "eager"),
        ({"hardware": ["h100", "nvidia-h100-sxm"]}, "given twice"),
        ({"chips": 4, "parallel": "tp=8"}, "--chips 4"),
        ({"capacity_factor": -1.0}, "-1"),
        ({"optimizer": "adam"}, "train=True"),
        ({"train": True, "kv_len": 8}, "kv_len"),
        ({"train": True, "dtype": "fp8"}, "fp8"),
    ],
)
def test_every_check_fails_before_any_capture(options, names, monkeypatch):
    import dfx.analysis as analysis

    monkeypatch.setattr(analysis, "capture_model", lambda *a, **k: pytest.fail("captured before refusing"))
    with pytest.raises(DfxError, match=names):
        analyze("gpt2-block", **options)


def test_analyze_is_run_of_its_request():
    kw = {"hardware": ["h100", "tpu-v4"], "batch": 1, "seq": 16}
    a = analyze("gpt2-block", **kw).to_dict()
    b = run(AnalyzeRequest.of("gpt2-block", **kw)).to_dict()
    assert a["hardware"] == b["hardware"] and a["totals"] == b["totals"]
