"""The SCALE-Sim fixture: its own venv (scalesim 3.0.0 needs numpy 1.26), or a skip saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from scalesim_env import ScaleSimUnavailable, scalesim_python  # noqa: E402


@pytest.fixture(scope="session")
def scalesim_py() -> Path:
    try:
        return scalesim_python()
    except ScaleSimUnavailable as exc:
        pytest.skip(f"SCALE-Sim live comparison skipped: {exc}")
