"""``dfx.analyze`` with a phase or a precision: the :class:`~dfx.analysis.Analysis` of an inference step."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from dfx.errors import DfxError

__all__ = ["analyze_phase"]


def analyze_phase(
    model: Any,
    profiles: Sequence[Any],
    *,
    phase: str | None,
    dtype: str | None,
    batch: int | None,
    seq: int | None,
    method: str,
    prompt_len: int | None,
    kv_len: int | None,
    output_len: int | None,
    weight_dtype: str | None,
    kv_dtype: str | None,
    evaluate: Callable[[Any, Any], Any],
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    evaluate_latency: Callable[[Any, Any], Any] | None = None,
    kv_reads: Any = None,
):
    """The analysis of ``model``'s ``phase`` step (or of its forward pass at another precision).

    See :func:`dfx.analysis.analyze` for the parameters.

    Raises
    ------
    DfxError
        A phase on something that is not a causal decoder's name, an unknown phase or dtype,
        ``seq`` with a phase, lengths without a phase, ``kv_dtype`` or ``kv_reads`` without a phase.
    """
    from dfx.capture_spec import capture_spec
    from dfx.result import Analysis
    from dfx.costs import annotate
    from dfx.costs.precision import Precision
    from dfx.inference.phases import DEFAULT_OUTPUT_LEN, DEFAULT_PROMPT_LEN, Phase, PhaseRequest, run_phase

    precision = Precision.of("bfloat16" if dtype is None else dtype, weight_dtype, kv_dtype)  # DEFAULT_DTYPE
    if phase is None:
        given = [
            f
            for f, v in (
                ("prompt_len", prompt_len),
                ("kv_len", kv_len),
                ("output_len", output_len),
                ("kv_dtype", kv_dtype),
                ("gqa_kv_reads", kv_reads),
            )
            if v is not None
        ]
        if given:
            raise DfxError(
                f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to an inference phase; "
                "add phase= (--phase prefill, decode or generate)"
            )
        if not isinstance(model, str):
            raise DfxError("weight_dtype= applies to model names (a built-in, file or hf: spec)")
        graph, info = capture_spec(
            model, batch=batch, seq=seq, dtype=precision.capture, method=method, input_shapes=input_shapes
        )
        costed = precision.apply(annotate(graph))
        info = {
            **info,
            "dtype": precision.activation,
            "precision": {**precision.to_dict(), "weight_bytes": precision.weight_bytes(costed)},
        }
        return Analysis(costed, tuple(evaluate(costed, p) for p in profiles), info)
    try:
        kind = Phase(phase)
    except ValueError:
        raise DfxError(f"unknown phase {phase!r}; expected prefill, decode or generate") from None
    if input_shapes:
        raise DfxError("--input-shape does not apply with --phase; phases build their own inputs")
    if not isinstance(model, str):
        raise DfxError("phases apply to model names: a decoder built-in (gpt2-block, llama-layer, ...) or hf:CONFIG")
    if seq is not None:
        raise DfxError("--seq does not apply with --phase; give --prompt-len (prefill, generate) or --kv-len (decode)")
    if kind is not Phase.DECODE and kv_len is not None:
        raise DfxError(f"--kv-len applies to --phase decode; {kind.value} grows the cache from --prompt-len")
    if kind is not Phase.GENERATE and output_len is not None:
        raise DfxError(f"--output-len applies to --phase generate, not {kind.value}")
    prompt = DEFAULT_PROMPT_LEN if prompt_len is None else prompt_len
    request = PhaseRequest(
        kind,
        batch=1 if batch is None else batch,
        prompt_len=prompt,
        kv_len=prompt if kv_len is None else kv_len,
        output_len=DEFAULT_OUTPUT_LEN if output_len is None else output_len,
    )
    costed, results, inference = run_phase(
        model,
        profiles,
        request,
        dtype=precision.capture,
        method=method,
        evaluate=evaluate,
        precision=precision,
        evaluate_latency=evaluate_latency,
        kv_reads=kv_reads,
    )
    info = {
        "name": model,
        "dtype": precision.activation,
        "batch": request.batch,
        "phase": kind.value,
        "seq": 1 if inference.graph_step.startswith("decode") else request.prompt_len,
        "precision": {**precision.to_dict(), "weight_bytes": precision.weight_bytes(costed)},
    }
    return Analysis(costed, results, info, inference)
