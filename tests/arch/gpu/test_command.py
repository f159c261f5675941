"""dfx triton from the command line: the JSON fields the issue lists, the picture, one-line errors."""

import json
import subprocess
import sys


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


def test_gemm_json_has_the_issue_fields():
    r = dfx(
        "triton",
        "--gemm",
        "4096,4096,4096",
        "--hw",
        "nvidia-h100-sxm",
        "--block",
        "128,128,64",
        "--stages",
        "5",
        "--warps",
        "8",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "dfx.triton/1"
    # 32 x 32 programs of one 128x128 tile; 1 per SM (shared memory); ceil(1024 / 132) = 8 waves
    assert doc["grid"] == [32, 32, 1] and doc["programs"] == 1024
    assert doc["warps_per_program"] == 8 and doc["occupancy_blocks_per_sm"] == 1 and doc["waves"] == 8
    assert doc["occupancy_limited_by"] == ["shared_memory"]
    assert doc["time_s"] > 2 * 4096**3 / 989.4e12


def test_default_gemm_reductions_pointwise_and_picture(tmp_path):
    r = dfx("triton", "--gemm", "4096,4096,4096", "--hw", "nvidia-h100-sxm", "--json")
    assert r.returncode == 0, r.stderr
    assert {"grid", "programs", "warps_per_program", "occupancy_blocks_per_sm", "waves", "time_s"} <= set(
        json.loads(r.stdout)
    )
    for args in (["--pointwise", "1000000"], ["--reduction", "4096,4096"], ["--reduction", "32768,128"]):
        r = dfx("triton", *args)
        assert r.returncode == 0 and "occupancy" in r.stdout, r.stderr
    r = dfx("triton", "--gemm", "1000,512,300", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "contrast.png").stat().st_size > 10_000
    doc = json.loads((tmp_path / "triton.json").read_text())
    assert set(doc["contrast"]) == {"gpu", "tpu", "spyre"}


def test_bad_input_is_one_line():
    for args in (
        ["--gemm", "4096,4096"],
        ["--gemm", "64,64,64", "--hw", "google-tpu-v4"],
        ["--pointwise", "10", "--gemm", "1,1,1"],
        ["--gemm", "64,64,64", "--block", "256,256,128", "--stages", "4"],
    ):
        r = dfx("triton", *args)
        assert r.returncode == 2, (args, r.stderr)
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
