"""One string to a :class:`ModelSpec`: a built-in name, ``path/to/file.py:Class``, or ``hf:CONFIG``."""

from __future__ import annotations

import torch

from dfx.errors import ModelSpecError
from dfx.models.files import build_from_file, is_file_spec
from dfx.models.hf import build_hf, layer_count, load_config
from dfx.models.registry import build, scope
from dfx.models.spec import ModelSpec

__all__ = ["model_scope", "resolve"]

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
    if input_shapes:
        raise ModelSpecError(f"--input-shape applies to path/to/file.py:Class models; {spec} takes --batch and --seq")
    if spec.startswith(_HF_PREFIX):
        return build_hf(spec[len(_HF_PREFIX) :], batch=batch, seq=seq, dtype=dtype, device=device)
    return build(spec, batch=batch, seq=seq, dtype=dtype, device=device)


def model_scope(spec: str) -> str:
    """How much of a model ``spec``'s numbers cover, for labelling a rate such as tokens/s.

    A built-in's :func:`dfx.models.registry.scope` (``"1 layer"``, ``"1 block"``, ``"whole
    model"``); an ``hf:`` config's layer count (``"32 layers"``: the whole model); ``""`` for a model
    file, whose extent dfx does not know.

    Raises
    ------
    ModelSpecError
        An unknown built-in or ``hf:`` config.

    Examples
    --------
    >>> model_scope("llama-layer"), model_scope("hf:llama-2-7b")
    ('1 layer', '32 layers')
    """
    spec = spec.strip()
    if is_file_spec(spec):
        return ""
    if spec.startswith(_HF_PREFIX):
        config, _ = load_config(spec[len(_HF_PREFIX) :])
        layers = layer_count(config)
        return "" if layers is None else f"{layers} layer{'s' if layers != 1 else ''}"
    return scope(spec)
