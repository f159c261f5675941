"""Pad each length to the smallest bucket that holds it, and count what the padding costs.

For a sorted bucket set B and a length s, ``b(s) = min{b in B : b >= s}`` (``bisect_left``, as
vLLM's TPU runner does). Token waste is ``sum(b(s) - s) / sum(b(s))``. With a
:class:`~dfx.shapes.cost.ModelCost`, each padded input costs the model's FLOPs and time at ``b(s)``
(exact: analysed at every bucket) and its useful part is the cost at ``s`` (the fit where ``s`` was
not analysed), so attention's quadratic growth makes FLOP waste differ from token waste.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Sequence

from dfx.errors import DfxError
from dfx.limits import MAX_DIM
from dfx.schema.ids import BUCKETS_SCHEMA
from dfx.shapes.cost import ModelCost

__all__ = [
    "BucketRow",
    "BucketPlan",
    "check_buckets",
    "check_lengths",
    "pieces",
    "plan",
    "pow2_ladder",
    "linear_ladder",
]

OVERFLOW_MODES = ("error", "split")


@dataclass(frozen=True)
class BucketRow:
    """One bucket: how many inputs it got, their tokens, and (with a model) their cost."""

    size: int
    count: int
    tokens: int
    padded_tokens: int
    padded_flops: float | None = None
    useful_flops: float | None = None
    time_s: float | None = None
    useful_time_s: float | None = None

    @property
    def waste_tokens(self) -> int:
        return self.padded_tokens - self.tokens

    @property
    def waste_fraction(self) -> float:
        return self.waste_tokens / self.padded_tokens if self.padded_tokens else 0.0

    def to_dict(self) -> dict:
        d = {
            "size": self.size,
            "count": self.count,
            "tokens": self.tokens,
            "padded_tokens": self.padded_tokens,
            "waste_tokens": self.waste_tokens,
            "waste_fraction": self.waste_fraction,
        }
        if self.padded_flops is not None:
            d.update(
                padded_flops=self.padded_flops,
                useful_flops=self.useful_flops,
                waste_flops=self.padded_flops - self.useful_flops,
                time_s=self.time_s,
                useful_time_s=self.useful_time_s,
            )
        return d


@dataclass(frozen=True)
class BucketPlan:
    """Lengths padded to ``buckets``: per-bucket rows and totals (``to_dict`` is ``dfx.buckets/1``).

    ``graphs`` is ``len(buckets)``: every bucket is compiled at warm-up whether or not an input
    lands in it; ``graphs_used`` counts buckets that got at least one input.
    """

    buckets: tuple[int, ...]
    rows: tuple[BucketRow, ...]
    method: str = "given"
    overflow: str = "error"
    lengths: int = 0
    split_inputs: int = 0
    cost: ModelCost | None = None
    compare: BucketPlan | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def items(self) -> int:
        return sum(r.count for r in self.rows)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.rows)

    @property
    def padded_tokens(self) -> int:
        return sum(r.padded_tokens for r in self.rows)

    @property
    def waste_tokens(self) -> int:
        return self.padded_tokens - self.tokens

    @property
    def waste_fraction(self) -> float:
        return self.waste_tokens / self.padded_tokens if self.padded_tokens else 0.0

    @property
    def graphs(self) -> int:
        return len(self.buckets)

    def _sum(self, attr: str) -> float:
        return sum(getattr(r, attr) for r in self.rows)

    def to_dict(self) -> dict:
        d = {
            "schema": BUCKETS_SCHEMA,
            "method": self.method,
            "objective": "flops" if self.cost else "tokens",
            "buckets": list(self.buckets),
            "overflow": self.overflow,
            "lengths": self.lengths,
            "inputs": self.items,
            "split_inputs": self.split_inputs,
            "tokens": self.tokens,
            "padded_tokens": self.padded_tokens,
            "waste_tokens": self.waste_tokens,
            "waste_fraction": self.waste_fraction,
            "graphs": self.graphs,
            "graphs_used": sum(1 for r in self.rows if r.count),
            "per_bucket": [r.to_dict() for r in self.rows],
        }
        if self.cost is not None:
            padded, useful = self._sum("padded_flops"), self._sum("useful_flops")
            d.update(
                model=self.cost.to_dict(),
                padded_flops=padded,
                useful_flops=useful,
                waste_flops=padded - useful,
                waste_flops_fraction=(padded - useful) / padded if padded else 0.0,
                predicted_time_s=self._sum("time_s"),
                useful_time_s=self._sum("useful_time_s"),
            )
        if self.compare is not None:
            d["compare"] = {k: v for k, v in self.compare.to_dict().items() if k not in ("schema", "model", "compare")}
        if self.notes:
            d["notes"] = list(self.notes)
        return d


# Budgets: a length or bucket is a tensor dimension (at most 2**31 - 1, dfx.limits.MAX_DIM); a run
# takes at most a million lengths (drawing them takes about 3 s of CPU here) and a ladder at most
# 100,000 buckets (each is a graph to compile; no deployment compiles that many).
MAX_LENGTHS = 1_000_000
MAX_BUCKETS = 100_000


def check_buckets(buckets: Sequence[int]) -> tuple[int, ...]:
    """The buckets as a tuple; a :class:`DfxError` unless non-empty, positive and strictly increasing."""
    b = tuple(buckets)
    if not b:
        raise DfxError("--buckets is empty; give sizes such as 128,256,512")
    if any(isinstance(x, bool) or not isinstance(x, int) or x <= 0 for x in b):
        raise DfxError(f"--buckets must be positive integers, got {_shown(b)}")
    if max(b) > MAX_DIM:
        raise DfxError(f"bucket {max(b):.3g} is above dfx's limit of {MAX_DIM:,} (2**31 - 1); give smaller buckets")
    if len(b) > MAX_BUCKETS:
        raise DfxError(f"{len(b):,} buckets is beyond dfx's budget of {MAX_BUCKETS:,}; give fewer")
    if any(x >= y for x, y in zip(b, b[1:])):
        raise DfxError(f"--buckets must be strictly increasing, got {_shown(b)}; sort them")
    return b


def check_lengths(lengths: Sequence[int]) -> tuple[int, ...]:
    """The lengths as a tuple; a :class:`DfxError` unless non-empty and all positive integers."""
    ls = tuple(lengths)
    if not ls:
        raise DfxError("no lengths given; --lengths FILE needs one integer a line, or use --dist SPEC")
    bad = [x for x in ls if isinstance(x, bool) or not isinstance(x, int) or x <= 0]
    if bad:
        raise DfxError(f"lengths must be positive integers; got {_shown(bad[:1])} ({len(bad)} bad of {len(ls)})")
    if len(ls) > MAX_LENGTHS:
        raise DfxError(f"{len(ls):,} lengths is beyond dfx's budget of {MAX_LENGTHS:,}; give a sample of them")
    if max(ls) > MAX_DIM:
        raise DfxError(f"length {max(ls):.3g} is above dfx's limit of {MAX_DIM:,} (2**31 - 1); give real lengths")
    return ls


def _shown(values: Sequence) -> str:
    """Values for a message, huge ones in short form, at most 8 of them."""
    parts = [f"{v:.3g}" if isinstance(v, int) and abs(v) > 10**12 else repr(v) for v in values[:8]]
    return ",".join(parts) + (",..." if len(values) > 8 else "")


def pieces(lengths: Sequence[int], largest: int, overflow: str) -> tuple[list[int], int]:
    """Lengths as the inputs the buckets see, and how many inputs were split.

    ``overflow="split"`` cuts a length ``L > largest`` into ``L // largest`` full pieces plus the
    remainder; ``"error"`` refuses it.
    """
    if overflow not in OVERFLOW_MODES:
        raise DfxError(f"--overflow must be error or split, got {overflow!r}")
    too_long = [s for s in lengths if s > largest]
    if too_long and overflow == "error":
        raise DfxError(
            f"{len(too_long)} length(s) exceed the largest bucket {largest} (longest {max(too_long)}); "
            "add a bigger bucket or pass --overflow split"
        )
    out: list[int] = []
    for s in lengths:
        full, rest = divmod(s, largest) if s > largest else (0, s)
        out += [largest] * full + ([rest] if rest else [])
    return out, len(too_long)


def plan(
    lengths: Sequence[int],
    buckets: Sequence[int],
    *,
    overflow: str = "error",
    cost: ModelCost | None = None,
    method: str = "given",
) -> BucketPlan:
    """Pad every length to its bucket and total the waste.

    Examples
    --------
    >>> p = plan([100, 130, 300, 512], [128, 256, 512])
    >>> p.padded_tokens, p.waste_tokens  # 128 + 256 + 512 + 512; 28 + 126 + 212 + 0
    (1408, 366)
    """
    b = check_buckets(buckets)
    ls = check_lengths(lengths)
    inputs, split = pieces(ls, b[-1], overflow)
    by_bucket: dict[int, list[int]] = defaultdict(list)
    for s in inputs:
        by_bucket[b[bisect.bisect_left(b, s)]].append(s)
    rows = tuple(_row(size, by_bucket.get(size, []), cost) for size in b)
    return BucketPlan(b, rows, method=method, overflow=overflow, lengths=len(ls), split_inputs=split, cost=cost)


def _row(size: int, members: list[int], cost: ModelCost | None) -> BucketRow:
    row = BucketRow(size, len(members), sum(members), size * len(members))
    if cost is None:
        return row
    return replace(
        row,
        padded_flops=len(members) * cost.flops(size) if members else 0.0,
        useful_flops=sum(cost.flops(s) for s in members),
        time_s=len(members) * cost.time_s(size) if members else 0.0,
        useful_time_s=sum(cost.time_s(s) for s in members),
    )


def pow2_ladder(lengths: Sequence[int]) -> tuple[int, ...]:
    """Powers of two from the smallest >= min(lengths) to the smallest >= max(lengths).

    Examples
    --------
    >>> pow2_ladder([100, 130, 300, 512])
    (128, 256, 512)
    """
    ls = check_lengths(lengths)
    lo, hi = 1 << (min(ls) - 1).bit_length(), 1 << (max(ls) - 1).bit_length()
    out, b = [], lo
    while b <= hi:
        out.append(b)
        b *= 2
    return tuple(out)


def linear_ladder(lengths: Sequence[int], step: int) -> tuple[int, ...]:
    """``step, 2*step, ...`` up to the first multiple >= max(lengths), skipping those below min(lengths)'s bucket.

    Examples
    --------
    >>> linear_ladder([100, 300], 128)
    (128, 256, 384)
    """
    ls = check_lengths(lengths)
    if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
        raise DfxError(f"linear ladder step must be a positive integer, got {step!r}")
    first = -(-min(ls) // step)  # ceil
    last = -(-max(ls) // step)
    if last - first + 1 > MAX_BUCKETS:
        raise DfxError(
            f"linear:{step} gives {last - first + 1:,} buckets, beyond dfx's budget of {MAX_BUCKETS:,}; "
            "give a larger step"
        )
    return tuple(step * k for k in range(first, last + 1))
