"""Progress on stderr: a status line on a terminal, nothing at all anywhere else."""

from __future__ import annotations

import io

from dfx.report.progress import progress_on_stderr, step, with_progress
from tests.hostile._runner import run_main


def test_steps_show_on_a_terminal_and_nowhere_else():
    shown = io.StringIO()
    with progress_on_stderr("dfx analyze mlp", stream=shown, force=True):
        step("capturing mlp")
        step("compiling and evaluating on nvidia-h100-sxm")
    assert "capturing mlp" in shown.getvalue() or "evaluating on nvidia-h100-sxm" in shown.getvalue()
    piped = io.StringIO()  # not a terminal: the status line is never drawn
    with progress_on_stderr("dfx analyze mlp", stream=piped):
        step("capturing mlp")
    assert piped.getvalue() == ""
    step("outside any status line")  # a no-op, not an error


def test_with_progress_returns_the_result_and_raises_the_error():
    assert with_progress("t", lambda a, b=0: a + b)(2, b=3) == 5
    try:
        with_progress("t", lambda: 1 / 0)()
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("the error was swallowed")


def test_analyze_piped_writes_no_progress(tmp_path):
    run = run_main(["analyze", "mlp", "--hw", "h100"], tmp_path)
    assert run.rc == 0, run.err
    assert "capturing" not in run.err and "evaluating" not in run.err
