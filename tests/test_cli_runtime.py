"""``--runtime`` on the command line is the Python API's ``runtime=``, default included."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import dfx

HW = ("nvidia-a100-sxm-80gb", "nvidia-h100-sxm")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", "analyze", "mlp", *(a for h in HW for a in ("--hw", h)), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _times(doc: dict) -> dict:
    return {
        h: (r["makespan_s"], r["serial_time_s"], r["eager"]["makespan_s"], r.get("runtime"))
        for h, r in doc["hardware"].items()
    }


@pytest.mark.parametrize("runtime", [None, "back-to-back", "pytorch-eager-timed", "ideal"])
def test_cli_runtime_equals_the_api_runtime(runtime):
    result = _cli("--json", *(() if runtime is None else ("--runtime", runtime)))
    assert result.returncode == 0, result.stderr
    api = dfx.analyze("mlp", hardware=list(HW), runtime=runtime).to_dict()
    assert _times(json.loads(result.stdout)) == _times(api)
    named = runtime if runtime != "ideal" else None
    # the default is each profile's default runtime, back-to-back on both GPUs
    assert {r[3] for r in _times(api).values()} == {named if runtime is not None else "back-to-back"}


def test_runtimes_change_the_compiled_time_by_their_fixed_costs():
    # the mlp's 5 compiled kernels run one after another; pytorch-eager-timed and back-to-back share their
    # fractions and differ by their fixed cost per kernel, 20 - 1.5 = 18.5 us: 5 x 18.5 us = 92.5 us
    timed = dfx.analyze("mlp", hardware=["a100"], runtime="pytorch-eager-timed").hardware[0]
    queued = dfx.analyze("mlp", hardware=["a100"]).hardware[0]
    assert len(queued.program.kernels) == 5
    assert timed.latency_s - queued.latency_s == pytest.approx(5 * 18.5e-6)


def test_an_unknown_runtime_is_one_line_naming_the_known_ones():
    result = _cli("--runtime", "tensorrt")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "no runtime 'tensorrt'; its runtimes: back-to-back, pytorch-eager-timed, ideal" in result.stderr
