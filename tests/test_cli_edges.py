"""The rough edges a newcomer met (issue 36), each with the message or number it now gives."""

from __future__ import annotations

import copy
import json
import re

import pytest

from tests.hostile._runner import run_main


def _error(run) -> str:
    assert run.rc != 0 and "Traceback" not in run.err and "internal error" not in run.err, run.err
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1, run.err
    return lines[0]


def test_tile_times_are_in_dfx_units(tmp_path):
    run = run_main(["tile", "--gemm", "4096,4096,4096", "--hw", "spyre"], tmp_path)
    assert run.rc == 0, run.err
    assert not re.search(r"\d\.\d\dus\b", run.out), run.out  # 229288.62us was the old way
    # 2 * 4096^3 = 137.4 GFLOP at Spyre's 75 TFLOP/s fp16 peak is at least 1.83 ms: milliseconds, not a us count
    assert re.search(r"\b\d+(\.\d+)? ms\b", run.out), run.out


def test_a_phase_header_names_the_step_not_seq_1(tmp_path):
    run = run_main(
        ["analyze", "hf:gpt2", "--phase", "generate", "--prompt-len", "16", "--output-len", "4", "--hw", "h100"],
        tmp_path,
    )
    assert run.rc == 0, run.err
    head = run.out.splitlines()[0]
    assert "seq=1" not in head and "phase=generate" in head and "decode step" in head, head


def test_a_repeated_layers_copy_is_shown_by_its_module_path():
    from dfx.report.console import readable_name

    assert readable_name("linear_13__L2", "model.layers.2.mlp.down_proj") == (
        "model.layers.2.mlp.down_proj (copy of linear_13)"
    )
    assert readable_name("linear__L10") == "linear (layer 10)"
    assert readable_name("add__Lx") == "add__Lx"  # not a copy's name


def test_a_decode_of_a_deep_model_lists_no_raw_copy_names(tmp_path):
    run = run_main(["analyze", "hf:llama-2-7b", "--phase", "decode", "--kv-len", "64", "--hw", "h100"], tmp_path)
    assert run.rc == 0, run.err
    assert "__L" not in run.out


def test_casestudy_says_which_tpu_time_is_which(tmp_path):
    run = run_main(["casestudy", "attention"], tmp_path)
    assert run.rc == 0, run.err
    assert "FlashAttention as one fused kernel" in run.out
    assert "makespan of the compiled program" in run.out
    assert not re.search(r"makespan [\d,.]+ us", run.out)


@pytest.mark.parametrize(("name", "near"), [("llama3-8b", "hf:llama-3-8b"), ("gpt2", "hf:gpt2")])
def test_an_unknown_model_suggests_the_shipped_hf_config(tmp_path, name, near):
    line = _error(run_main(["analyze", name, "--hw", "h100"], tmp_path))
    assert f"did you mean {near}" in line, line


def test_to_pandas_without_pandas_names_the_extra(monkeypatch):
    import builtins

    import dfx
    from dfx.errors import DfxError

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real(name, *args, **kwargs)

    analysis = dfx.analyze("mlp", hardware=[])
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(DfxError, match=r"dfx\[pandas\]"):
        analysis.to_pandas()


def test_a_model_path_that_is_a_folder_says_so(tmp_path):
    (tmp_path / "net.py").mkdir()
    (tmp_path / "models").mkdir()
    assert "is a folder" in _error(run_main(["analyze", "net.py:Net", "--hw", "h100"], tmp_path))
    assert "names the folder 'models'" in _error(run_main(["analyze", "models", "--hw", "h100"], tmp_path))


def test_a_text_file_given_as_a_model_is_told_what_a_model_is(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model\n")
    for args in (["notes.txt"], ["notes.txt:Net", "--input-shape", "2,3"]):
        line = _error(run_main(["analyze", *args, "--hw", "h100"], tmp_path))
        assert "not a Python file" in line and "--input-shape" not in line, line


def test_systolic_with_a_negative_seed_is_one_line(tmp_path):
    line = _error(run_main(["systolic", "--gemm", "2,2,2", "--array", "2x2", "--steps", "--seed", "-1"], tmp_path))
    assert "--seed" in line and "-1" in line


def test_an_older_calibration_is_told_it_is_older_and_how_to_recalibrate(tmp_path):
    from tests.schema.test_calibration_schema import DOC

    old = copy.deepcopy(DOC)
    del old["threads"]  # a header key this dfx records and an older one did not
    (tmp_path / "old.json").write_text(json.dumps(old))
    line = _error(run_main(["validate", "mlp", "--calibration", "old.json"], tmp_path))
    assert "older dfx" in line and "dfx calibrate" in line and "threads" in line, line
