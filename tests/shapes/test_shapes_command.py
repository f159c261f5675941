"""The CLI as a user runs it: one-line errors with a non-zero exit, JSON documents, --out files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _dfx(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.fixture
def lengths_file(tmp_path):
    p = tmp_path / "lengths.txt"
    p.write_text("100\n130\n# a comment\n300\n512\n")
    return p


def test_buckets_json_and_out(lengths_file, tmp_path):
    r = _dfx(
        "buckets", "--lengths", str(lengths_file), "--buckets", "128,256,512", "--json", "--out", str(tmp_path / "o")
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["schema"], doc["padded_tokens"], doc["waste_tokens"], doc["graphs"]) == ("dfx.buckets/1", 1408, 366, 3)
    assert (tmp_path / "o" / "waste.svg").read_text().lstrip().startswith("<?xml")
    again = _dfx("buckets", "--lengths", str(lengths_file), "--buckets", "128,256,512", "--out", str(tmp_path / "o"))
    assert again.returncode != 0 and "--force" in again.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--buckets", "256,128"),  # unsorted
        ("--buckets", ""),  # empty
        ("--buckets", "128", "--overflow", "error"),  # 300 and 512 exceed 128
    ],
)
def test_buckets_bad_input_one_line(lengths_file, args):
    r = _dfx("buckets", "--lengths", str(lengths_file), *args)
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("extra", [("--dist", "gauss:1:2"), ("--lengths", "MISSING")])
def test_buckets_bad_source_one_line(tmp_path, extra):
    bad = tmp_path / "bad.txt"
    bad.write_text("5\n-2\n")
    args = ("--lengths", str(bad)) if extra[1] == "MISSING" else extra
    r = _dfx("buckets", *args, "--ladder", "pow2")
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_guards_cli_check(tmp_path):
    (tmp_path / "net.py").write_text(
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2 if x.shape[1] > 100 else x + 1\n"
    )
    r = _dfx(
        "guards",
        f"{tmp_path / 'net.py'}:Net",
        "--input-shape",
        "2,128,4",
        "--dynamic",
        "x:1",
        "--check",
        "2,50,4",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "dfx.guards/1" and doc["check"]["passes"] is False
    assert doc["check"]["failed"] == ["101 <= L['args'][0].size()[1]"]
    bad = _dfx("guards", f"{tmp_path / 'net.py'}:Net", "--input-shape", "2,128,4", "--dynamic", "z:1")
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_shapes_import_is_torch_free():
    code = "import sys, dfx.shapes, dfx.shapes.command; print('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stderr


def test_buckets_text_output(lengths_file):
    r = _dfx("buckets", "--lengths", str(lengths_file), "--buckets", "128,512", "--overflow", "split")
    assert r.returncode == 0, r.stderr
    # 100 -> 128; 130, 300, 512 -> 512: padded 128 + 3 * 512 = 1664, waste 1664 - 1042 = 622
    assert "waste 622 tokens" in r.stdout and "2 graphs to compile" in r.stdout
