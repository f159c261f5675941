"""The CI's guard rails fail the run when broken: ``make lint`` (ruff's lint rules and its formatter's
check) runs before the tests and exits non-zero on a lint error or on code ``ruff format`` would change."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


def test_ci_lints_before_it_tests():
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "set -euo pipefail" in steps  # a failing step ends the run
    assert steps.index("make lint") < steps.index("make test")


def _lint_copy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """`make lint` in a copy of the Makefile and pyproject.toml holding one module, ``source``."""
    tmp_path.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(source)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "ruff").symlink_to(RUFF)
    (venv / ".installed").touch()  # newer than pyproject.toml: make does not rebuild the venv
    return subprocess.run(["make", "-s", "lint", f"VENV={venv}"], cwd=tmp_path, capture_output=True, text=True)


@pytest.mark.skipif(RUFF is None or shutil.which("make") is None, reason="needs ruff and make")
def test_make_lint_fails_on_a_lint_error_and_passes_clean_code(tmp_path):
    broken = _lint_copy(tmp_path / "broken", "import os\n")
    assert broken.returncode != 0 and "F401" in broken.stdout  # `os` imported but unused
    clean = _lint_copy(tmp_path / "clean", "import os\n\nprint(os.sep)\n")
    assert clean.returncode == 0, clean.stdout + clean.stderr


@pytest.mark.skipif(RUFF is None or shutil.which("make") is None, reason="needs ruff and make")
def test_make_lint_fails_on_code_the_formatter_would_change(tmp_path):
    # clean for the lint rules, but black's style wants spaces after the commas: "would reformat"
    unformatted = _lint_copy(tmp_path / "unformatted", "print(1,2)\n")
    assert unformatted.returncode != 0 and "m.py" in unformatted.stdout + unformatted.stderr
    formatted = _lint_copy(tmp_path / "formatted", "print(1, 2)\n")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


@pytest.mark.skipif(RUFF is None, reason="needs ruff")
def test_the_tree_passes_the_lint_rules():
    proc = subprocess.run([RUFF, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.skipif(RUFF is None, reason="needs ruff")
def test_the_tree_is_formatted():
    proc = subprocess.run([RUFF, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout  # `make format` rewrites the files listed
