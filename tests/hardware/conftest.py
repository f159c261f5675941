"""Fixtures for the hardware-profile tests: a shipped profile's raw data, and a way to save one."""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml


@pytest.fixture
def h100_data() -> dict[str, Any]:
    """The shipped H100 profile as written (units as strings), a fresh copy per test."""
    text = (resources.files("dfx.hardware") / "profiles" / "nvidia-h100-sxm.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yaml.safe_load(text))


@pytest.fixture
def write_profile(tmp_path: Path) -> Callable[[Any, str], Path]:
    """Save data as a profile file in tmp_path and return its path."""

    def write(data: Any, name: str = "mine.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    return write
