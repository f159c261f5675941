"""``dfx serve`` as a user meets it: bad input is one line and a non-zero exit, before any pricing."""

from __future__ import annotations

import subprocess
import sys

import pytest


def dfx(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rate", "0"], "--rate 0.0: a request rate must be a positive number"),
        (["--rate", "fast"], "bad --rate 'fast'"),
        (["--input-len", "12:3"], "needs LO <= HI"),
        (["--output-len", "file:/no/such/lengths.txt"], "no such file"),
        (["--scheduler", "fifo"], "unknown --scheduler 'fifo'"),
        (["--slo", "speed=3"], "bad --slo"),
        (["--hw", "no-such-machine"], "no-such-machine"),
        (["--speculative", "4"], "--speculative '4'"),
    ],
)
def test_bad_input_is_one_line(args, message):
    result = dfx("serve", "hf:llama-2-7b", *args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_out_refuses_a_users_file_without_force(tmp_path):
    (tmp_path / "serving.json").write_text("mine")
    result = dfx("serve", "hf:llama-2-7b", "--out", str(tmp_path))
    assert result.returncode != 0
    assert "serving.json already exists" in result.stderr
    assert (tmp_path / "serving.json").read_text() == "mine"


def test_stderr_in_a_pipe_holds_only_the_refusal_or_nothing():
    # the transient spinner, shown in a pipe too, left a blank line on stderr: "\nerror: ..." for a
    # refusal, and "\n" alone after a clean run
    refused = dfx("serve", "gpt2-block", "--hw", "h100", "--rate", "0")
    assert refused.returncode == 2 and refused.stderr.startswith("error: --rate 0.0: "), repr(refused.stderr)
    assert refused.stderr.count("\n") == 1
    served = dfx("serve", "gpt2-block", "--hw", "h100", "--rate", "4", "--requests", "5", "--json")
    assert served.returncode == 0 and served.stderr == "", repr(served.stderr)
