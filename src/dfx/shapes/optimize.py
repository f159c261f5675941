"""The K buckets that minimise total padded cost over a set of lengths, exactly.

Sort the distinct lengths ``v_1 < ... < v_n`` with counts ``c_i`` and prefix counts
``P_j = c_1 + ... + c_j``. An optimal bucket set uses only data lengths (shrinking a bucket to the
largest length it holds never costs more when cost is non-decreasing) and must include ``v_n``.
With ``w(b)`` the cost of one input padded to ``b``, the dynamic program over groups is::

    f_k(j) = min_{i<j} f_{k-1}(i) + w(v_j) * (P_j - P_i)      f_0(0) = 0

``O(K * n**2)`` as written. Each term is a line in ``x = w(v_j)`` with slope ``-P_i`` (decreasing in
``i``) and the queries ``w(v_j)`` are non-decreasing in ``j``, so a monotone convex-hull trick
evaluates every layer in ``O(n)``: the whole optimisation is ``O(K * n)`` after sorting.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from dfx.errors import DfxError

__all__ = ["optimal_buckets", "brute_force_buckets", "total_cost"]


# K layers of the dynamic programme, each one pass over the distinct lengths: 20 million steps is
# about 20 s of CPU here.
OPTIMIZE_BUDGET = 20_000_000


def total_cost(lengths: Sequence[int], buckets: Sequence[int], weight: Callable[[int], float]) -> float:
    """``sum(weight(b(s)))`` over ``lengths``, ``b(s)`` the smallest bucket >= s."""
    bs = sorted(buckets)
    return sum(weight(next(b for b in bs if b >= s)) for s in lengths)


def optimal_buckets(lengths: Sequence[int], k: int, weight: Callable[[int], float] = float) -> tuple[int, ...]:
    """The at most ``k`` buckets minimising ``sum(weight(b(s)))``; ``weight`` must be non-decreasing.

    With fewer than ``k`` distinct lengths, every distinct length is a bucket (zero waste).

    Examples
    --------
    >>> optimal_buckets([1, 2, 3, 10], 2)  # {3, 10}: 3+3+3+10 = 19 beats {1,10}: 1+10+10+10
    (3, 10)
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DfxError(f"--optimize K needs an integer K >= 1, got {k!r}")
    counts = sorted(Counter(lengths).items())
    if not counts:
        raise DfxError("no lengths to optimise buckets for")
    values = [v for v, _ in counts]
    if len(values) <= k:
        return tuple(values)
    if k * len(values) > OPTIMIZE_BUDGET:
        raise DfxError(
            f"--optimize {k} over {len(values):,} distinct lengths is {k * len(values):,} steps, beyond "
            f"dfx's budget of {OPTIMIZE_BUDGET:,}; give a smaller K"
        )
    w = [float(weight(v)) for v in values]
    if any(b < a for a, b in zip(w, w[1:])):
        raise DfxError("the bucket cost must not decrease with length; the optimiser's exactness depends on it")
    prefix = [0]
    for _, c in counts:
        prefix.append(prefix[-1] + c)
    return tuple(values[j - 1] for j in _solve(w, prefix, k))


def _solve(w: list[float], prefix: list[int], k: int) -> list[int]:
    """Run the K layers of the DP; return the chosen group ends (1-based indices into the values)."""
    n = len(w)
    inf = float("inf")
    f = [0.0] + [inf] * n  # f_0
    parents: list[list[int]] = []
    for _ in range(k):
        f, parent = _layer(f, w, prefix)
        parents.append(parent)
    # f_k(n) is non-increasing in k, so the k-th layer is optimal for "at most k"; walk back from n
    ends, j = [], n
    for parent in reversed(parents):
        if j == 0:
            break
        ends.append(j)
        j = parent[j]
    return sorted(set(ends))


def _layer(f_prev: list[float], w: list[float], prefix: list[int]) -> tuple[list[float], list[int]]:
    """One DP layer by the monotone convex-hull trick (lines y = f_prev[i] - P_i * x, queries x = w[j-1])."""
    n = len(w)
    inf = float("inf")
    f, parent = [inf] * (n + 1), [0] * (n + 1)
    hull: list[int] = []  # candidate i, slopes -P_i strictly decreasing
    ptr = 0

    def value(i: int, x: float) -> float:
        return f_prev[i] - prefix[i] * x

    def useless(a: int, b: int, c: int) -> bool:
        # b is never the minimum between a and c (intersection test, exact in floats for our sizes)
        return (f_prev[c] - f_prev[a]) * (prefix[b] - prefix[a]) <= (f_prev[b] - f_prev[a]) * (prefix[c] - prefix[a])

    for j in range(1, n + 1):
        i = j - 1
        if f_prev[i] < inf:
            while len(hull) >= 2 and useless(hull[-2], hull[-1], i):
                hull.pop()
            hull.append(i)
            ptr = min(ptr, len(hull) - 1)
        if not hull:
            continue
        x = w[j - 1]
        while ptr + 1 < len(hull) and value(hull[ptr + 1], x) <= value(hull[ptr], x):
            ptr += 1
        best = hull[ptr]
        f[j] = value(best, x) + prefix[j] * x
        parent[j] = best
    return f, parent


def brute_force_buckets(lengths: Sequence[int], k: int, weight: Callable[[int], float] = float) -> float:
    """The minimum of :func:`total_cost` over every set of at most ``k`` distinct lengths containing the max.

    Exponential; for tests on small inputs only.
    """
    from itertools import combinations

    values = sorted(set(lengths))
    top, rest = values[-1], values[:-1]
    best = float("inf")
    for r in range(0, min(k - 1, len(rest)) + 1):
        for combo in combinations(rest, r):
            best = min(best, total_cost(lengths, (*combo, top), weight))
    return best
