"""Requests for a serving run: when each arrives and how long its prompt and output are.

Arrivals (one of them)::

    --rate R          Poisson arrivals at R requests/s: gaps ~ Exponential(R), seeded (vLLM's and SGLang's
                      benchmark_serving.py --request-rate draw the same way)
    --concurrency C   a closed loop: C users, each sends its next request when its last one finishes
    --requests N      all N at t = 0 (offline, "--request-rate inf" in the same scripts)

Lengths (``--input-len``, ``--output-len``), one of::

    512                  every request the same
    256:1024             uniform integers in [LO, HI]
    lognormal:MEAN,SIGMA a lognormal with mean MEAN tokens and log-space spread SIGMA:
                         mu = ln(MEAN) - SIGMA**2 / 2, so E[length] = MEAN; each draw is ceil'd, >= 1
    uniform:LO:HI, normal:MEAN:STD, lognormal:MU:SIGMA, zipf:S:MAX
                         dfx.shapes.dist's grammar (docs/shapes.md)
    file:PATH            one integer a line (or separated by commas/spaces), drawn in order, cycled

Published traces: ShareGPT, the chat trace vLLM's and SGLang's benchmarks use, averages 161.31 input
and 337.99 output tokens per request over its conversations (Kwon et al., "Efficient Memory
Management for Large Language Model Serving with PagedAttention", SOSP 2023, section 6.1 and
Figure 11, OPT tokenizer); SGLang's v0.3.0 table (sgl-project/sglang
``benchmark/benchmark_vllm_060/README.md``) serves 5,000 ShareGPT prompts at 19.84 requests/s and
3,856.01 output tokens/s, i.e. 194.4 output tokens per request under its sampler (first turn,
Llama-3 tokenizer). Neither gives the spread; ``lognormal:MEAN,SIGMA`` takes it from the user.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from dfx.errors import DfxError
from dfx.limits import MAX_SEQ

__all__ = ["Arrivals", "LengthSpec", "Request", "make_requests", "parse_lengths"]

MAX_REQUESTS = 1_000_000  # a budget: a million requests simulate in about a minute here
DEFAULT_REQUESTS = 1000  # requests drawn under --rate or --concurrency when --num-prompts is not given
_GRAMMAR = (
    "a length (512), a range LO:HI, lognormal:MEAN,SIGMA, uniform:LO:HI, normal:MEAN:STD, lognormal:MU:SIGMA, "
    "zipf:S:MAX or file:PATH"
)


@dataclass(frozen=True)
class Request:
    """One request: its index, arrival time (s) and lengths (tokens). ``arrival_s`` is ``None`` in a
    closed loop, where a request is sent when its user's previous one finishes."""

    index: int
    arrival_s: float | None
    prompt_len: int
    output_len: int


@dataclass(frozen=True)
class LengthSpec:
    """A parsed length spec: ``fixed`` (a), ``range`` (a..b), ``lognormal_mean`` (mean a, sigma b),
    ``dist`` (``text`` in dfx.shapes.dist's grammar) or ``file`` (``values``)."""

    kind: str
    text: str
    a: float = 0.0
    b: float = 0.0
    values: tuple[int, ...] = ()

    def draw(self, n: int, rng: random.Random) -> list[int]:
        """``n`` lengths, each an integer in ``[1, MAX_SEQ]``."""
        if self.kind == "fixed":
            return [int(self.a)] * n
        if self.kind == "range":
            return [rng.randint(int(self.a), int(self.b)) for _ in range(n)]
        if self.kind == "lognormal_mean":
            mu = math.log(self.a) - self.b**2 / 2  # E[exp(N(mu, s))] = exp(mu + s^2 / 2) = MEAN
            return [min(MAX_SEQ, max(1, math.ceil(rng.lognormvariate(mu, self.b)))) for _ in range(n)]
        if self.kind == "file":
            return [self.values[i % len(self.values)] for i in range(n)]
        from dfx.shapes.dist import sample_lengths

        return [min(MAX_SEQ, v) for v in sample_lengths(self.text, samples=n, seed=rng.randrange(2**31))]


def _positive_int(text: str, option: str, spec: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise DfxError(f"bad {option} {spec!r}; expected {_GRAMMAR}") from None
    if not 1 <= value <= MAX_SEQ:
        raise DfxError(f"bad {option} {spec!r}: lengths must be whole numbers in 1..{MAX_SEQ:,}")
    return value


def _read_file(path_text: str, option: str) -> tuple[int, ...]:
    path = Path(path_text)
    if not path.is_file():
        raise DfxError(f"{option} file:{path_text}: no such file; give a file of lengths, one integer a line")
    try:
        words = path.read_text(encoding="utf-8").replace(",", " ").split()
    except (OSError, UnicodeDecodeError) as exc:
        raise DfxError(f"{option} file:{path_text}: cannot read it ({type(exc).__name__}); give a text file") from None
    if not words:
        raise DfxError(f"{option} file:{path_text} holds no lengths; give one positive integer a line")
    out = []
    for i, w in enumerate(words):
        if not w.isdigit() or not 1 <= int(w) <= MAX_SEQ:
            raise DfxError(
                f"{option} file:{path_text}: entry {i + 1} is {w!r}; every entry must be a whole number in 1..{MAX_SEQ:,}"
            )
        out.append(int(w))
    return tuple(out)


def parse_lengths(spec: str | int, option: str = "--input-len") -> LengthSpec:
    """Parse a length spec (module docstring).

    Raises
    ------
    DfxError
        A spec outside the grammar, a length outside ``1..MAX_SEQ``, a range with LO > HI, a
        lognormal with a mean below 1 or a negative spread, a missing or malformed file.

    Examples
    --------
    >>> parse_lengths("512").kind, parse_lengths("128:512").b
    ('fixed', 512)
    >>> parse_lengths("lognormal:194,1.0").kind
    'lognormal_mean'
    """
    if isinstance(spec, bool):
        raise DfxError(f"bad {option} {spec!r}; expected {_GRAMMAR}")
    if isinstance(spec, int):
        spec = str(spec)
    text = str(spec).strip()
    low = text.lower()
    if low.startswith("file:"):
        values = _read_file(text[5:], option)
        return LengthSpec("file", text, values=values)
    if low.startswith("lognormal:") and "," in low:
        parts = low[len("lognormal:") :].split(",")
        try:
            mean, sigma = (float(p) for p in parts)
        except ValueError:
            raise DfxError(
                f"bad {option} {text!r}; lognormal:MEAN,SIGMA takes two numbers, e.g. lognormal:194,1.0"
            ) from None
        if not (math.isfinite(mean) and math.isfinite(sigma)) or mean < 1 or sigma < 0:
            raise DfxError(f"bad {option} {text!r}; lognormal:MEAN,SIGMA needs MEAN >= 1 token and SIGMA >= 0")
        return LengthSpec("lognormal_mean", text, mean, sigma)
    if low.split(":")[0] in ("uniform", "normal", "lognormal", "zipf"):
        from dfx.shapes.dist import parse_dist

        try:
            parse_dist(text)
        except DfxError as exc:
            raise DfxError(f"bad {option} {text!r}: {exc}") from None
        return LengthSpec("dist", text)
    if ":" in text:
        lo_text, _, hi_text = text.partition(":")
        lo, hi = _positive_int(lo_text, option, text), _positive_int(hi_text, option, text)
        if lo > hi:
            raise DfxError(f"bad {option} {text!r}: the range LO:HI needs LO <= HI")
        return LengthSpec("range", text, lo, hi)
    return LengthSpec("fixed", text, _positive_int(text, option, text))


@dataclass(frozen=True)
class Arrivals:
    """How requests arrive: ``rate`` (req/s, Poisson), ``concurrency`` (closed loop) or offline."""

    rate: float | None = None
    concurrency: int | None = None
    requests: int = DEFAULT_REQUESTS

    @property
    def kind(self) -> str:
        return "poisson" if self.rate is not None else ("closed-loop" if self.concurrency is not None else "offline")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "rate_per_s": self.rate, "concurrency": self.concurrency, "requests": self.requests}


def check_arrivals(arrivals: Arrivals) -> Arrivals:
    """Refuse a rate that is not a positive finite number, a concurrency below 1, a request count
    outside ``1..MAX_REQUESTS``, or a rate given with a concurrency.

    Raises
    ------
    DfxError
        One line naming the value and the fix.
    """
    r, c, n = arrivals.rate, arrivals.concurrency, arrivals.requests
    if r is not None and c is not None:
        raise DfxError("--rate and --concurrency are two ways requests arrive; give one of them")
    if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0):
        raise DfxError(
            f"--rate {r!r}: a request rate must be a positive number of requests/s; "
            "for all requests at once (offline) give --requests N without --rate"
        )
    if c is not None and (isinstance(c, bool) or not isinstance(c, int) or c < 1):
        raise DfxError(f"--concurrency {c!r}: expected a whole number of users >= 1")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REQUESTS:
        raise DfxError(f"--requests {n!r}: expected a whole number in 1..{MAX_REQUESTS:,}")
    return arrivals


def make_requests(
    arrivals: Arrivals, input_len: LengthSpec, output_len: LengthSpec, seed: int = 0
) -> tuple[Request, ...]:
    """The run's requests, drawn with ``random.Random(seed)``: lengths first, then the gaps.

    Examples
    --------
    >>> reqs = make_requests(Arrivals(requests=3), parse_lengths(8), parse_lengths(2))
    >>> [(r.arrival_s, r.prompt_len, r.output_len) for r in reqs]
    [(0.0, 8, 2), (0.0, 8, 2), (0.0, 8, 2)]
    """
    check_arrivals(arrivals)
    rng = random.Random(seed)
    n = arrivals.requests
    prompts = input_len.draw(n, rng)
    outputs = output_len.draw(n, rng)
    if arrivals.rate is not None:
        t, times = 0.0, []
        for _ in range(n):
            t += rng.expovariate(arrivals.rate)
            times.append(t)
    elif arrivals.concurrency is not None:
        times = [None] * n
    else:
        times = [0.0] * n
    return tuple(Request(i, times[i], prompts[i], outputs[i]) for i in range(n))


def lengths_of(requests: Sequence[Request]) -> tuple[int, int]:
    """The longest prompt and the longest context (prompt + output) among ``requests``."""
    return max(r.prompt_len for r in requests), max(r.prompt_len + r.output_len for r in requests)
