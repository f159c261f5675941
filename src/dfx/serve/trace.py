"""A serving run as a Chrome/Perfetto trace (``dfx serve ... --trace FILE``).

Per machine two processes: ``<machine>: server``, one track per pool with one span per iteration
(a run of identical decode iterations is one span, its count in the name), and
``<machine>: requests``, each request as up to three spans on a lane: ``queued`` (arrival to its
first prompt chunk's iteration), ``prefill`` (to its first token) and ``decode`` (to its last).
Requests share lanes: each goes on the lowest lane free at its arrival, so the lanes in use at a
time are the requests in the server then. Written through :func:`dfx.sim.trace.spans_trace`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from dfx.sim.trace import Span, spans_trace

__all__ = ["RunRecord", "lanes", "record_continuous", "record_disaggregated", "record_static", "serving_trace"]


@dataclass(frozen=True)
class RunRecord:
    """What a trace needs of one machine's run: per request (request order) arrival, start (its first
    prompt chunk or batch), first-token and last-token times (s); the server's spans as
    ``(track, start_s, end_s, name, args)``."""

    arrival_s: tuple[float, ...]
    start_s: tuple[float, ...]
    first_token_s: tuple[float, ...]
    finish_s: tuple[float, ...]
    server: tuple[tuple[str, float, float, str, Mapping[str, Any]], ...]


def _engine_spans(e: Any, track: str) -> list[tuple[str, float, float, str, Mapping[str, Any]]]:
    out = []
    for (t0, t1, _batch, used, waiting), (j, decoding, prompt) in zip(e.timeline, e.rows):
        if prompt and decoding:
            name = f"mixed: {decoding} decode + {prompt} prompt tokens"
        elif prompt:
            name = f"prefill: {prompt} tokens"
        else:
            name = f"decode {decoding}" + (f" x {j} iterations" if j > 1 else "")
        args = {"iterations": j, "decoding": decoding, "prompt_tokens": prompt, "kv_blocks_used": used}
        out.append((track, t0, t1, name, {**args, "waiting": waiting}))
    return out


def record_continuous(e: Any) -> RunRecord:
    """A :class:`dfx.serve.engine.EngineRun`'s record."""
    return RunRecord(e.arrival_s, e.start_s, e.first_token_s, e.finish_s, tuple(_engine_spans(e, "iterations")))


def record_disaggregated(d: Any) -> RunRecord:
    """A :class:`dfx.serve.disagg.DisaggregatedRun`'s record: each pool its own server track."""
    spans = _engine_spans(d.prefill, "prefill pool") + (_engine_spans(d.decode, "decode pool") if d.decode else [])
    return RunRecord(d.arrival_s, d.prefill.start_s, d.first_token_s, d.finish_s, tuple(spans))


def record_static(s: Any) -> RunRecord:
    """A :class:`dfx.serve.static.StaticRun`'s record: one span per compiled batch."""
    spans = tuple(
        ("batches", b0, b1, f"batch: {n} rows, bucket {bucket}, longest output {out}", {"rows": n, "waiting": w})
        for b0, b1, n, bucket, out, w in s.batches
    )
    return RunRecord(s.arrival_s, s.start_s, s.first_token_s, s.finish_s, spans)


def lanes(arrival_s: Sequence[float], finish_s: Sequence[float]) -> list[int]:
    """Each request's lane: the lowest lane free at its arrival (interval partitioning by start, so
    the lanes used at once are never more than the requests in the server then).

    >>> lanes([0.0, 1.0, 2.5, 3.0], [3.0, 2.0, 4.0, 5.0])
    [0, 1, 1, 0]
    """
    order = sorted(range(len(arrival_s)), key=lambda i: (arrival_s[i], i))
    busy: list[tuple[float, int]] = []  # (free from, lane)
    free: list[int] = []
    out = [0] * len(arrival_s)
    for i in order:
        while busy and busy[0][0] <= arrival_s[i]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy)
        out[i] = lane
        heapq.heappush(busy, (finish_s[i], lane))
    return out


def _request_spans(record: RunRecord, process: str) -> list[Span]:
    spans = []
    lane_of = lanes(record.arrival_s, record.finish_s)
    for i, (a, st, first, end) in enumerate(
        zip(record.arrival_s, record.start_s, record.first_token_s, record.finish_s)
    ):
        thread = f"lane {lane_of[i]}"
        args = {"request": i}
        st = min(max(st, a), first)
        for name, t0, t1 in (("queued", a, st), ("prefill", st, first), ("decode", first, end)):
            if t1 > t0:
                spans.append(Span(f"request {i} {name}", t0, t1, process, thread, name, args))
    return spans


def serving_trace(result: Any) -> dict[str, Any]:
    """The Chrome/Perfetto trace document of ``result``'s runs (:class:`dfx.serve.ServingResult`; the
    first rate's, one pair of processes per machine); ``json.dumps`` it to a file."""
    spans: list[Span] = []
    for m in result.machines:
        rec = m.record
        if rec is None:
            continue
        server = f"{m.profile_id}: server ({m.scheduler})"
        spans += [Span(name, t0, t1, server, track, "iteration", args) for track, t0, t1, name, args in rec.server]
        spans += _request_spans(rec, f"{m.profile_id}: requests")
    other = {"schema": "dfx.serving/1 trace", "model": result.config.model, "hardware": list(result.config.hardware)}
    return spans_trace(spans, other=other)
