"""``dfx report`` as a user meets it: no torch, nothing of theirs overwritten, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

# Run the CLI in a fresh interpreter and report whether torch got imported along the way.
_RUN = """
import sys
from dfx.cli import main
sys.argv = ["dfx", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
sys.stderr.write("\\nTORCH_IMPORTED=%s\\n" % ("torch" in sys.modules))
sys.exit(code)
"""


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _RUN, "report", *args], capture_output=True, text=True, timeout=300)


def _saved(tmp_path, doc) -> str:
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_report_draws_everything_without_torch(tmp_path, mlp_doc):
    out = tmp_path / "pics"
    result = report(_saved(tmp_path, mlp_doc), "--out", str(out), "--level", "module", "--color-by", "spyre")
    assert result.returncode == 0, result.stderr
    assert "TORCH_IMPORTED=False" in result.stderr
    names = {p.name for p in out.iterdir()}
    assert {"dag.dot", "roofline.png", "roofline.svg", "report.html"} <= names
    assert "coloured by bound on ibm-spyre" in (out / "dag.dot").read_text()


def test_report_never_overwrites_without_force(tmp_path, mlp_doc):
    src = _saved(tmp_path, mlp_doc)
    out = tmp_path / "pics"
    out.mkdir()
    (out / "report.html").write_text("mine")
    refused = report(src, "--out", str(out))
    assert refused.returncode != 0
    assert "already exist" in refused.stderr and "--force" in refused.stderr
    assert (out / "report.html").read_text() == "mine"
    assert {p.name for p in out.iterdir()} == {"report.html"}  # nothing else written either
    forced = report(src, "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_unknown_profile_is_a_one_line_error(tmp_path, mlp_doc):
    result = report(_saved(tmp_path, mlp_doc), "--out", str(tmp_path / "p"), "--color-by", "tpu9")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("TORCH_IMPORTED")]
    assert len(lines) == 1 and "tpu9" in lines[0] and "nvidia-h100-sxm" in lines[0]


def test_not_an_export_document(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"schema": "dfx.graph/1"}))
    result = report(str(bad), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and "dfx.analysis/1" in result.stderr
