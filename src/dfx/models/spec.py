"""What a model resolves to: a :class:`ModelSpec`, plus the argument checks every entry point shares."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import torch

from dfx.errors import ModelSpecError
from dfx.ir.spec import DTYPE_ALIASES

__all__ = ["ModelSpec", "check_input_numel", "check_positive", "close_matches", "parse_dtype"]


@dataclass(frozen=True)
class ModelSpec:
    """A model ready to capture: ``capture(spec.model, spec.args, spec.kwargs)``.

    Parameters
    ----------
    name : str
        What the user asked for (``gpt2-block``, ``hf:llama-2-7b``, ``net.py:Net``).
    model : torch.nn.Module
        The module, in eval mode, with its parameters on ``device`` (meta by default: no memory).
    args : tuple of torch.Tensor
        Example positional inputs on the same device.
    kwargs : dict
        Example keyword inputs (empty for every built-in).
    description : str
        One line: what the model is, its dimensions and input shape.
    """

    name: str
    model: torch.nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""


# The float dtypes a model can be built in, by torch's name (every spelling of them goes through
# dfx.ir.spec.DTYPE_ALIASES, the one alias table).
_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """The float ``torch.dtype`` named by ``dtype`` (``"bf16"``, ``"float32"``, ``torch.float16``).

    Examples
    --------
    >>> parse_dtype("bf16")
    torch.bfloat16
    """
    if isinstance(dtype, torch.dtype):
        if not dtype.is_floating_point:
            raise ModelSpecError(f"dtype {dtype} is not a float dtype; use float32, bfloat16, float16 or float64")
        return dtype
    key = str(dtype).strip().lower().removeprefix("torch.")
    key = DTYPE_ALIASES.get(key, key)
    if key not in _DTYPES:
        raise ModelSpecError(f"unknown dtype {dtype!r}; use float32, bfloat16, float16 or float64")
    return _DTYPES[key]


def check_positive(**values: int | None) -> None:
    """Raise :class:`ModelSpecError` unless every given value is ``None`` or an int in 1 .. ``MAX_DIM``.

    ``MAX_DIM`` (2**31 - 1, :mod:`dfx.limits`) keeps a batch or length from overflowing torch's sizes.
    """
    from dfx.limits import MAX_DIM

    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ModelSpecError(f"{key} must be a positive integer, got {value!r}")
        if value > MAX_DIM:
            raise ModelSpecError(
                f"{key} {value:,} is above dfx's limit of {MAX_DIM:,} (2**31 - 1); give a smaller {key}"
            )


def check_input_numel(name: str, shape: tuple[int, ...]) -> None:
    """Raise :class:`ModelSpecError` when ``shape`` has more elements than int64 counts (torch cannot make it)."""
    from dfx.errors import DfxError
    from dfx.limits import check_numel

    try:
        check_numel(name, shape, fix="give a smaller batch, sequence or input shape")
    except DfxError as exc:
        raise ModelSpecError(str(exc)) from None


def check_tokens(batch: int, seq: int, *, seq_name: str = "seq") -> None:
    """Raise :class:`ModelSpecError` for a seq above 2**24 or batch x seq above 2**26 (:func:`dfx.limits.check_tokens`)."""
    from dfx.errors import DfxError
    from dfx.limits import check_tokens as check

    try:
        check(batch, seq, batch_name="batch", seq_name=seq_name)
    except DfxError as exc:
        raise ModelSpecError(str(exc)) from None


def close_matches(word: str, choices: list[str]) -> str:
    """``"; did you mean a, b?"`` for the choices close to ``word``, or ``""``."""
    near = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(near)}?" if near else ""
