"""Prefill, decode and generate: the inference phases of a causal decoder on hardware profiles.

A **prefill** is one forward pass over the prompt (``prompt_len`` tokens per sequence); it yields
the first output token, so its latency is the time to first token. A **decode step** processes one
new token per sequence against a KV cache of ``kv_len`` tokens. **Generate** is a prefill plus the
``output_len - 1`` decode steps that produce the other tokens, the cache growing from
``prompt_len`` to ``prompt_len + output_len - 2`` tokens (metrics as TensorRT-LLM's and vLLM's
benchmarks define them, see ``docs/inference.md``)::

    ttft_s                = T_prefill(prompt_len)
    decode_s              = sum over k = P .. P+O-2 of T_decode(k)
    tpot_s                = decode_s / (O - 1)
    total_s               = ttft_s + decode_s                       (end-to-end latency)
    tokens_per_s          = batch * O / total_s                     (output tokens/s of the system)
    tokens_per_s_per_user = 1 / tpot_s                              (one sequence's decode speed)

Each ``T`` is a captured graph's predicted latency on the profile (``HardwareResult.latency_s``).
``decode_s`` is summed exactly from a few KV lengths (:func:`sum_over_steps`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Sequence

from dfx.errors import DfxError
from dfx.limits import MAX_SEQ, check_size, check_tokens

__all__ = ["Phase", "PhaseRequest", "InferenceResult", "ProfileMetrics", "first_steps", "run_phase", "sum_over_steps"]

DEFAULT_PROMPT_LEN = 128  # tokens; TensorRT-LLM's and MLPerf's shortest published input length
DEFAULT_OUTPUT_LEN = 128
_AFFINE_REL_TOL = 1e-9  # a midpoint this close to the chord counts as on it (float rounding only)
# A decode step's latency on a machine that rounds (whole cycles on Groq, whole cores per stage on the
# wafer, whole waves on a GPU) is affine in k only within its rounding: points this close to the
# chord count as on it. The trapezoid's error is then at most 2x this of the sum for a convex latency
# (chord - f is concave and 0 at the ends: its maximum is at most twice its midpoint value), and is
# checked at the quarter points besides the midpoint for the others (tests/inference/test_kv_range.py).
STEP_REL_TOL = 1e-4


class Phase(str, Enum):
    PREFILL = "prefill"
    DECODE = "decode"
    GENERATE = "generate"


@dataclass(frozen=True)
class PhaseRequest:
    """What to run: the phase and its lengths, per sequence, and the batch (sequences together)."""

    phase: Phase
    batch: int = 1
    prompt_len: int = DEFAULT_PROMPT_LEN
    kv_len: int = DEFAULT_PROMPT_LEN
    output_len: int = DEFAULT_OUTPUT_LEN
    # the prefill's LM head positions (dfx.models.decode.build_step): None, the last one (the token
    # sampled); 0, every prompt position (dfx.serve prices a pass's extra tokens as differences of
    # prefill prices, and a speculative draft token needs its logits)
    logits_to_keep: int | None = None

    @property
    def decode_kv_lens(self) -> range:
        """KV lengths of the decode steps: ``kv_len`` alone, or ``P .. P+O-2`` in generate."""
        if self.phase is Phase.DECODE:
            return range(self.kv_len, self.kv_len + 1)
        if self.phase is Phase.GENERATE:
            return range(self.prompt_len, self.prompt_len + self.output_len - 1)
        return range(0)

    @property
    def kv_cache_tokens(self) -> int:
        """Tokens in the KV cache the phase is quoted for (see ``docs/inference.md``)."""
        if self.phase is Phase.PREFILL:
            return self.prompt_len  # the cache the prefill writes
        if self.phase is Phase.DECODE:
            return self.kv_len  # the cache the step reads
        return self.prompt_len + self.output_len - 1  # every K/V the request computes

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase.value,
            "batch": self.batch,
            "prompt_len": self.prompt_len,
            "kv_len": self.kv_len,
            "output_len": self.output_len,
        }


@dataclass(frozen=True)
class ProfileMetrics:
    """A phase's user-facing numbers on one profile; ``None`` where the phase has no such number."""

    profile_id: str
    ttft_s: float | None = None
    tpot_s: float | None = None
    decode_s: float | None = None
    total_s: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_per_user: float | None = None
    prefill_tokens_per_s: float | None = None
    decode_kv_lens_evaluated: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "decode_s": self.decode_s,
            "total_s": self.total_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "decode_kv_lens_evaluated": list(self.decode_kv_lens_evaluated),
        }


@dataclass(frozen=True)
class InferenceResult:
    """The ``inference`` section of the export document (``docs/export-format.md``)."""

    request: PhaseRequest
    n_layers: int
    n_kv_heads: int
    head_dim: int
    kv_dtype: str
    kv_bytes_per_element: float
    graph_step: str  # which step the document's graph (nodes, totals, hardware) is
    profiles: tuple[ProfileMetrics, ...] = ()
    precision: dict[str, Any] = field(default_factory=dict)
    windows: tuple[int | None, ...] = ()  # per layer sliding window (None: full); () is full everywhere
    latent_dim: int = 0  # MLA: kv_lora_rank + qk_rope_head_dim elements per token per layer

    @property
    def kv_elements_per_token_per_layer(self) -> int:
        """``2 * kv_heads * head_dim`` (K and V), or MLA's ``latent_dim`` (:func:`dfx.ir.kv.layer_elements_per_token`)."""
        from dfx.ir.kv import layer_elements_per_token

        return layer_elements_per_token(self.n_kv_heads, self.head_dim, self.latent_dim)

    @property
    def kv_bytes_per_token(self) -> float:
        """Bytes one cached token takes in every layer: ``layers * per_layer * bytes per element``.

        NB: a sliding-window layer stops growing at its window, so past it a sequence takes less
        (:attr:`kv_cache_bytes` counts that); this is the bound for a sequence within every window.
        """
        return self.n_layers * self.kv_elements_per_token_per_layer * self.kv_bytes_per_element

    @property
    def kv_cache_bytes(self) -> int:
        """``per_layer * sum over layers of min(tokens, window) * batch * bytes per element``.

        ``per_layer`` is ``2 * kv_heads * head_dim`` (K and V), or MLA's ``latent_dim``; without
        windows the sum is ``layers * tokens``: ``2 * layers * kv_heads * head_dim * tokens * batch * bytes``.
        """
        from dfx.ir.kv import cached_layer_tokens

        r = self.request
        cached = cached_layer_tokens(self.n_layers, self.windows, r.kv_cache_tokens)
        return math.ceil(self.kv_elements_per_token_per_layer * cached * r.batch * self.kv_bytes_per_element)

    def metrics(self, profile_id: str) -> ProfileMetrics:
        for m in self.profiles:
            if m.profile_id == profile_id:
                return m
        raise KeyError(f"no inference metrics for profile {profile_id!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.request.to_dict(),
            "n_layers": self.n_layers,
            "n_kv_heads": self.n_kv_heads,
            "head_dim": self.head_dim,
            "kv_dtype": self.kv_dtype,
            "kv_cache_tokens": self.request.kv_cache_tokens,
            "kv_cache_bytes": self.kv_cache_bytes,
            "graph_step": self.graph_step,
            "precision": dict(self.precision),
            "profiles": {m.profile_id: m.to_dict() for m in self.profiles},
        }


def sum_over_steps(
    f: Callable[[int], float], lo: int, hi: int, rel_tol: float = _AFFINE_REL_TOL
) -> tuple[float, tuple[int, ...]]:
    """``sum(f(k) for k in range(lo, hi + 1))`` from a few evaluations of ``f``, and the ``k`` evaluated.

    ``f`` is evaluated at both ends and the midpoint of ``[lo, hi]``. If the midpoint lies on the
    chord, the interval's sum is the trapezoid ``(hi - lo + 1) * (f(lo) + f(hi)) / 2`` (exact for
    an affine ``f``); otherwise both halves are summed the same way, recursively.

    With ``rel_tol`` above float rounding (:data:`STEP_REL_TOL`), the quarter points are checked
    too, and each of the three may lie within ``rel_tol`` of the chord.

    Notes
    -----
    Exact for the roofline: each node's time is ``max(a1 + b1 k, a2 + b2 k) + overhead`` (FLOPs and
    bytes of the attention over the cache grow linearly with ``k``), so the step time is a sum of
    convex piecewise-affine functions, itself convex; a convex function equal to its chord at an
    interior point is affine on the whole interval. For a latency that is not convex in ``k`` (a
    tensor that stops fitting on chip), the midpoint test is a check, not a proof.

    Examples
    --------
    >>> sum_over_steps(lambda k: 2.0 * k + 1.0, 0, 9)  # 2 * 45 + 10
    (100.0, (0, 4, 9))
    """
    if hi < lo:
        return 0.0, ()
    seen: dict[int, float] = {}

    def at(k: int) -> float:
        if k not in seen:
            seen[k] = f(k)
        return seen[k]

    def on_chord(a: int, b: int, k: int) -> bool:
        return math.isclose(at(k), at(a) + (at(b) - at(a)) * (k - a) / (b - a), rel_tol=rel_tol, abs_tol=0.0)

    def total(a: int, b: int) -> float:
        if b - a <= 1:
            return sum(at(k) for k in range(a, b + 1))
        mid = (a + b) // 2
        checks = (mid,) if rel_tol <= _AFFINE_REL_TOL or b - a < 4 else (mid, (a + mid) // 2, (mid + b) // 2)
        if all(on_chord(a, b, k) for k in checks):
            return (b - a + 1) * (at(a) + at(b)) / 2
        return total(a, mid) + total(mid, b) - at(mid)

    return total(lo, hi), tuple(sorted(seen))


def first_steps(lo: int, hi: int, rel_tol: float = _AFFINE_REL_TOL) -> tuple[int, ...]:
    """The ``k`` :func:`sum_over_steps` evaluates first over ``[lo, hi]``, whatever ``f`` is, and the
    quarter points it evaluates next where ``f``'s midpoint lies on the chord.

    :func:`run_phase` evaluates every profile at these together; a profile's further ``k`` (a
    latency with a kink) are evaluated on that profile alone. A ``k`` evaluated and never asked for
    costs time, never a number: the sums read only the ``k`` they ask for.

    Examples
    --------
    >>> first_steps(512, 766, 1e-4)  # ends, midpoint, quarter points
    (512, 575, 639, 702, 766)
    >>> first_steps(512, 766)  # at float rounding the midpoint alone is checked
    (512, 639, 766)
    >>> first_steps(5, 6)
    (5, 6)
    """
    if hi < lo:
        return ()
    if hi - lo <= 1:
        return tuple(range(lo, hi + 1))
    mid = (lo + hi) // 2
    quarters = () if rel_tol <= _AFFINE_REL_TOL or hi - lo < 4 else ((lo + mid) // 2, (mid + hi) // 2)
    return tuple(sorted({lo, hi, mid, *quarters}))


def _metrics(
    request: PhaseRequest, profile_id: str, prefill_s: float | None, decode: Callable[[int], float]
) -> ProfileMetrics:
    r = request
    if r.phase is Phase.PREFILL:
        return ProfileMetrics(
            profile_id, ttft_s=prefill_s, total_s=prefill_s, prefill_tokens_per_s=r.batch * r.prompt_len / prefill_s
        )
    if r.phase is Phase.DECODE:
        tpot = decode(r.kv_len)
        return ProfileMetrics(
            profile_id,
            tpot_s=tpot,
            decode_s=tpot,
            total_s=tpot,
            tokens_per_s=r.batch / tpot,
            tokens_per_s_per_user=1.0 / tpot,
            decode_kv_lens_evaluated=(r.kv_len,),
        )
    steps = r.decode_kv_lens
    decode_s, evaluated = sum_over_steps(decode, steps.start, steps.stop - 1, STEP_REL_TOL)
    total = prefill_s + decode_s
    tpot = decode_s / len(steps) if len(steps) else None
    return ProfileMetrics(
        profile_id,
        ttft_s=prefill_s,
        tpot_s=tpot,
        decode_s=decode_s,
        total_s=total,
        tokens_per_s=r.batch * r.output_len / total,
        tokens_per_s_per_user=1.0 / tpot if tpot else r.output_len / total,
        prefill_tokens_per_s=r.batch * r.prompt_len / prefill_s,
        decode_kv_lens_evaluated=evaluated,
    )


def check_request(request: PhaseRequest) -> None:
    """A one-line :class:`DfxError` for a length or batch that is not a positive integer up to 2**31 - 1,
    a context (prompt + output, or the KV cache) above :data:`dfx.limits.MAX_SEQ` tokens, or more than
    :data:`dfx.limits.MAX_TOKENS` tokens in one pass (batch x prompt, or batch x the cache a decode step reads)."""
    for name, value in (
        ("--batch", request.batch),
        ("--prompt-len", request.prompt_len),
        ("--kv-len", request.kv_len),
        ("--output-len", request.output_len),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise DfxError(f"{name} must be a positive integer, got {value!r}")
        check_size(name, value, fix=f"give a smaller {name}")
    if request.prompt_len + request.output_len > MAX_SEQ:  # the last decode step's KV length
        raise DfxError(
            f"--prompt-len + --output-len = {request.prompt_len + request.output_len:,} tokens is above "
            f"dfx's limit of {MAX_SEQ:,} (2**24, longer than any published context window); give shorter lengths"
        )
    if request.phase is Phase.DECODE:  # the cache one step reads
        check_tokens(request.batch, request.kv_len, seq_name="--kv-len")
    elif request.phase is Phase.PREFILL:  # the prompts one pass reads
        check_tokens(request.batch, request.prompt_len, seq_name="--prompt-len")
    else:  # the cache the last decode step reads
        tokens = request.prompt_len + request.output_len
        check_tokens(request.batch, tokens, seq_name="(--prompt-len + --output-len)")


def run_phase(
    spec: str,
    profiles: Sequence[Any],
    request: PhaseRequest,
    *,
    dtype: str = "bfloat16",
    method: str = "auto",
    evaluate: Callable[[Any, Any], Any],
    precision: Any = None,
    evaluate_latency: Callable[[Any, Any], Any] | None = None,
    kv_reads: Any = None,
):
    """Capture the steps ``request`` needs, evaluate them on ``profiles``, and compute the metrics.

    Parameters
    ----------
    spec : str
        A causal decoder: built-in layer or ``hf:`` config.
    profiles : sequence of HardwareProfile
    request : PhaseRequest
    dtype : str
        torch's name of the dtype the model is built and captured in.
    evaluate : callable
        ``evaluate(costed, profile) -> HardwareResult`` (``dfx.analysis.evaluate_on``).
    precision : Precision, optional
        Weight, activation and KV-cache widths applied to each step's costs
        (:func:`dfx.costs.precision.apply_precision`); default: everything at ``dtype``.
    evaluate_latency : callable, optional
        As ``evaluate``, for the steps of which only the latency is kept (every step but the one
        the document shows): one that leaves out what no latency reads (a GPU's eager program,
        ``evaluate_on(eager=False)``); default: ``evaluate``.
    kv_reads : KVReads, optional
        How the decode attention reads a GQA cache (:func:`dfx.inference.kv_reads.apply_kv_reads`):
        ``per-query-head`` reads each KV head's cache once per query head; default: shared.

    Returns
    -------
    (CostedGraph, tuple of HardwareResult, InferenceResult)
        The step the document shows (the first decode step, or the prefill where there is
        none), its costs at ``precision``, its results per profile, and the metrics.
    """
    from dfx.costs.precision import Precision, bytes_per_element
    from dfx.inference.kv_range import DecodeRange
    from dfx.inference.kv_reads import apply_kv_reads
    from dfx.inference.steps import capture_step, is_cache_input

    check_request(request)
    precision = precision if precision is not None else Precision.of(dtype)
    results: dict[tuple[int, int], tuple[Any, Any, tuple[Any, ...]]] = {}  # (tokens, kv_len) -> step
    latencies: dict[tuple[int, int], dict[int, float]] = {}  # every step evaluated: profile index -> latency

    def capture(tokens: int, kv_len: int):
        keep = request.logits_to_keep if kv_len == 0 else None  # a decode step keeps its token's logits
        return capture_step(
            spec, batch=request.batch, tokens=tokens, kv_len=kv_len, dtype=dtype, method=method, logits_to_keep=keep
        )

    kv = request.decode_kv_lens
    decode_range = DecodeRange(lambda k: capture(1, k), kv.start, kv.stop - 1) if kv else None
    prefill_key = (request.prompt_len, 0)
    shown = (1, kv.start) if kv else prefill_key  # the step the document shows: kept whole
    everyone = tuple(range(len(profiles)))

    def step(tokens: int, kv_len: int, which: tuple[int, ...] = everyone):
        """The step at ``(tokens, kv_len)`` evaluated on the profiles ``which`` indexes (all of them
        for the step the document shows): a profile's latency at a KV length it never asks for is
        never computed (one machine's kinks need many KV lengths, the others' few)."""
        key = (tokens, kv_len)
        if key not in results:
            from dfx.report.progress import step as say

            say(f"{'prefill' if kv_len == 0 else 'decode'} step: {tokens} token(s), kv_len {kv_len}")
            in_range = decode_range is not None and tokens == 1 and kv_len in kv
            s = decode_range.step(kv_len) if in_range else capture(tokens, kv_len)
            costed = apply_kv_reads(precision.apply(s.costed, is_cache_input), kv_reads, tokens, is_cache_input)
            which = everyone if key == shown else which
            timed = evaluate if key == shown or evaluate_latency is None else evaluate_latency
            got = {i: timed(costed, profiles[i]) for i in which}
            latencies.setdefault(key, {}).update((i, r.latency_s) for i, r in got.items())
            if key != shown:
                return None  # only its latencies are kept: a long generation evaluates many steps
            results[key] = (s, costed, tuple(got[i] for i in everyone))
        return results[key]

    def latency(tokens: int, kv_len: int, index: int) -> float:
        key = (tokens, kv_len)
        if index not in latencies.get(key, {}):
            step(tokens, kv_len, (index,))
        return latencies[key][index]

    if request.phase is Phase.GENERATE:  # what every profile's metrics read first, built once for all
        step(*prefill_key)
        for k in first_steps(kv.start, kv.stop - 1, STEP_REL_TOL):
            step(1, k)
    metrics = []
    for i, p in enumerate(profiles):
        prefill_s = latency(*prefill_key, i) if request.phase is not Phase.DECODE else None
        metrics.append(_metrics(request, p.id, prefill_s, lambda k, i=i: latency(1, k, i)))
    s, costed, hw = step(*shown)  # captured already, unless there are no profiles
    geometry = s.geometry
    kv_dtype = precision.kv_dtype
    info = InferenceResult(
        request,
        geometry.n_layers,
        geometry.n_kv_heads,
        geometry.head_dim,
        kv_dtype,
        bytes_per_element(kv_dtype),
        graph_step=("prefill" if shown[1] == 0 else "decode") + f" step: {shown[0]} new token(s), kv_len {shown[1]}",
        profiles=tuple(metrics),
        precision=precision.to_dict(),
        windows=getattr(geometry, "windows", ()),
        latent_dim=getattr(geometry, "latent_dim", 0),
    )
    return costed, hw, info
