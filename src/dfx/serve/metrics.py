"""Serving metrics as vLLM's and SGLang's ``benchmark_serving.py`` define them, per machine.

Per request::

    ttft_s = first token - arrival          (time to first token; queueing included)
    tpot_s = (last token - first token) / (output_len - 1)     (requests with output_len > 1)
    e2e_s  = last token - arrival

Per run: ``duration_s`` from time 0 (the first arrival's clock) to the last token;
``requests_per_s = N / duration_s``; ``output_tokens_per_s = sum(output_len) / duration_s``;
``goodput_per_s``: requests/s that meet every SLO given (DistServe's goodput, Zhong et al., OSDI
2024); percentiles by :func:`dfx.stats.percentile` (numpy's linear method, as the scripts use).
Occupancy over time: the batch (sequences in an iteration) and the KV cache's used fraction,
averaged over time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from dfx.stats import percentile

__all__ = ["Percentiles", "ServingSummary", "Timeline", "summarize", "bin_timeline"]

TIMELINE_BINS = 1000  # rows of the timeline kept in a document: time bins, time-weighted


@dataclass(frozen=True)
class Percentiles:
    """Mean, p50, p90, p99 of one per-request metric (s)."""

    mean: float
    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles | None:
        if not values:
            return None
        return cls(sum(values) / len(values), percentile(values, 50), percentile(values, 90), percentile(values, 99))

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "p50": self.p50, "p90": self.p90, "p99": self.p99}


@dataclass(frozen=True)
class Timeline:
    """Time bins: start (s), time-weighted mean batch, mean KV-cache occupancy (0..1, ``None`` where
    the scheduler has no paged cache), and the most requests waiting."""

    t_s: tuple[float, ...]
    batch: tuple[float, ...]
    kv_occupancy: tuple[float | None, ...]
    waiting: tuple[int, ...]

    def to_dict(self) -> dict[str, list]:
        return {
            "t_s": list(self.t_s),
            "batch": list(self.batch),
            "kv_occupancy": list(self.kv_occupancy),
            "waiting": list(self.waiting),
        }


@dataclass(frozen=True)
class ServingSummary:
    """One machine's run, summarized (module docstring)."""

    requests: int
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    input_tokens_per_s: float
    ttft_s: Percentiles
    tpot_s: Percentiles | None
    e2e_s: Percentiles
    goodput_per_s: float | None
    slo: Mapping[str, float]
    mean_batch: float
    mean_kv_occupancy: float | None
    peak_waiting: int
    preemptions: int
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "duration_s": self.duration_s,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "input_tokens_per_s": self.input_tokens_per_s,
            "ttft_s": self.ttft_s.to_dict(),
            "tpot_s": self.tpot_s.to_dict() if self.tpot_s else None,
            "e2e_s": self.e2e_s.to_dict(),
            "goodput_per_s": self.goodput_per_s,
            "slo": dict(self.slo),
            "mean_batch": self.mean_batch,
            "mean_kv_occupancy": self.mean_kv_occupancy,
            "peak_waiting": self.peak_waiting,
            "preemptions": self.preemptions,
            **dict(self.extra),
        }


def per_request(
    arrival: Sequence[float], first: Sequence[float], finish: Sequence[float], outputs: Sequence[int]
) -> tuple[list[float], list[float], list[float]]:
    """TTFT, TPOT (requests with more than one output token) and end-to-end latency, each in s."""
    ttft = [f - a for a, f in zip(arrival, first)]
    e2e = [z - a for a, z in zip(arrival, finish)]
    tpot = [(z - f) / (o - 1) for f, z, o in zip(first, finish, outputs) if o > 1]
    return ttft, tpot, e2e


def summarize(
    arrival: Sequence[float],
    first: Sequence[float],
    finish: Sequence[float],
    prompts: Sequence[int],
    outputs: Sequence[int],
    rows: Sequence[tuple[float, float, float, float | None, int]],
    *,
    slo: Mapping[str, float] | None = None,
    preemptions: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> ServingSummary:
    """The summary of one run: per-request times, and timeline ``rows`` of ``(start_s, end_s,
    batch, kv_occupancy or None, waiting)``."""
    slo = dict(slo or {})
    ttft, tpot, e2e = per_request(arrival, first, finish, outputs)
    duration = max(finish) if finish else 0.0
    n = len(arrival)
    good = None
    if slo:
        inf = float("inf")
        t_max, p_max, e_max = (slo[k] if k in slo else inf for k in ("ttft_s", "tpot_s", "e2e_s"))
        ok = 0
        for i in range(n):
            o = outputs[i]
            p = (finish[i] - first[i]) / (o - 1) if o > 1 else 0.0
            ok += ttft[i] <= t_max and p <= p_max and e2e[i] <= e_max
        good = ok / duration if duration > 0 else 0.0
    busy = sum(r[1] - r[0] for r in rows)
    mean_batch = sum((r[1] - r[0]) * r[2] for r in rows) / busy if busy > 0 else 0.0
    kv_rows = [r for r in rows if r[3] is not None]
    mean_kv = sum((r[1] - r[0]) * r[3] for r in kv_rows) / busy if kv_rows and busy > 0 else None
    per_s = 1.0 / duration if duration > 0 else 0.0
    return ServingSummary(
        requests=n,
        duration_s=duration,
        requests_per_s=n * per_s,
        output_tokens_per_s=sum(outputs) * per_s,
        input_tokens_per_s=sum(prompts) * per_s,
        ttft_s=Percentiles.of(ttft),
        tpot_s=Percentiles.of(tpot),
        e2e_s=Percentiles.of(e2e),
        goodput_per_s=good,
        slo=slo,
        mean_batch=mean_batch,
        mean_kv_occupancy=mean_kv,
        peak_waiting=max((r[4] for r in rows), default=0),
        preemptions=preemptions,
        extra=dict(extra or {}),
    )


def bin_timeline(rows: Sequence[tuple[float, float, float, float | None, int]], bins: int = TIMELINE_BINS) -> Timeline:
    """``rows`` as at most ``bins`` equal time bins: time-weighted batch and occupancy, most waiting.

    >>> t = bin_timeline([(0.0, 1.0, 2, 0.5, 0), (1.0, 2.0, 4, None, 3)], bins=2)
    >>> t.batch, t.waiting
    ((2.0, 4.0), (0, 3))
    """
    if not rows:
        return Timeline((), (), (), ())
    end = max(r[1] for r in rows)
    width = end / bins if end > 0 else 1.0
    nb = max(1, min(bins, len(rows)))
    if nb < bins:
        width = end / nb if end > 0 else 1.0
    wsum = [0.0] * nb
    bsum = [0.0] * nb
    ksum = [0.0] * nb
    kw = [0.0] * nb
    wait = [0] * nb
    for start, stop, batch, kv, waiting in rows:
        i = min(nb - 1, int(start / width))
        j = min(nb - 1, int(stop / width)) if stop > start else i
        for b in range(i, j + 1):
            lo, hi = max(start, b * width), min(stop, (b + 1) * width)
            d = max(0.0, hi - lo) if stop > start else 0.0
            wsum[b] += d
            bsum[b] += d * batch
            if kv is not None:
                ksum[b] += d * kv
                kw[b] += d
            wait[b] = max(wait[b], waiting)
    return Timeline(
        tuple(b * width for b in range(nb)),
        tuple(bsum[b] / width for b in range(nb)),
        tuple((ksum[b] / kw[b]) if kw[b] > 0 else None for b in range(nb)),
        tuple(wait),
    )
