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

__all__ = [
    "Calibration",
    "Measured",
    "Validation",
    "cache_timer",
    "calibrate",
    "compare",
    "measure",
    "predict",
    "validate",
]

_WHERE = {
    "Calibration": "dfx.measure.calibration",
    "calibrate": "dfx.measure.calibration",
    "Validation": "dfx.measure.comparison",
    "compare": "dfx.measure.comparison",
    "cache_timer": "dfx.measure.cache_model",
    "validate": "dfx.measure.validation",
    "measure": "dfx.measure.validation",
    "predict": "dfx.measure.validation",
    "Measured": "dfx.measure.validation",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'dfx.measure' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
