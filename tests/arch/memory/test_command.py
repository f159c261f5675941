"""The commands as a user meets them: JSON keys of the export, text reports, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dfx.cli import app
from dfx.errors import DfxError

runner = CliRunner()


def _json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_tile_gemm_json():
    doc = _json("tile", "--gemm", "1024,1024,1024", "--hw", "ibm-spyre")
    (mm,) = doc["matmuls"]
    for key in ("tile", "working_set_bytes", "scratchpad_bytes", "offchip_bytes", "intensity", "time_s"):
        assert key in mm
    assert set(mm["tile"]) == {"tm", "tn", "tk"} and mm["working_set_bytes"] <= mm["scratchpad_bytes"] == 2e6
    no_db = _json("tile", "--gemm", "1024,1024,1024", "--hw", "ibm-spyre", "--no-double-buffer")
    assert no_db["double_buffer"] is False


def test_capacity_70b_on_groq_json():
    doc = _json("capacity", "hf:llama-2-70b", "--hw", "groq-lpu", "--seq", "8")
    assert doc["parameter_count"] == 68_976_648_192 and doc["parameter_bytes"] == 2 * 68_976_648_192
    assert doc["chips_needed"] == 599 and doc["fits_on_chip"] is False
    assert doc["kv_cache_bytes"] == 2 * 80 * 8 * 8 * 128 * 2  # 8 tokens, 8 KV heads
    assert doc["onchip_capacity_bytes"] == 220 * 2**20 and doc["activation_bytes"] > 0


def test_energy_json_and_text():
    doc = _json("energy", "mlp", "--hw", "ibm-spyre")
    assert {"eager", "dataflow", "ratio"} <= set(doc)
    assert doc["eager"]["total_j"] > doc["dataflow"]["total_j"] > 0
    assert doc["ratio"] == pytest.approx(doc["eager"]["total_j"] / doc["dataflow"]["total_j"])
    text = runner.invoke(app, ["energy", "mlp", "--hw", "ibm-spyre"]).stdout
    assert "ratio eager / dataflow" in text and "45 nm" in text


def test_casestudy_attention_report():
    result = runner.invoke(app, ["casestudy", "attention", "--seq", "2048"])
    assert result.exit_code == 0, result.output
    assert "## ibm-spyre" in result.stdout and "## google-tpu-v4" in result.stdout
    assert "Why they differ" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["tile", "--hw", "spyre"],
        ["capacity", "--hw", "nope"],
        ["casestudy", "attention", "--seq", "0"],
        ["energy", "mlp", "--hw", "spyre", "--dtype", "int3"],
    ],
)
def test_bad_input_raises_a_one_line_dfx_error(args):
    result = runner.invoke(app, args)
    assert isinstance(result.exception, DfxError), result.output
    assert "\n" not in str(result.exception)


def test_bad_input_is_one_line_on_stderr_with_exit_2():
    args = ["tile", "--gemm", "1,2", "--hw", "spyre"]
    result = subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr and "--gemm" in lines[0], result.stderr
