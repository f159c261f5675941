"""A model spec string (a built-in name, ``path/to/file.py:Class``, ``hf:NAME_OR_CONFIG``) built and captured,
through the capture cache where one is given: what every command that captures a model calls.

In a module of its own so that the analyses of a phase and of a training step capture without
importing :mod:`dfx.analysis`, which runs them.
"""

from __future__ import annotations

from typing import Any, Sequence

from dfx.errors import DfxError
from dfx.ir import Graph
from dfx.ir.spec import normalize_dtype
from dfx.report.progress import step

__all__ = ["capture_spec", "capture_model", "normalize_dtype_or_fail", "with_labels"]


def capture_spec(
    spec: str,
    *,
    batch: int | None = None,
    seq: int | None = None,
    dtype: str | None = "float32",
    method: str = "auto",
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    train: bool = False,
    cache: Any = None,
) -> tuple[Graph, dict[str, Any]]:
    """Build the model a spec string names (see :func:`dfx.models.resolve`) and capture it.

    Returns the graph and a description of the model (name, batch, seq, dtype). With ``train``,
    the graph is one training step's joint forward + backward (:func:`dfx.capture.joint.capture_joint`).
    With ``cache`` (a :class:`dfx.cache.CaptureCache`), a graph captured before under the same
    :class:`dfx.cache.CaptureKey` is read from it, with no torch import, and a new capture is stored.

    Raises
    ------
    DfxError
        On a bad spec, dtype or shape, or if capture fails.
    """
    dtype_name = normalize_dtype_or_fail("float32" if dtype is None else dtype)  # --dtype '' is refused, not fp32
    step(f"capturing {spec}")
    is_file = ":" in spec and not spec.startswith("hf:")
    if is_file and (batch is not None or seq is not None):
        raise DfxError(
            f"--batch and --seq apply to built-in and hf: models; give {spec}'s input shapes with --input-shape"
        )
    if train and method != "auto":
        raise DfxError(
            f"--method {method} does not apply with --train: the training step is traced by AOTAutograd; drop --method"
        )
    key = None
    if cache is not None:
        from dfx.cache import CaptureKey

        key = CaptureKey.of(
            "forward",
            spec,
            batch=batch,
            seq=seq,
            dtype=dtype_name,
            method=method,
            train=train,
            input_shapes=input_shapes,
        )
        hit = cache.get(key) if key is not None else None  # None: a definition that cannot be hashed
        if hit is not None:
            return hit
    from dfx.capture import capture  # torch: after the cache, which a hit answers without it
    from dfx.models import PRESETS, resolve

    model = resolve(spec, batch=batch or 1, seq=seq, dtype=dtype_name, input_shapes=input_shapes)
    if train:
        from dfx.capture.joint import capture_joint

        graph = capture_joint(model.model, model.args, with_labels(spec, model), name=model.name)
    else:
        from dfx.inference.blocks import capture_blocks  # one block per distinct layer kind, repeated

        graph = capture_blocks(model.model, model.args, model.kwargs, method=method, name=model.name)
        if graph is None:  # no repeated layers, or layers it cannot repeat: the whole model
            graph = capture(model.model, model.args, model.kwargs, method=method, name=model.name)
    from dfx.heap import after_capture

    after_capture()  # the command line and sweep workers freeze the capture's objects (dfx.heap)
    info: dict[str, Any] = {"name": model.name, "dtype": dtype_name}
    if is_file:
        info["input_shapes"] = [list(a.shape) for a in model.args]
    elif seq is None and spec in PRESETS:
        seq = PRESETS[spec].default_seq
    elif seq is None and spec.startswith("hf:") and model.args:
        seq = int(model.args[0].shape[-1])  # input_ids (batch, seq) at the config's default
    if not is_file:
        info = {**info, "batch": batch or 1, "seq": seq}
    if key is not None:
        cache.put(key, graph, info)
    return graph, info


def capture_model(model_or_name, args, kwargs, dtype, batch, seq, method, input_shapes, cache=None):
    """A module (with its example inputs) or a spec string captured: ``(graph, model description)``."""
    if isinstance(model_or_name, str):
        return capture_spec(
            model_or_name, batch=batch, seq=seq, dtype=dtype, method=method, input_shapes=input_shapes, cache=cache
        )
    from dfx.capture import capture

    if dtype is not None:
        raise DfxError("dtype= applies to model names; convert a module yourself with model.to(dtype)")
    graph = capture(model_or_name, () if args is None else args, kwargs, method=method)
    return graph, {"name": type(model_or_name).__name__}


_STORAGE = "fp8, int8 and int4 are storage dtypes: use --weight-dtype or --kv-dtype for them"


def normalize_dtype_or_fail(dtype: str, storage: str = _STORAGE) -> str:
    """torch's name for ``dtype``; a :class:`DfxError` naming the accepted names otherwise, with
    ``storage`` (what to do with a storage dtype: ``analyze`` has ``--weight-dtype``, ``validate``
    runs the model and has none) for ``fp8``, ``int8`` or ``int4``."""
    try:
        name = normalize_dtype(dtype)
    except ValueError:
        hint = f"; {storage}" if str(dtype).lower().startswith(("float8", "fp8", "int4", "e4m3", "e5m2")) else ""
        raise DfxError(
            f"unknown dtype {dtype!r}; expected fp32, bf16, fp16 or fp64 (or float32, bfloat16, float16, float64){hint}"
        ) from None
    if not name.startswith(("float", "bfloat")) or name.startswith("float8"):
        raise DfxError(f"dtype {dtype!r} is not a model dtype; expected fp32, bf16, fp16 or fp64 ({storage})")
    return name


def with_labels(spec: str, built: Any) -> dict[str, Any]:
    """An ``hf:`` model's kwargs with ``labels=input_ids`` where its forward takes labels: it then
    returns its own training loss (next-token or masked-LM cross-entropy) as ``.loss``."""
    import inspect

    kwargs = dict(built.kwargs)
    if spec.startswith("hf:") and built.args and "labels" in inspect.signature(built.model.forward).parameters:
        kwargs["labels"] = built.args[0]
    return kwargs
