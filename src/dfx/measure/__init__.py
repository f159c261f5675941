"""Measure this machine and compare dfx's predictions with real runs (``dfx calibrate``, ``dfx validate``).

This package imports torch (with :mod:`dfx.capture` and :mod:`dfx.models`), but only when one of
its names is used: importing ``dfx.measure`` (as the CLI does to register its commands) is free.

>>> from dfx.measure import compare
>>> compare({"a": 2.0}, {"a": 1.0}, 1.0).nodes[0].ratio
2.0
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Calibration", "Validation", "calibrate", "cache_timer", "compare", "validate"]

_WHERE = {
    "Calibration": "dfx.measure.calibrate",
    "calibrate": "dfx.measure.calibrate",
    "Validation": "dfx.measure.compare",
    "compare": "dfx.measure.compare",
    "cache_timer": "dfx.measure.cache_model",
    "validate": "dfx.measure.validate",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'dfx.measure' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
