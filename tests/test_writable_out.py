"""An --out no file can be written into is refused before the work, not after it."""

import os
import subprocess
import sys

import pytest

from dfx.errors import DfxError
from dfx.report.files import check_targets, check_writable


def test_a_missing_nested_folder_is_fine_and_nothing_is_left(tmp_path):
    out = tmp_path / "a" / "b"
    assert check_targets(out, ["x.json"]) == [out / "x.json"]
    assert os.listdir(tmp_path) == []  # the probe file is gone and no folder was made


def test_a_file_in_the_way_is_named(tmp_path):
    (tmp_path / "f").write_text("mine")
    with pytest.raises(
        DfxError,
        match=r"cannot write into --out .*f/sub: .*f is a file, not a folder; choose a folder you can write to",
    ):
        check_writable(tmp_path / "f" / "sub")
    assert (tmp_path / "f").read_text() == "mine"


def test_a_read_only_folder_is_refused(tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # a read-only mount (these tests may run as root)
    with pytest.raises(
        DfxError, match=r"cannot write into --out .*: Permission denied; choose a folder you can write to$"
    ):
        check_targets(tmp_path / "out", ["analysis.json"])


def _analyze_marked_model(tmp_path, *options: str):
    """``dfx analyze`` of a model file that leaves a mark when it is imported, with ``options``:
    the finished process and the mark's path (a refusal before the work leaves no mark)."""
    model = tmp_path / "net.py"
    mark = tmp_path / "imported"
    model.write_text(
        f"import pathlib, torch\npathlib.Path({str(mark)!r}).touch()\nNet = lambda: torch.nn.Linear(4, 4)\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "dfx.cli", "analyze", f"{model}:Net", "--input-shape", "2,4", *options],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return r, mark


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_cli_refuses_proc_before_loading_the_model(tmp_path):
    # `dfx calibrate --out /proc/x.yaml` measured for 45 s before it could not write; analyze captured
    # first. The model file leaves a mark when it is imported: the refusal must come before.
    r, mark = _analyze_marked_model(tmp_path, "--out", "/proc/dfx-out")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: cannot write into --out /proc/dfx-out: ")
    assert not mark.exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_cli_refuses_a_trace_in_proc_before_loading_the_model(tmp_path):
    # `dfx analyze ... --trace /proc/t.json` passed the file checks (/proc exists, t.json does not),
    # ran the whole analysis (12.8 s for hf:llama-2-7b), then failed to write, naming --out.
    r, mark = _analyze_marked_model(tmp_path, "--trace", "/proc/dfx-t.json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: cannot write into --trace /proc: "), r.stderr
    assert not mark.exists()


def test_a_trace_under_a_file_says_the_file_is_in_the_way(tmp_path):
    from dfx.report.files import check_target_file

    (tmp_path / "f").write_text("mine")
    with pytest.raises(DfxError, match=r"--trace .*f/t.json: '.*f' is a file, not a folder; choose another path"):
        check_target_file(tmp_path / "f" / "t.json", "--trace")
    assert (tmp_path / "f").read_text() == "mine"
