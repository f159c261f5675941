"""SCALE-Sim in its own virtual environment, for the live comparison, the golden file and the benchmark.

scalesim 3.0.0 fails on numpy 2 (issue 7), so it never enters dfx's environment: a venv with
``scalesim==3.0.0`` and ``numpy==1.26.*`` is made once under ``$DFX_SCALESIM_HOME`` (default
``~/.cache/dfx/scalesim-3.0.0-py3X``), reused while its marker file exists, and
``scalesim_harness.py`` runs in it in a subprocess. ``DFX_SCALESIM_PYTHON`` names an existing
interpreter that has scalesim instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["SCALESIM_VERSION", "ScaleSimUnavailable", "run_scalesim", "scalesim_python"]

SCALESIM_VERSION = "3.0.0"
_HARNESS = Path(__file__).with_name("scalesim_harness.py")
_MARKER = "dfx-ready"
_INSTALL_TIMEOUT_S = 900


class ScaleSimUnavailable(RuntimeError):
    """SCALE-Sim could not be installed or run here; the message says why (one line)."""


def _home() -> Path:
    tag = f"scalesim-{SCALESIM_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    root = os.environ.get("DFX_SCALESIM_HOME") or Path.home() / ".cache" / "dfx"
    return Path(root) / tag


def scalesim_python() -> Path:
    """The interpreter of SCALE-Sim's venv, creating the venv on first use."""
    given = os.environ.get("DFX_SCALESIM_PYTHON")
    if given:
        return Path(given)
    home = _home()
    python = home / "bin" / "python"
    if (home / _MARKER).exists():
        return python
    base = shutil.which("python3") or sys.executable
    tmp = home.with_name(home.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        subprocess.run([base, "-m", "venv", str(tmp)], check=True, capture_output=True, timeout=120)
        subprocess.run(
            [
                str(tmp / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                f"scalesim=={SCALESIM_VERSION}",
                "numpy==1.26.*",
            ],
            check=True,
            capture_output=True,
            timeout=_INSTALL_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        detail = getattr(exc, "stderr", b"") or b""
        last = detail.decode(errors="replace").strip().splitlines()[-1:] or [str(exc)]
        raise ScaleSimUnavailable(f"cannot install scalesim=={SCALESIM_VERSION} with numpy 1.26: {last[0]}") from None
    (tmp / _MARKER).write_text(SCALESIM_VERSION)
    if home.exists():  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(home)
    # the venv's scripts hold the tmp path, but ``python -m`` and the harness need none of them
    return python


def run_scalesim(cases: list[dict], python: Path | None = None, timeout_s: float = 1800) -> list[dict]:
    """SCALE-Sim's numbers for each case (see ``scalesim_harness.py`` for the case format)."""
    python = python or scalesim_python()
    try:
        done = subprocess.run(
            [str(python), str(_HARNESS)],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        tail = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()[-1:]
        raise ScaleSimUnavailable(f"SCALE-Sim run failed: {tail[0] if tail else exc}") from None
    return json.loads(done.stdout)
