"""``dfx.analyze(..., train=True)``: the :class:`~dfx.analysis.Analysis` of one training step."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from dfx.errors import DfxError

__all__ = ["analyze_training"]


def analyze_training(
    model: Any,
    args: Any,
    kwargs: dict[str, Any] | None,
    profiles: Sequence[Any],
    *,
    optimizer: str | None,
    dtype: str | None,
    batch: int | None,
    seq: int | None,
    method: str,
    input_shapes: Sequence[tuple[int, ...]] | None,
    evaluate: Callable[[Any, Any], Any],
):
    """Capture the joint graph of ``model``, add the optimizer step, cost and evaluate it.

    See :func:`dfx.analysis.analyze` for the parameters. The document's graph is the whole step
    (forward, backward, optimizer) and ``Analysis.training`` holds its :class:`TrainingStep`.

    Raises
    ------
    DfxError
        An unknown optimizer, a capture method other than ``auto`` (the joint graph has one tracer,
        AOTAutograd), a model without trainable parameters, or a capture failure.
    """
    from dfx.capture_spec import capture_spec
    from dfx.result import Analysis
    from dfx.capture.joint import capture_joint
    from dfx.costs import annotate
    from dfx.training.optimizer import DEFAULT_OPTIMIZER, add_optimizer_step, optimizer_spec
    from dfx.training.step import training_step

    spec = optimizer_spec(DEFAULT_OPTIMIZER if optimizer is None else optimizer)  # fail before capture
    if isinstance(model, str):
        graph, info = capture_spec(
            model, batch=batch, seq=seq, dtype=dtype, method=method, input_shapes=input_shapes, train=True
        )
    else:
        if method != "auto":
            raise DfxError(
                f"--method {method} does not apply with --train: the training step is traced by AOTAutograd; drop --method"
            )
        if dtype is not None:
            raise DfxError("dtype= applies to model names; convert a module yourself with model.to(dtype)")
        graph = capture_joint(model, () if args is None else args, kwargs)
        info = {"name": type(model).__name__}
    costed = annotate(add_optimizer_step(graph, spec))
    results = tuple(evaluate(costed, p) for p in profiles)
    return Analysis(costed, results, {**info, "train": True}, training=training_step(costed))
