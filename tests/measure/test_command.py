"""``dfx calibrate`` and ``dfx validate`` as a user meets them: files written, one-line errors, no traceback."""

import json
import os
import subprocess
import sys

import pytest

from dfx.hardware import load_profile


def dfx(*args: str) -> subprocess.CompletedProcess:
    # one thread, so a busy shared test machine cannot stall a second OpenMP worker (see test_calibrate)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300, env=env)


def _one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def profile_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "mine.yaml"
    result = dfx("calibrate", "--budget-s", "0.5", "--out", str(path))
    assert result.returncode == 0, result.stderr
    assert "peak float32" in result.stdout
    return path


def test_calibrate_writes_a_loadable_profile_and_refuses_to_overwrite(profile_path):
    assert load_profile(str(profile_path)).id == "host-cpu-calibrated"
    again = dfx("calibrate", "--budget-s", "0.5", "--out", str(profile_path))
    assert "already exists" in _one_line_error(again)


def test_validate_json_and_out(profile_path, tmp_path):
    result = dfx("validate", "mlp", "--hw", str(profile_path), "--repeat", "2", "--json", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "dfx.validation/1" and doc["hardware"] == "host-cpu-calibrated"
    assert doc["prediction"] == "roofline"  # without --calibration: exactly dfx analyze's figures
    assert {"name", "predicted_s", "measured_s", "ratio"} <= set(doc["nodes"][0])
    assert set(doc["end_to_end"]) == {"predicted_s", "measured_s", "error"}
    assert (tmp_path / "scatter.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "validation.json").read_text())["schema"] == "dfx.validation/1"


def test_cli_errors_are_one_line():
    assert "too big to run for real" in _one_line_error(dfx("validate", "llama-layer", "--seq", "4096"))
    assert "--repeat" in _one_line_error(dfx("validate", "mlp", "--repeat", "0"))
    assert "unknown hardware profile" in _one_line_error(dfx("validate", "mlp", "--hw", "nope-9000"))
    assert "expected cpu or cuda" in _one_line_error(dfx("calibrate", "--device", "tpu", "--budget-s", "0.1"))


def test_validate_with_a_calibration_document(tmp_path):
    cal = dfx("calibrate", "--budget-s", "0.5", "--json")
    assert cal.returncode == 0, cal.stderr
    path = tmp_path / "cal.json"
    path.write_text(cal.stdout)
    result = dfx("validate", "mlp", "--calibration", str(path), "--repeat", "2", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["hardware"] == "host-cpu-calibrated" and len(doc["run"]["gemm_curve"]) == 5  # the k = n = 512 column
    assert len(doc["run"]["calibration"]["gemm_table"]) == 45
    assert doc["prediction"] == "cache-aware"
    (tmp_path / "bad.json").write_text("{}")
    assert "not a dfx.calibration/1 document" in _one_line_error(dfx("validate", "mlp", "--calibration", str(tmp_path / "bad.json")))
