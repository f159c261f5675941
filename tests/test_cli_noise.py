"""Noise: a dtype fallback is said once, and only where it changed a time; `hw list` names each peak's dtype."""

from __future__ import annotations

from dfx.hardware import load_profile
from tests.hostile._runner import run_main


def test_a_fallback_that_changed_times_is_one_line(tmp_path):
    spyre = load_profile("ibm-spyre")
    assert "bfloat16" not in spyre.peak_flop_per_s  # so its bf16 GEMMs are timed at another dtype's peak
    run = run_main(["analyze", "gpt2-block"], tmp_path)  # the H100 and Spyre, bf16
    assert run.rc == 0, run.err
    text = run.out + run.err
    lines = [line for line in text.splitlines() if "peak" in line and "timed at" in line]
    assert len(lines) == 1, lines
    assert "ibm-spyre bfloat16 at its float16 peak" in lines[0]
    assert "int64" not in text and "lists no" not in text


def test_no_fallback_line_where_the_profile_lists_the_peak(tmp_path):
    assert "bfloat16" in load_profile("h100").peak_flop_per_s
    run = run_main(["analyze", "gpt2-block", "--hw", "h100"], tmp_path)
    assert run.rc == 0, run.err
    assert "timed at" not in run.out + run.err


def test_hw_list_names_the_dtype_of_a_peak_that_is_not_bf16(tmp_path):
    run = run_main(["hw", "list"], tmp_path)
    assert run.rc == 0, run.err
    rows = {line.split("│")[1].strip(): line for line in run.out.splitlines() if line.startswith("│")}
    for hw_id in ("groq-lpu", "ibm-spyre", "nvidia-h100-sxm"):
        listed = "bfloat16" in load_profile(hw_id).peak_flop_per_s
        assert ("float16" in rows[hw_id]) is (not listed), rows[hw_id]
