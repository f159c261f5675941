"""What one serving iteration costs: prefill and decode steps priced once by dfx, then interpolated.

A server runs iterations; each is one forward pass over the tokens it schedules. dfx prices a few
whole-model steps on each machine and split (:func:`dfx.inference.phases.run_phase`: captured,
costed and evaluated as ``dfx analyze --phase`` does), and every iteration's time is read off them:

* **decode** ``D(B, K)``: ``B`` sequences, one new token each, reading ``K`` cached tokens in all.
  At a fixed batch a decode step is affine in its KV length (``docs/inference.md``: the attention's
  FLOPs and bytes grow linearly with it), so ``D(B, K) = a(B) + s(B) K`` from two KV lengths, and
  ``a`` and ``s`` are piecewise linear in ``B`` between priced batches. Where the midpoint of a KV
  range is more than ``tol`` off its chord (a tensor that stops fitting on chip), that range is
  split too, and ``K / B`` picks the segment.
* **prefill** ``P(n)``: one prompt of ``n`` tokens, piecewise linear between priced lengths,
  ``P(0) = 0``.
* **a mixed iteration** (chunked prefill: Sarathi-Serve, Agrawal et al., OSDI 2024; vLLM's and
  SGLang's ``--max-num-batched-tokens`` / ``--chunked-prefill-size``) of a decode batch ``(B, K)``
  and prefill chunks of ``t_i`` tokens after ``p_i`` already-cached tokens::

      T = D(B, K) + [P(B + sum t_i) - P(B)] + sum_i max(0, P(p_i + t_i) - P(p_i) - P(t_i))

  The chunks' tokens join the decode batch's forward pass (the bracket: what ``sum t`` more tokens
  add to a pass over ``B``; nearly free while the weights' reads bound it); each chunk's queries
  also attend to their ``p_i`` cached tokens (the last term: a causal prefill's cost of its last
  ``t`` tokens beyond that of ``t`` tokens alone, zero where the weights' reads hide it). With no
  chunk ``T = D(B, K)`` exactly; with no decode batch and no prefix ``T = P(t)`` exactly.

Which points: the KV lengths are refined once (:func:`refine`: both ends, then midpoints while one
is more than ``tol``, 1 %, off its chord, at most :data:`KV_DEPTH` levels); batches and prompt
lengths sit on a grid of tile multiples, two points an octave, each priced the first time an
iteration needs a value next to it (:class:`StepCosts`), and kept in the run's
:class:`StepPricer`. Where a priced step is not linear between grid points (a tile's step), the
interpolation error is what it is: ``bench/bench_serve.py --check`` measures it. No constant is
fitted to a benchmark.
"""

from __future__ import annotations

import bisect
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from dfx.errors import DfxError

__all__ = ["IterationCost", "PricedPoint", "StepCosts", "StepPricer", "fit_costs", "refine"]

DEFAULT_TOL = 0.01  # relative: linear interpolation within 1 % of the priced step at each midpoint tested
MAX_DEPTH = 4  # levels of midpoint splits: at most 2**4 + 1 points per range
# Priced lengths are multiples of a kernel's tile, so that a tile's step (dfx prices a partly
# filled tile whole, as the kernel runs it) is not taken for a curve: 128 tokens along the KV cache
# and the prompt (FlashAttention-2's KV and query blocks, Dao 2023, section 3.1; vLLM's FlashAttention
# backend), 64 rows along the decode batch (the M tile of an H100 bf16 GEMM, CUTLASS 3's 64 x N
# warpgroup MMA). Where the step's own time is not linear between them, the interpolation error
# left is reported (``StepCosts.residual``).
KV_QUANTUM = 128
PREFILL_QUANTUM = 128
BATCH_QUANTUM = 64
KV_DEPTH = 2  # levels of KV midpoints: at most 5 KV lengths
_CHECK_BATCH = 8  # where the batch axis below BATCH_QUANTUM is checked for linearity


@dataclass(frozen=True)
class PricedPoint:
    """One priced step: ``batch`` sequences of ``tokens`` new tokens over ``kv_len`` cached ones (0: a
    prefill), its latency (s) per profile id and the chips each profile's split used."""

    batch: int
    tokens: int
    kv_len: int
    latency_s: Mapping[str, float]
    chips: Mapping[str, int]
    wall_s: float  # seconds it took dfx to price (capture + cost + evaluate on every profile)

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "tokens": self.tokens,
            "kv_len": self.kv_len,
            "latency_s": dict(self.latency_s),
            "chips": dict(self.chips),
            "wall_s": self.wall_s,
        }


@dataclass(frozen=True)
class KvGeometry:
    """Bytes of K and V one cached token takes, and the model's weights and peak activations."""

    kv_bytes_per_token: float  # layers * (2 * kv_heads * head_dim, or MLA's latent) * bytes per element
    weight_bytes: int
    activation_bytes: int


class StepPricer:
    """The explicit cache of priced steps for one run: ``(batch, tokens, kv_len)`` -> latency per profile.

    ``price(batch, tokens, kv_len)`` returns ``({profile_id: latency_s}, {profile_id: chips})``;
    :meth:`from_model` builds one from dfx's own phases. Every point priced is kept in
    :attr:`points`, in the order priced; :meth:`key` prints what the cache is keyed on.
    """

    def __init__(
        self,
        price: Callable[[int, int, int], tuple[Mapping[str, float], Mapping[str, int]]],
        profile_ids: Sequence[str],
        key: str = "",
        geometry: KvGeometry | None = None,
    ) -> None:
        self._price = price
        self.profile_ids = tuple(profile_ids)
        self._key = key
        self._seen: dict[tuple[int, int, int], PricedPoint] = {}
        self.geometry = geometry

    def key(self) -> str:
        return self._key

    @property
    def points(self) -> tuple[PricedPoint, ...]:
        return tuple(self._seen.values())

    @property
    def wall_s(self) -> float:
        return sum(p.wall_s for p in self._seen.values())

    def point(self, batch: int, tokens: int, kv_len: int) -> PricedPoint:
        k = (batch, tokens, kv_len)
        if k not in self._seen:
            t0 = time.perf_counter()
            latency, chips = self._price(batch, tokens, kv_len)
            self._seen[k] = PricedPoint(batch, tokens, kv_len, dict(latency), dict(chips), time.perf_counter() - t0)
        return self._seen[k]

    def latency(self, batch: int, tokens: int, kv_len: int) -> Mapping[str, float]:
        return self.point(batch, tokens, kv_len).latency_s

    @classmethod
    def from_model(
        cls,
        model: str,
        profiles: Sequence[Any],
        *,
        dtype: str = "bfloat16",
        weight_dtype: str | None = None,
        kv_dtype: str | None = None,
        split: Any = None,
        runtime: str | None = None,
        routing: str | None = None,
        capacity_factor: float | None = None,
    ) -> StepPricer:
        """Price ``model``'s steps on ``profiles`` through :func:`dfx.inference.phases.run_phase`, each
        spread over ``split`` (a chip count or a :class:`dfx.parallel.ParallelPlan`) as ``dfx analyze
        --phase`` does; ``None``: the fewest chips that hold the first step priced, kept for every
        later step (a server's chips do not change with its batch). Groq's and Cerebras' models
        place each step on the chips it needs themselves (``docs/parallel.md``)."""
        from dfx.analysis import evaluate_on
        from dfx.compile.moe import attach_moe, check_capacity_factor, lower_moe
        from dfx.costs.moe import parse_routing
        from dfx.costs.precision import Precision
        from dfx.inference.phases import Phase, PhaseRequest, run_phase
        from dfx.targets import target_for

        precision = Precision.of(dtype, weight_dtype, kv_dtype)
        moe_routing = parse_routing(routing)  # a bad routing file fails before any capture
        factor = check_capacity_factor(capacity_factor)
        box: dict[str, KvGeometry] = {}
        fixed: dict[str, int] = {}  # a server's chips do not change with its batch: the first step's split

        def evaluate(costed: Any, profile: Any) -> Any:
            # MoE layers as the profile's target runs them, as dfx analyze does: a compile-time target
            # computes every expert's fixed capacity (padding), a run-time one the routed rows
            # (dfx.compile.moe.lower_moe); a step of B tokens has capacity ceil(factor B k / E)
            lowered, moe = lower_moe(costed, target_for(profile), moe_routing, factor)
            result = evaluate_on(lowered, profile, split=fixed.get(profile.id, split), runtime=runtime, eager=False)
            return attach_moe(result, lowered, moe)

        def price(batch: int, tokens: int, kv_len: int):
            if kv_len:
                req = PhaseRequest(Phase.DECODE, batch=batch, prompt_len=kv_len, kv_len=kv_len)
            else:
                # every position's logits: a pass's extra tokens are priced as P(B + n) - P(B)
                # (IterationCost.iteration_s), and a speculative draft token needs its LM head row
                # (a prompt's own n - 1 rows are then an overcount, stated in docs/serving.md)
                req = PhaseRequest(Phase.PREFILL, batch=batch, prompt_len=tokens, logits_to_keep=0)
            with warnings.catch_warnings():
                # a grid point (batch 64 at the longest context) may hold more cache than the chips:
                # it is a point to interpolate from, not a state the server runs; the paged cache's
                # capacity, not the point, limits what runs (dfx.serve.api)
                warnings.filterwarnings("ignore", message=".*does not fit.*")
                costed, results, info = run_phase(
                    model, profiles, req, dtype=precision.capture, evaluate=evaluate, precision=precision
                )
            if "g" not in box:
                box["g"] = _geometry(costed, info, precision)
                pricer.geometry = box["g"]
            lat = {}
            for p in profiles:
                m = info.metrics(p.id)
                lat[p.id] = m.tpot_s if kv_len else m.ttft_s
            chips = {p.id: int(r.extras["chips"]) for p, r in zip(profiles, results)}
            if split is None:
                for pid, c in chips.items():
                    fixed.setdefault(pid, c)
            return lat, chips

        key = f"{model}|{precision.to_dict()}|split={split}|runtime={runtime}|routing={moe_routing}|cf={factor}|"
        key += ",".join(p.id for p in profiles)
        pricer = cls(price, [p.id for p in profiles], key)
        return pricer


def _geometry(costed: Any, info: Any, precision: Any) -> KvGeometry:
    """KV bytes per token from the captured step's geometry; weights at ``precision``; peak activations."""
    from dfx.arch.memory.lifetime import peak_live_bytes

    per_token = info.kv_bytes_per_token  # MLA's latent where the model has one
    peak = peak_live_bytes(costed.graph, {n.name: n.category.value for n in costed.nodes})
    return KvGeometry(per_token, int(precision.weight_bytes(costed)), int(peak))


def refine(
    f: Callable[[int], Mapping[str, float]],
    lo: int,
    hi: int,
    tol: float = DEFAULT_TOL,
    *,
    quantum: int = 1,
    max_depth: int = MAX_DEPTH,
    residual: list[float] | None = None,
    on_chord: set[int] | None = None,
) -> dict[int, Mapping[str, float]]:
    """``f`` at the few points of ``[lo, hi]`` that keep linear interpolation of every value it
    returns within ``tol`` (relative) at each midpoint tested.

    Both ends are evaluated; an interval whose midpoint (rounded to a multiple of ``quantum``) lies
    off the chord by more than ``tol`` is split there, recursively, at most ``max_depth`` levels
    deep. For a convex piecewise-linear ``f`` (a roofline's ``max`` of affine terms), a midpoint on
    the chord means the interval is affine; otherwise the test is a check, not a proof. Where an
    interval stops unresolved (too deep, or no multiple of ``quantum`` inside), its midpoint's
    relative deviation is appended to ``residual``; a midpoint found on its chord is added to
    ``on_chord`` (interpolation does not need it).

    Examples
    --------
    >>> sorted(refine(lambda x: {"a": float(x)}, 1, 64))  # affine: the ends and the midpoint tested
    [1, 32, 64]
    >>> sorted(refine(lambda x: {"a": max(10.0, float(x))}, 1, 64, max_depth=8))  # a kink at 10
    [1, 4, 8, 9, 10, 11, 12, 14, 16, 24, 32, 48, 64]
    """
    seen: dict[int, Mapping[str, float]] = {}

    def at(x: int) -> Mapping[str, float]:
        if x not in seen:
            seen[x] = f(x)
        return seen[x]

    def off_by(a: int, m: int, b: int) -> float:
        fa, fb, fm = at(a), at(b), at(m)
        w = (m - a) / (b - a)
        return max(abs(fm[k] - (fa[k] + (fb[k] - fa[k]) * w)) / abs(fm[k]) if fm[k] else 0.0 for k in fm)

    def go(a: int, b: int, depth: int) -> None:
        m = round((a + b) / 2 / quantum) * quantum
        if not a < m < b:
            return
        err = off_by(a, m, b)
        if err <= tol:
            if on_chord is not None:
                on_chord.add(m)
            return
        if depth >= max_depth:
            if residual is not None:
                residual.append(err)
            return
        go(a, m, depth + 1)
        go(m, b, depth + 1)

    at(lo)
    at(hi)
    go(lo, hi, 1)
    return seen


def _lerp(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Piecewise-linear ``y(x)`` through ``(xs, ys)`` (sorted xs), extended linearly past both ends."""
    if len(xs) == 1:
        return ys[0]
    i = min(max(bisect.bisect_right(xs, x) - 1, 0), len(xs) - 2)
    x0, x1 = xs[i], xs[i + 1]
    return ys[i] + (ys[i + 1] - ys[i]) * (x - x0) / (x1 - x0)


class IterationCost:
    """What the schedulers ask of a machine: the time of an iteration (s).

    Subclasses give :meth:`decode_line` (``D(B, K) = a + s K`` near ``K``), :meth:`prefill_s`
    (``P(n)``, ``P(0) = 0``) and :meth:`batch_prefill_s` (``batch`` prompts of ``tokens`` each, as a
    compiled static batch runs them); :meth:`iteration_s` combines them (module docstring).
    """

    def decode_line(self, batch: int, kv_tokens: float) -> tuple[float, float]:
        raise NotImplementedError

    def prefill_s(self, tokens: int) -> float:
        raise NotImplementedError

    def batch_prefill_s(self, batch: int, tokens: int) -> float:
        raise NotImplementedError

    def decode_s(self, batch: int, kv_tokens: float) -> float:
        if batch <= 0:
            return 0.0
        a, s = self.decode_line(batch, kv_tokens)
        return a + s * kv_tokens

    def iteration_s(self, batch: int, kv_tokens: float, chunks: Sequence[tuple[int, int]] = ()) -> float:
        """A decode batch of ``batch`` sequences reading ``kv_tokens`` plus prefill ``chunks``
        ``(tokens, cached prefix)``: ``D(B, K) + [P(B + sum t) - P(B)] + sum cross`` (module docstring)."""
        t = self.decode_s(batch, kv_tokens)
        if chunks:
            new = sum(c[0] for c in chunks)
            t += self.prefill_s(batch + new) - (self.prefill_s(batch) if batch else 0.0)
            for tokens, prefix in chunks:
                if prefix:
                    t += max(0.0, self.prefill_s(prefix + tokens) - self.prefill_s(prefix) - self.prefill_s(tokens))
        return t


def _grid_multiple(m: float) -> int:
    """The smallest of 1, 2, 3, 4, 6, 8, 12, 16, ... (``2**k`` and ``3 * 2**(k - 1)``) that is >= ``m``."""
    k = 1
    while True:
        if k >= m:
            return k
        if k >= 2 and k * 3 // 2 >= m:
            return k * 3 // 2
        k *= 2


def _bracket(grid_step: int, x: float) -> tuple[int, ...]:
    """The grid points around ``x`` on ``{1} U {grid_step * m : m = 1, 2, 3, 4, 6, 8, 12, ...}``
    (two points an octave: every one a multiple of ``grid_step``); one point where ``x`` is on it.

    >>> _bracket(64, 1), _bracket(64, 40), _bracket(64, 64), _bracket(64, 130), _bracket(64, 700)
    ((1,), (1, 64), (64,), (128, 192), (512, 768))
    >>> _bracket(128, 5000)
    (4096, 6144)
    """
    if x <= 1:
        return (1,)
    m = _grid_multiple(x / grid_step)
    hi = m * grid_step
    if hi == x:
        return (hi,)
    prev = {1: 0, 2: 1}.get(m, m * 2 // 3 if m % 3 == 0 else m * 3 // 4)  # the grid point below
    return (prev * grid_step if prev else 1, hi)


class StepCosts(IterationCost):
    """One profile's step times (module docstring), priced on demand through ``pricer`` and kept.

    Decode batches are priced at 1 and :data:`BATCH_QUANTUM` times 1, 2, 3, 4, 6, 8, 12, ... (two
    points an octave, each a multiple of the tile), each at every KV length of ``kv_lens`` (fixed at
    construction by :func:`fit_costs`); prompts at 1 token and :data:`PREFILL_QUANTUM` times the same
    multiples. A point is priced the first time an iteration needs a value between
    it and its neighbour, so a lightly loaded server prices small batches only.
    """

    def __init__(
        self,
        pricer: StepPricer,
        profile_id: str,
        kv_lens: Sequence[int],
        residual: float = 0.0,
        tol: float = DEFAULT_TOL,
    ) -> None:
        if len(kv_lens) < 2:
            raise DfxError("StepCosts needs two KV lengths at least")
        self.pricer = pricer
        self.profile_id = profile_id
        self.kv_lens = tuple(sorted(kv_lens))
        self.residual = residual
        self.tol = tol
        self._rows: dict[int, tuple[float, ...]] = {}  # batch -> D at each of kv_lens
        self._prefill: dict[int, float] = {0: 0.0}  # P(0) = 0: an iteration with no tokens costs nothing
        self._lines: dict[tuple[int, int], tuple[float, float]] = {}
        self._small: bool | None = None  # batches below the grid's first multiple: priced at powers of two?

    def _row(self, batch: int) -> tuple[float, ...]:
        if batch not in self._rows:
            self._rows[batch] = tuple(self.pricer.latency(batch, 1, k)[self.profile_id] for k in self.kv_lens)
        return self._rows[batch]

    def price_batch(self, batch: int) -> None:
        """Price decode at exactly ``batch`` (a static batch's compiled size), used from then on."""
        self._row(batch)
        self._lines.clear()

    def _segment(self, mean_kv: float) -> int:
        return min(max(bisect.bisect_right(self.kv_lens, mean_kv) - 1, 0), len(self.kv_lens) - 2)

    def _at_batch(self, batch: int, j: int) -> tuple[float, float]:
        """``(c, m)`` of ``D = c + m * kv_len`` at priced ``batch`` on KV segment ``j``."""
        ks, ys = self.kv_lens, self._row(batch)
        m = (ys[j + 1] - ys[j]) / (ks[j + 1] - ks[j])  # s per cached token of each sequence
        return ys[j] - m * ks[j], m

    def decode_line(self, batch: int, kv_tokens: float) -> tuple[float, float]:
        """``(a, s)``: ``D(batch, K) = a + s K`` near ``K = kv_tokens``, linear in ``batch`` between
        priced batches at the same mean KV length per sequence (``K / batch``)."""
        j = self._segment(kv_tokens / batch if batch else 0.0)
        hit = self._lines.get((batch, j))
        if hit is not None:
            return hit
        pts = (batch,) if batch in self._rows else self._batch_bracket(batch)
        rows = [self._at_batch(b, j) for b in pts]
        c = _lerp(pts, [r[0] for r in rows], batch)
        m = _lerp(pts, [r[1] for r in rows], batch)
        self._lines[(batch, j)] = (c, m / batch)  # m per token of each sequence = m / batch per token read
        return self._lines[(batch, j)]

    def _batch_bracket(self, batch: int) -> tuple[int, ...]:
        """The priced batches around ``batch``: the grid's, and below :data:`BATCH_QUANTUM` powers of
        two where the step is not linear between 1 and the quantum (checked once, at batch 8; for
        hf:llama-2-7b the H100's step is 1.8 % off the line there, Groq's TSP's more)."""
        if not 1 < batch < BATCH_QUANTUM:
            return _bracket(BATCH_QUANTUM, batch)
        if self._small is None:
            lo, mid, hi = self._row(1), self._row(_CHECK_BATCH), self._row(BATCH_QUANTUM)
            w = (_CHECK_BATCH - 1) / (BATCH_QUANTUM - 1)
            self._small = any(abs(m - (a + (b - a) * w)) > self.tol * m for a, m, b in zip(lo, mid, hi))
        if not self._small:
            return (1, BATCH_QUANTUM)
        hi = 1 << (batch - 1).bit_length()
        return (hi,) if hi == batch else (hi // 2, hi)

    def segment_end(self, batch: int, kv_tokens: float) -> float:
        """The mean KV length per sequence where :meth:`decode_line`'s piece ends (``inf``: the last)."""
        j = self._segment(kv_tokens / batch if batch else 0.0)
        return math.inf if j == len(self.kv_lens) - 2 else float(self.kv_lens[j + 1])

    def _p(self, tokens: int) -> float:
        if tokens not in self._prefill:
            self._prefill[tokens] = self.pricer.latency(1, tokens, 0)[self.profile_id]
        return self._prefill[tokens]

    def prefill_s(self, tokens: int) -> float:
        if tokens <= 0:
            return 0.0
        pts = _bracket(PREFILL_QUANTUM, tokens)
        if len(pts) == 1:
            return self._p(pts[0])
        return _lerp(pts, [self._p(n) for n in pts], tokens)

    def batch_prefill_s(self, batch: int, tokens: int) -> float:
        """``batch`` prompts of ``tokens`` each in one pass, priced exactly (once, then kept)."""
        return self.pricer.latency(batch, tokens, 0)[self.profile_id]

    def to_dict(self) -> dict[str, Any]:
        bs = sorted(self._rows)
        ps = sorted(n for n in self._prefill if n)
        return {
            "batches": bs,
            "kv_lens": list(self.kv_lens),
            "decode_s": [list(self._rows[b]) for b in bs],
            "prefill_tokens": ps,
            "prefill_s": [self._prefill[n] for n in ps],
            "max_midpoint_error": self.residual,
        }


def fit_costs(
    pricer: StepPricer, *, max_kv: int, batch: int = BATCH_QUANTUM, tol: float = DEFAULT_TOL
) -> dict[str, StepCosts]:
    """Each profile's :class:`StepCosts`, its KV lengths refined at ``batch`` over multiples of
    :data:`KV_QUANTUM` up to ``max_kv`` (at most :data:`KV_DEPTH` levels of midpoints; a decode
    step is affine in its KV length, docs/inference.md, so the ends and one midpoint usually do).
    """
    residual: list[float] = []
    on_chord: set[int] = set()
    kv_hi = max(2, -(-max_kv // KV_QUANTUM)) * KV_QUANTUM
    got = refine(
        lambda k: pricer.latency(batch, 1, k),
        KV_QUANTUM,
        kv_hi,
        tol,
        quantum=KV_QUANTUM,
        max_depth=KV_DEPTH,
        residual=residual,
        on_chord=on_chord,
    )
    kv_lens = tuple(sorted(set(got) - on_chord))  # a midpoint on its chord is not needed to interpolate
    return {pid: StepCosts(pricer, pid, kv_lens, max(residual, default=0.0), tol) for pid in pricer.profile_ids}
