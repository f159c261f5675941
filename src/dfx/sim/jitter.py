"""Run-time variation: actual duration = predicted duration x a seeded lognormal factor.

The factor ``X = exp(Y)``, ``Y ~ Normal(mu, sigma^2)``, has mean 1 and coefficient of variation
``cv`` (standard deviation / mean) when

    sigma^2 = ln(1 + cv^2)        mu = -sigma^2 / 2

(the lognormal moments ``E[X] = exp(mu + sigma^2/2)`` and ``Var[X] = (exp(sigma^2) - 1) E[X]^2``;
e.g. Johnson, Kotz & Balakrishnan, *Continuous Univariate Distributions* vol. 1, ch. 14). A
lognormal is positive and right-skewed, as run times are: a node can be much slower than
predicted but never take negative time. Draws come from Python's ``random.Random(seed)``, so a seed
gives the same factors on every platform; run ``r`` uses the ``r``-th block of ``n`` draws.
"""

from __future__ import annotations

import math
import random
from typing import Iterator, Sequence

__all__ = ["jittered_durations", "lognormal_params"]


def lognormal_params(cv: float) -> tuple[float, float]:
    """``(mu, sigma)`` of the normal whose exponential has mean 1 and coefficient of variation ``cv``.

    Examples
    --------
    >>> mu, sigma = lognormal_params(0.0)
    >>> mu, sigma
    (-0.0, 0.0)
    """
    var = math.log1p(cv * cv)
    return -var / 2.0, math.sqrt(var)


def jittered_durations(duration_s: Sequence[float], cv: float, runs: int, seed: int) -> Iterator[list[float]]:
    """Yield ``runs`` lists of actual durations: each predicted duration times its own factor.

    With ``cv == 0`` every run is the prediction itself (no draw is made).
    """
    if cv == 0:
        for _ in range(runs):
            yield list(duration_s)
        return
    rng = random.Random(seed)
    mu, sigma = lognormal_params(cv)
    draw = rng.lognormvariate
    for _ in range(runs):
        yield [d * draw(mu, sigma) for d in duration_s]
