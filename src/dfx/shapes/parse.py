"""Parse what a user types: integer lists, input shapes with an optional dtype, dynamic-dim marks.

Torch-free; every failure is a one-line :class:`~dfx.errors.DfxError` naming the option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dfx.errors import DfxError

__all__ = ["InputSpec", "DynamicDim", "parse_int_list", "parse_input_spec", "parse_dynamic", "read_lengths"]


@dataclass(frozen=True)
class InputSpec:
    """A positional input's shape and, optionally, its dtype name (``None``: the example's dtype)."""

    shape: tuple[int, ...]
    dtype: str | None = None

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class DynamicDim:
    """Dimension ``dim`` of input ``input`` (a parameter name or a positional index) marked dynamic."""

    input: str
    dim: int


def parse_int_list(text: str, option: str) -> tuple[int, ...]:
    """``"128,256,512"`` -> ``(128, 256, 512)``; a :class:`DfxError` for anything else.

    Examples
    --------
    >>> parse_int_list("128, 256", "--buckets")
    (128, 256)
    """
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise DfxError(f"bad {option} {text!r}; expected comma-separated integers such as 128,256,512") from None


def parse_input_spec(text: str, option: str = "--check") -> InputSpec:
    """``"2,128,64"`` or ``"2,128,64:float64"`` -> :class:`InputSpec`.

    Examples
    --------
    >>> parse_input_spec("2,8:bf16")
    InputSpec(shape=(2, 8), dtype='bf16')
    """
    shape_text, _, dtype = str(text).partition(":")
    dims = tuple(d for d in re.split(r"[,x]", shape_text.strip()) if d.strip())
    try:
        shape = tuple(int(d) for d in dims)
    except ValueError:
        raise DfxError(f"bad {option} {text!r}; expected a shape such as 2,128,64 or 2,128,64:float16") from None
    if any(d < 0 for d in shape):
        raise DfxError(f"bad {option} {text!r}; dimensions must be integers >= 0")
    return InputSpec(shape, dtype.strip() or None)


def parse_dynamic(text: str) -> DynamicDim:
    """``"x:1"`` (input ``x``, dim 1) or ``"0:1"`` (first positional input, dim 1) -> :class:`DynamicDim`.

    Examples
    --------
    >>> parse_dynamic("x:1")
    DynamicDim(input='x', dim=1)
    """
    name, sep, dim = str(text).rpartition(":")
    if not sep or not name.strip():
        raise DfxError(
            f"bad --dynamic {text!r}; expected INPUT:DIM such as x:1 (input name or index, then a dimension)"
        )
    try:
        return DynamicDim(name.strip(), int(dim))
    except ValueError:
        raise DfxError(f"bad --dynamic {text!r}; the dimension after ':' must be an integer") from None


# A lengths file of a million 10-digit lines is 11 MB; larger files are refused before reading.
MAX_LENGTHS_FILE_BYTES = 64 * 2**20


def read_lengths(path: str | Path) -> tuple[int, ...]:
    """Read a lengths file: one integer a line; blank lines and ``#`` comments are skipped."""
    p = Path(path)
    try:
        if p.is_file() and p.stat().st_size > MAX_LENGTHS_FILE_BYTES:
            raise DfxError(
                f"--lengths {p} is {p.stat().st_size:,} bytes, beyond dfx's budget of "
                f"{MAX_LENGTHS_FILE_BYTES:,}; give a sample of the lengths"
            )
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DfxError(f"cannot read --lengths {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DfxError(
            f"--lengths {p} is not a text file (byte {exc.start} is not UTF-8); give one integer a line"
        ) from None
    out = []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            out.append(int(text))
        except ValueError:
            raise DfxError(f"{p}:{number}: {text[:40]!r} is not an integer length; write one integer a line") from None
    return tuple(out)
