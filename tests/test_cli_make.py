"""The README's two commands, `make test` and `make demo`, need no root: no apt-get behind them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
@pytest.mark.parametrize("target", ["test", "demo", "lint"])
def test_readme_targets_install_no_system_package(target, tmp_path):
    # -n prints every command the target (and each prerequisite it would rebuild) runs, running none;
    # a fresh VENV path makes the venv's own recipe part of it
    dry = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True, timeout=60
    )
    assert dry.returncode == 0, dry.stderr
    assert "pip install" in dry.stdout  # the venv recipe is in the plan, so the check sees it
    assert "apt-get" not in dry.stdout and "install_system_deps" not in dry.stdout, dry.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_system_packages_are_an_explicit_target():
    dry = subprocess.run(["make", "-n", "-C", str(ROOT), "system-deps"], capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "install_system_deps.sh graphviz chromium" in dry.stdout
