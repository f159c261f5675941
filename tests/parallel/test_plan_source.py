"""What chose a split over chips is named as the user gave it (docs/parallel.md: --chips, --parallel, ...)."""

import subprocess
import sys

import dfx


def test_a_parallel_plan_says_it_came_from_parallel():
    # it said "split over chips chosen by given", where docs/parallel.md lists `--parallel`
    analysis = dfx.analyze("mlp", hardware=["h100"], parallel="tp=2", batch=2)
    doc = analysis.to_dict()
    assert doc["hardware"]["nvidia-h100-sxm"]["parallel"]["plan"]["source"] == "--parallel"


def test_cli_names_parallel_under_the_table():
    r = subprocess.run(
        [sys.executable, "-m", "dfx.cli", "analyze", "mlp", "--hw", "h100", "--parallel", "tp=2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "nvidia-h100-sxm: split over chips chosen by --parallel" in r.stdout
    assert "chosen by given" not in r.stdout
