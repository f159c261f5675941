"""Small statistics shared by the simulator and the validation: one percentile definition."""

from __future__ import annotations

import math
from typing import Iterable

__all__ = ["percentile"]


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks.

    The rank of ``q`` in the sorted values is ``q / 100 * (n - 1)``, numpy's default
    (``method="linear"``).

    Raises
    ------
    ValueError
        If there are no values.

    Examples
    --------
    >>> percentile([4.0, 1.0, 3.0, 2.0], 50)
    2.5
    >>> percentile([0.0, 10.0], 95)
    9.5
    >>> percentile([1.0, 2.0, 3.0, 4.0, 5.0], 90)
    4.6
    """
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    rank = q / 100.0 * (len(xs) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)
