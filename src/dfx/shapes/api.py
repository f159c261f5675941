"""The Python entry points: :func:`guards` and :func:`buckets` (the CLI calls exactly these)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from dfx.errors import DfxError
from dfx.shapes.buckets import BucketPlan, check_lengths, linear_ladder, plan, pow2_ladder
from dfx.shapes.cost import ModelCost, SeqCost, model_cost
from dfx.shapes.dist import sample_lengths
from dfx.shapes.guard_types import GuardReport
from dfx.shapes.optimize import optimal_buckets
from dfx.shapes.parse import DynamicDim, InputSpec, parse_dynamic, parse_input_spec, read_lengths

__all__ = ["guards", "buckets", "DEFAULT_HARDWARE"]

DEFAULT_HARDWARE = "nvidia-h100-sxm"


def guards(
    model: Any = "gpt2-block",
    args: Sequence[Any] | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    batch: int = 1,
    seq: int | None = None,
    dtype: str = "float32",
    dynamic: Sequence[str | DynamicDim] = (),
    check: Sequence[str | tuple[int, ...] | InputSpec] | None = None,
) -> GuardReport:
    """Compile ``model`` with TorchDynamo and list the guards PyTorch installed for it.

    Parameters
    ----------
    model : str or torch.nn.Module
        A model spec for :func:`dfx.models.resolve` (built-in name, ``file.py:Class`` with
        ``input_shapes``, ``hf:...``) or a module with example ``args``.
    dynamic : sequence of str or DynamicDim
        Dimensions to mark dynamic before compiling (``"x:1"``: dim 1 of input ``x``).
    check : sequence of str, tuple or InputSpec, optional
        New input shapes (one per tensor input; ``"2,64,8:float64"`` also changes the dtype): the
        report's ``check`` says whether they pass every guard, and which guard fails if not.

    Returns
    -------
    GuardReport

    Raises
    ------
    DfxError
        On a bad spec, a bad ``dynamic``/``check`` entry, or when Dynamo cannot compile the model.

    Examples
    --------
    >>> report = guards("mlp", batch=2, check=["4,1,28,28"])  # doctest: +SKIP
    >>> report.check.failed  # doctest: +SKIP
    ("check_tensor(L['x'], ... size=[2, 1, 28, 28], ...)",)
    """
    from dfx.capture.guards import capture_guards

    name = model if isinstance(model, str) else type(model).__name__
    if isinstance(model, str):
        from dfx.models import resolve

        spec = resolve(model, batch=batch, seq=seq, dtype=dtype, input_shapes=input_shapes)
        model, args, kwargs = spec.model, spec.args, {**spec.kwargs, **(kwargs or {})}
    elif args is None:
        raise DfxError("guards() on a module needs example args")
    marks = [d if isinstance(d, DynamicDim) else parse_dynamic(d) for d in dynamic]
    specs = None if check is None else [_input_spec(c) for c in check]
    return capture_guards(model, tuple(args), kwargs, name=name, dynamic=marks, check=specs)


def _input_spec(c: str | tuple[int, ...] | InputSpec) -> InputSpec:
    if isinstance(c, InputSpec):
        return c
    if isinstance(c, str):
        return parse_input_spec(c)
    return InputSpec(tuple(int(d) for d in c))


def buckets(
    lengths: Sequence[int] | str | None = None,
    *,
    dist: str | None = None,
    samples: int = 1000,
    seed: int = 0,
    sizes: Sequence[int] | None = None,
    optimize: int | None = None,
    ladder: str | None = None,
    overflow: str = "error",
    model: str | None = None,
    hardware: str = DEFAULT_HARDWARE,
    analyzer: Callable[[str, int, str], SeqCost] | None = None,
) -> BucketPlan:
    """Pad lengths to buckets and report the waste; optionally choose the buckets optimally.

    Parameters
    ----------
    lengths : sequence of int or str (a file path), optional
        The input lengths, or a file with one integer a line. Exactly one of ``lengths``/``dist``.
    dist, samples, seed
        A distribution spec (see :mod:`dfx.shapes.dist`) and how many lengths to draw, with which seed.
    sizes, optimize, ladder
        Exactly one: the bucket sizes; ``K`` for the K cost-optimal buckets (compared with the pow2
        ladder); or ``"pow2"`` / ``"linear:STEP"``.
    overflow : {"error", "split"}
        What to do with a length beyond the largest bucket.
    model, hardware
        With a model spec, each bucket is costed by :func:`dfx.analysis.analyze` at ``seq=bucket``
        (batch 1) on ``hardware``, and ``optimize`` minimises FLOPs instead of tokens.
    analyzer
        Replaces that analysis (``analyzer(model, seq, hardware) -> SeqCost``); for tests.

    Returns
    -------
    BucketPlan

    Examples
    --------
    >>> p = buckets([100, 130, 300, 512], sizes=[128, 256, 512])
    >>> p.padded_tokens, p.waste_tokens, p.graphs
    (1408, 366, 3)
    """
    ls = _lengths(lengths, dist, samples, seed)
    modes = [m for m in (sizes, optimize, ladder) if m is not None]
    if len(modes) != 1:
        raise DfxError("give exactly one of --buckets, --optimize K or --ladder pow2|linear:STEP")
    if optimize is not None:
        return _optimized(ls, optimize, overflow, model, hardware, analyzer)
    chosen, method = (tuple(sizes), "given") if sizes is not None else (_ladder(ls, ladder), f"ladder:{ladder}")
    cost = _cost(model, chosen, ls, hardware, analyzer) if model else None
    return plan(ls, chosen, overflow=overflow, cost=cost, method=method)


def _lengths(lengths: Any, dist: str | None, samples: int, seed: int) -> tuple[int, ...]:
    """The lengths given, read from a file, or drawn from ``dist``: exactly one source."""
    if (lengths is None) == (dist is None):
        raise DfxError("give exactly one of --lengths FILE or --dist SPEC")
    if dist is not None:
        return sample_lengths(dist, samples, seed)
    return check_lengths(read_lengths(lengths) if isinstance(lengths, str) else tuple(lengths))


def _ladder(ls: tuple[int, ...], ladder: str) -> tuple[int, ...]:
    """``pow2`` or ``linear:STEP`` as bucket sizes covering ``ls``."""
    kind, _, step = str(ladder).partition(":")
    if kind == "pow2" and not step:
        return pow2_ladder(ls)
    if kind == "linear":
        try:
            return linear_ladder(ls, int(step))
        except ValueError:
            pass
    raise DfxError(f"bad --ladder {ladder!r}; expected pow2 or linear:STEP (e.g. linear:64)")


def _cost(
    model: str, chosen: Sequence[int], ls: tuple[int, ...], hardware: str, analyzer: Any, known: ModelCost | None = None
) -> ModelCost:
    # analyse at every bucket (exact padded cost); the quadratic fit covers the real lengths
    return model_cost(model, chosen, hardware, analyzer, known)


def _optimized(
    ls: tuple[int, ...], k: int, overflow: str, model: str | None, hardware: str, analyzer: Any
) -> BucketPlan:
    """The K optimal buckets (tokens, or the model's fitted FLOPs), with the pow2 ladder as ``compare``."""
    if overflow != "error":
        raise DfxError("--optimize covers every length with its largest bucket; --overflow split does not apply")
    pow2 = pow2_ladder(ls)
    if model is None:
        best = optimal_buckets(ls, k)
        return _with_compare(plan(ls, best, method=f"optimize:{k}"), plan(ls, pow2, method="ladder:pow2"))
    lo, hi = min(ls), max(ls)
    fit = model_cost(model, [lo, (lo + hi) // 2, hi], hardware, analyzer)  # 3 analyses: the DP's FLOP weight
    best = optimal_buckets(ls, k, fit.flops_fit)
    cost = model_cost(model, [*best, *pow2], hardware, analyzer, known=fit)
    return _with_compare(
        plan(ls, best, cost=cost, method=f"optimize:{k}"), plan(ls, pow2, cost=cost, method="ladder:pow2")
    )


def _with_compare(best: BucketPlan, ladder: BucketPlan) -> BucketPlan:
    from dataclasses import replace

    return replace(best, compare=ladder)
