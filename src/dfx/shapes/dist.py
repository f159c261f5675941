"""Length distributions from a one-word spec, sampled with a seed (torch- and numpy-free).

Grammar (case-insensitive family name, numbers separated by ``:``)::

    uniform:LO:HI        integers uniform in [LO, HI], 1 <= LO <= HI
    normal:MEAN:STD      round(N(MEAN, STD)), clipped below at 1
    lognormal:MU:SIGMA   ceil(exp(N(MU, SIGMA))): MU, SIGMA of the log of the length
    zipf:S:MAX           P(k) proportional to k**-S for k in 1..MAX, S > 0

Clipping at 1 keeps every sample a valid (positive) length; it is stated, not silent, here.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass

from dfx.errors import DfxError

__all__ = ["LengthDist", "parse_dist", "sample_lengths"]

_GRAMMAR = "uniform:LO:HI, normal:MEAN:STD, lognormal:MU:SIGMA or zipf:S:MAX"


@dataclass(frozen=True)
class LengthDist:
    """A parsed distribution spec: its family and its two parameters."""

    family: str
    a: float
    b: float

    def spec(self) -> str:
        """The canonical spec string, e.g. ``uniform:1:512``."""
        return f"{self.family}:{_fmt(self.a)}:{_fmt(self.b)}"


# Budgets: draws per run (a million take about 3 s of CPU here) and rows of zipf's inverse-CDF table.
MAX_SAMPLES = 1_000_000
MAX_ZIPF = 10_000_000


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def parse_dist(text: str) -> LengthDist:
    """Parse a distribution spec (see the module docstring for the grammar).

    Examples
    --------
    >>> parse_dist("uniform:1:512")
    LengthDist(family='uniform', a=1.0, b=512.0)
    """
    family, *nums = str(text).strip().lower().split(":")
    if family not in ("uniform", "normal", "lognormal", "zipf") or len(nums) != 2:
        raise DfxError(f"bad --dist {text!r}; expected {_GRAMMAR}")
    try:
        a, b = (float(n) for n in nums)
    except ValueError:
        raise DfxError(f"bad --dist {text!r}; its parameters must be numbers ({_GRAMMAR})") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise DfxError(f"bad --dist {text!r}; parameters must be finite")
    _validate(family, a, b, text)
    return LengthDist(family, a, b)


def _validate(family: str, a: float, b: float, text: str) -> None:
    if family == "uniform" and not (a.is_integer() and b.is_integer() and 1 <= a <= b):
        raise DfxError(f"bad --dist {text!r}; uniform needs integers 1 <= LO <= HI")
    if family in ("normal", "lognormal") and b < 0:
        raise DfxError(f"bad --dist {text!r}; the standard deviation must be >= 0")
    if family == "zipf" and not (a > 0 and b.is_integer() and b >= 1):
        raise DfxError(f"bad --dist {text!r}; zipf needs S > 0 and an integer MAX >= 1")
    if family == "zipf" and b > MAX_ZIPF:
        raise DfxError(f"bad --dist {text!r}; zipf's MAX is at most {MAX_ZIPF:,} (its table has MAX rows)")


def sample_lengths(dist: LengthDist | str, samples: int = 1000, seed: int = 0) -> tuple[int, ...]:
    """Draw ``samples`` positive integer lengths from ``dist`` with ``random.Random(seed)``.

    Examples
    --------
    >>> lengths = sample_lengths("uniform:1:4", samples=100, seed=1)
    >>> min(lengths) >= 1 and max(lengths) <= 4
    True
    """
    d = parse_dist(dist) if isinstance(dist, str) else dist
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise DfxError(f"--samples must be an integer >= 1, got {samples!r}")
    if samples > MAX_SAMPLES:
        raise DfxError(f"--samples {samples:,} is beyond dfx's budget of {MAX_SAMPLES:,} draws; give fewer")
    try:
        return _draw(d, samples, random.Random(seed))
    except OverflowError:
        raise DfxError(f"--dist {d.spec()} draws lengths too large for a float; give smaller parameters") from None


def _draw(d: LengthDist, samples: int, rng: random.Random) -> tuple[int, ...]:
    if d.family == "uniform":
        return tuple(rng.randint(int(d.a), int(d.b)) for _ in range(samples))
    if d.family == "normal":
        return tuple(max(1, round(rng.gauss(d.a, d.b))) for _ in range(samples))
    if d.family == "lognormal":
        return tuple(max(1, math.ceil(rng.lognormvariate(d.a, d.b))) for _ in range(samples))
    return _zipf(rng, d.a, int(d.b), samples)


def _zipf(rng: random.Random, s: float, max_len: int, samples: int) -> tuple[int, ...]:
    # inverse CDF over k = 1..MAX with weights k**-s
    cdf = list(itertools.accumulate(k**-s for k in range(1, max_len + 1)))
    total = cdf[-1]
    return tuple(min(max_len, bisect.bisect_left(cdf, rng.random() * total) + 1) for _ in range(samples))
