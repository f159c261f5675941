"""One string to a :class:`ModelSpec`: a built-in name, ``path/to/file.py:Class``, or ``hf:CONFIG``."""

from __future__ import annotations

import torch

from dfx.errors import ModelSpecError
from dfx.models.files import build_from_file, check_not_a_path, is_file_spec
from dfx.models.hf import build_hf
from dfx.models.registry import PRESETS, build
from dfx.models.spec import ModelSpec

__all__ = ["resolve"]

_HF_PREFIX = "hf:"


def resolve(
    spec: str,
    *,
    batch: int = 1,
    seq: int | None = None,
    dtype: str | torch.dtype = "float32",
    input_shapes: list[tuple[int, ...]] | None = None,
    device: str | torch.device = "meta",
) -> ModelSpec:
    """Turn what a user typed into a model with example inputs.

    Parameters
    ----------
    spec : str
        ``gpt2-block`` (any name in :func:`dfx.models.available`); ``path/to/file.py:ClassOrFactory``
        (the class is instantiated, or the factory called, with no arguments); or ``hf:NAME`` with a
        shipped config name (``hf:llama-2-7b``) or a path (``hf:path/to/config.json``).
    batch, seq : int
        For built-ins and ``hf:`` models; ``seq=None`` is the model's default.
    dtype : str or torch.dtype
        Float dtype of parameters and float inputs.
    input_shapes : list of tuple of int, optional
        One shape per positional input; required for a file model, refused for the others.
    device : str or torch.device
        ``meta`` (the default) allocates nothing.

    Raises
    ------
    ModelSpecError
        With a one-line message naming the problem and the fix.

    Examples
    --------
    >>> resolve("mlp", batch=4).args[0].shape
    torch.Size([4, 1, 28, 28])
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError("give a model: a built-in name (e.g. gpt2-block), path/to/file.py:Class, or hf:CONFIG")
    spec = spec.strip()
    if is_file_spec(spec):
        return build_from_file(spec, input_shapes=input_shapes, dtype=dtype, device=device)
    if not spec.startswith(_HF_PREFIX) and spec not in PRESETS:
        check_not_a_path(spec)  # notes.txt, a folder: say so, not "unknown model" or --input-shape
    if input_shapes:
        raise ModelSpecError(f"--input-shape applies to path/to/file.py:Class models; {spec} takes --batch and --seq")
    if spec.startswith(_HF_PREFIX):
        return build_hf(spec[len(_HF_PREFIX) :], batch=batch, seq=seq, dtype=dtype, device=device)
    return build(spec, batch=batch, seq=seq, dtype=dtype, device=device)
