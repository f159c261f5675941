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
    "MAX_SEQ",
    "MAX_TOKENS",
    "check_count",
    "check_finite",
    "check_numel",
    "check_size",
    "check_tokens",
]

# torch indexes tensors with int64: a shape whose element count exceeds this cannot exist at all.
INT64_MAX = 2**63 - 1
# The largest single dimension dfx accepts in a model config or a GEMM: kernels index with int32
# (2**31 - 1) and no published model has a dimension near it.
MAX_DIM = 2**31 - 1
# The longest sequence (--seq, a prompt plus its output, a KV cache) dfx accepts: 2**24 = 16,777,216
# tokens, 1.6x the longest published context window (Llama 4 Scout's 10M tokens; Meta, "The Llama 4
# herd", 2025-04-05). A (seq, seq) attention mask of that side is 2**48 elements; at 2**31 - 1 its
# bytes overflowed int64 inside torch, and that overflow was the whole message.
MAX_SEQ = 2**24
# The most tokens one pass may hold (batch x seq): 2**26 = 67,108,864, 4x the largest published
# training batch (Llama 3's 16M tokens; Llama 3 paper, 2024, section 3.4.1). With MAX_SEQ it bounds
# a materialised score tensor (batch x heads x seq x seq) by 2**50 x heads elements: within int64
# bytes for up to 128 heads at 8 bytes each (2**50 * 2**7 * 2**3 = 2**60).
MAX_TOKENS = 2**26


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


def check_tokens(batch: int | None, seq: int | None, *, batch_name: str = "--batch", seq_name: str = "--seq") -> None:
    """Refuse a ``seq`` above :data:`MAX_SEQ` and a ``batch x seq`` above :data:`MAX_TOKENS`.

    ``None`` is a size not given (the model's default, checked where it is known); a missing ``seq``
    counts as 1 token, so ``batch`` alone is held to :data:`MAX_TOKENS`. Non-positive values are
    left to the callers' own checks.

    Raises
    ------
    DfxError
        One line naming the value, the limit and the flag to lower.

    Examples
    --------
    >>> check_tokens(8, 4096)
    >>> check_tokens(1, 2**31 - 1)
    Traceback (most recent call last):
    ...
    dfx.errors.DfxError: --seq 2,147,483,647 is above dfx's limit of 16,777,216 tokens (2**24, ...); give a smaller --seq
    """
    if seq is not None and seq > MAX_SEQ:
        raise DfxError(
            f"{seq_name} {seq:,} is above dfx's limit of {MAX_SEQ:,} tokens (2**24, longer than any "
            f"published context window); give a smaller {seq_name}"
        )
    if batch is None:
        return
    if seq is None and batch > MAX_TOKENS:
        raise DfxError(
            f"{batch_name} {batch:,} is above dfx's limit of {MAX_TOKENS:,} (2**26 tokens per pass); "
            f"give a smaller {batch_name}"
        )
    if seq is not None and batch * seq > MAX_TOKENS:
        raise DfxError(
            f"{batch_name} {batch:,} x {seq_name} {seq:,} = {batch * seq:,} tokens is above dfx's limit of "
            f"{MAX_TOKENS:,} (2**26) per pass; give a smaller {batch_name} or {seq_name}"
        )


def _fix(fix: str) -> str:
    return f"; {fix}" if fix else ""
