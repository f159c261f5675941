"""Budgets every command shares: sizes refused before work starts, with a message naming the value.

Each limit is a named constant with its reason. The checks are pure functions of numbers (no torch),
so the CLI's torch-free commands use them too.
"""

from __future__ import annotations

import math
from typing import Iterable

from dfx.errors import DfxError

__all__ = [
    "INT64_MAX",
    "MAX_DIM",
    "check_count",
    "check_finite",
    "check_numel",
    "check_size",
]

# torch indexes tensors with int64: a shape whose element count exceeds this cannot exist at all.
INT64_MAX = 2**63 - 1
# The largest single dimension dfx accepts in a model config or a GEMM: kernels index with int32
# (2**31 - 1) and no published model has a dimension near it.
MAX_DIM = 2**31 - 1


def check_size(name: str, value, *, limit: int = MAX_DIM, fix: str = "") -> int:
    """``value`` as an int, if it is a positive integer no larger than ``limit``.

    Raises
    ------
    DfxError
        A bool, a float (``2.5``, ``1e400``), a string, zero, a negative number or one above ``limit``.

    Examples
    --------
    >>> check_size("hidden_size", 64)
    64
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise DfxError(f"{name} must be a positive integer, got {value!r}{_fix(fix)}")
    if value <= 0:
        raise DfxError(f"{name} must be a positive integer, got {value}{_fix(fix)}")
    if value > limit:
        raise DfxError(f"{name} {value:,} is above dfx's limit of {limit:,}{_fix(fix)}")
    return value


def check_count(name: str, value: int, limit: int, *, unit: str = "", fix: str = "") -> int:
    """``value`` if it is at most ``limit`` (a work budget: PEs, runs, samples, layers).

    Raises
    ------
    DfxError
        When ``value`` exceeds ``limit``, naming both.
    """
    if value > limit:
        what = f" {unit}" if unit else ""
        raise DfxError(f"{name} {value:,} is beyond dfx's budget of {limit:,}{what}{_fix(fix)}")
    return value


def check_finite(
    name: str, value: float, *, low: float | None = None, high: float | None = None, fix: str = ""
) -> float:
    """``value`` if it is a finite number within ``[low, high]``.

    Raises
    ------
    DfxError
        NaN, an infinity, or a value outside the range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DfxError(f"{name} must be a finite number, got {value!r}{_fix(fix)}")
    if low is not None and value < low or high is not None and value > high:
        span = (
            f"between {low:g} and {high:g}"
            if low is not None and high is not None
            else (f"at least {low:g}" if low is not None else f"at most {high:g}")
        )
        raise DfxError(f"{name} must be {span}, got {value:g}{_fix(fix)}")
    return float(value)


def check_numel(name: str, shape: Iterable[int], *, fix: str = "give smaller sizes") -> int:
    """The element count of ``shape``, refusing one that overflows int64 (torch cannot hold it).

    Raises
    ------
    DfxError
        When the product of the dimensions exceeds :data:`INT64_MAX`.

    Examples
    --------
    >>> check_numel("input", (2, 3, 4))
    24
    """
    dims = tuple(shape)
    numel = math.prod(dims)
    if numel > INT64_MAX:
        shown = "x".join(str(d) for d in dims)
        raise DfxError(f"{name} {shown} has {numel:.3g} elements, more than int64 can count (2**63 - 1); {fix}")
    return numel


def _fix(fix: str) -> str:
    return f"; {fix}" if fix else ""
