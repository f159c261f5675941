"""``dfx systolic`` as a user meets it: JSON with the stable names, step frames, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", "systolic", *args], capture_output=True, text=True, timeout=300
    )


def test_json_for_a_gemm():
    result = dfx("--gemm", "4,3,3", "--array", "4x4", "--dataflow", "ws", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "dfx.systolic/1"
    assert (doc["compute_cycles"], doc["total_cycles"], doc["folds"]) == (14, 14, 1)  # 2*4 + 4 + 4 - 2


def test_conv_pb18_through_the_cli():
    result = dfx("--conv", "1,4,1,1,4,4,1", "--array", "4x4", "--dataflow", "os", "--json")
    doc = json.loads(result.stdout)
    assert (doc["compute_cycles"], doc["compute_cycles_with_drain"]) == (10, 14)


def test_the_console_shows_the_drain_count_and_its_meaning():
    # PB-18's conv layer (1x4 ifmap, 1x1 filter, 4 channels, 4 filters) on a 4x4 os array: 10 compute
    # cycles, R = 4 more to drain the outputs of its one fold, 14 with the drain (PB-18's count)
    result = dfx("--conv", "1,4,1,1,4,4,1", "--array", "4x4", "--dataflow", "os")
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 3:
            rows[cells[0]] = cells[1:]
    assert rows["compute_cycles"][0] == "10"
    assert rows["drain_cycles"][0] == "4"
    assert rows["compute_cycles_with_drain"] == ["14", "compute + drain (PB-18's count)"]


def test_steps_print_frames_and_animate(tmp_path):
    gif = tmp_path / "ws.gif"
    result = dfx("--gemm", "4,3,3", "--array", "4x4", "--dataflow", "ws", "--steps", "--animate", str(gif))
    assert result.returncode == 0, result.stderr
    assert "cycle 0  fold 0  load" in result.stdout and "cycles: 14" in result.stdout
    assert gif.exists() or gif.with_suffix(".png").exists()


def test_bad_values_are_one_line_errors():
    for args in (
        ["--gemm", "4,x,3"],
        ["--gemm", "4,3,3", "--array", "4by4"],
        ["--gemm", "4,3,3", "--dataflow", "xs"],
        ["--gemm", "4,3,3", "--sram-kb", "1,2"],
        [],
        ["--gemm", "4,3,3", "--bandwidth", "-2"],
    ):
        result = dfx(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in result.stderr, (args, result.stderr)
