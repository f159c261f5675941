"""Static batching: a batch size and prompt buckets fixed when the program is compiled.

A compile-time machine (Groq, Cerebras, a TPU under XLA, Spyre) runs programs compiled for fixed
shapes (``docs/shapes.md``): a batch of ``B`` rows and a prompt length from a bucket ladder. The
server, when it is free, takes up to ``B`` waiting requests, first come first served (it does not
wait to fill the batch: Triton's dynamic batcher with no queue delay); every prompt is padded to
the bucket of the batch's longest one and empty rows are padding too; the batch then decodes until
its longest output is done, every row over a cache as long as the bucket plus the steps so far::

    T_batch = P_B(bucket) + sum over i = 0 .. O_max - 2 of D(B, B * (bucket + i))

A request's first token comes when the batch's prefill ends, its last when the batch has run its
own ``O - 1`` steps (it streams), but the next batch starts only when this one is done: that wait,
and the padding, are what a compiled batch costs against continuous batching.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

from dfx.errors import DfxError
from dfx.serve.steps import IterationCost
from dfx.serve.workload import Request

__all__ = ["StaticRun", "decode_steps_s", "run_static"]


@dataclass(frozen=True)
class StaticRun:
    """Per request (request order): arrival, batch start, first-token and last-token times (s); per
    batch ``(start_s, end_s, rows used, bucket, longest output, requests left waiting)``; padded and
    real token counts."""

    arrival_s: tuple[float, ...]
    start_s: tuple[float, ...]
    first_token_s: tuple[float, ...]
    finish_s: tuple[float, ...]
    batches: tuple[tuple[float, float, int, int, int, int], ...]
    prompt_tokens: int
    prompt_padded_tokens: int
    decode_row_steps: int
    decode_padded_row_steps: int


def decode_steps_s(cost: IterationCost, batch: int, start_kv: int, steps: int) -> float:
    """``sum over i < steps of D(batch, batch * (start_kv + i))``, summed exactly on each affine piece.

    >>> from dfx.serve.steps import IterationCost
    >>> class C(IterationCost):
    ...     def decode_line(self, b, k): return (1.0, 0.5)
    >>> decode_steps_s(C(), 2, 3, 2)  # (1 + 0.5 * 6) + (1 + 0.5 * 8)
    9.0
    """
    total, i = 0.0, 0
    while i < steps:
        k0 = batch * (start_kv + i)
        a, s = cost.decode_line(batch, k0)
        end = getattr(cost, "segment_end", None)
        j = steps - i
        stop = end(batch, k0) if end is not None else math.inf
        if math.isfinite(stop):  # stay on one affine piece of D
            j = max(1, min(j, int(stop - (start_kv + i))))
        total += j * a + s * (j * k0 + batch * j * (j - 1) / 2)
        i += j
    return total


def run_static(
    requests: Sequence[Request],
    cost: IterationCost,
    batch: int,
    buckets: Sequence[int],
    *,
    concurrency: int | None = None,
) -> StaticRun:
    """Serve ``requests`` in compiled batches of ``batch`` rows, prompts padded to ``buckets``.

    Raises
    ------
    DfxError
        A batch below 1, or a prompt longer than the largest bucket.
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise DfxError(f"--batch {batch!r}: a static batch must be a whole number >= 1")
    ladder = sorted(set(buckets))
    n = len(requests)
    longest = max((r.prompt_len for r in requests), default=0)
    if ladder and longest > ladder[-1]:
        raise DfxError(f"a prompt of {longest:,} tokens is longer than the largest bucket {ladder[-1]:,}; add a bucket")
    pending: list[tuple[float, int]] = []
    if concurrency is not None:
        pending = [(0.0, i) for i in range(min(concurrency, n))]
        next_closed = min(concurrency, n)
    else:
        pending = [(float(r.arrival_s), r.index) for r in requests]
        next_closed = n
    heapq.heapify(pending)
    queue: deque[tuple[float, int]] = deque()
    arrival, start, first, finish = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    batches = []
    now = 0.0
    served = 0
    prompt_tokens = padded_prompt = row_steps = padded_row_steps = 0
    finishes: list[tuple[float, int]] = []  # closed loop: finishes that send the next request
    while served < n:
        while pending and pending[0][0] <= now:
            queue.append(heapq.heappop(pending))
        if not queue:
            now = pending[0][0]
            continue
        rows = [queue.popleft() for _ in range(min(batch, len(queue)))]
        reqs = [requests[i] for _, i in rows]
        bucket = ladder[bisect.bisect_left(ladder, max(r.prompt_len for r in reqs))]
        o_max = max(r.output_len for r in reqs)
        t_first = now + cost.batch_prefill_s(batch, bucket)
        done_at = {}
        steps_s = 0.0
        for o in sorted({r.output_len for r in reqs}):
            done_at[o] = t_first + decode_steps_s(cost, batch, bucket, o - 1)
        steps_s = done_at[o_max] - t_first
        for (t_arr, i), r in zip(rows, reqs):
            arrival[i], start[i], first[i], finish[i] = t_arr, now, t_first, done_at[r.output_len]
            finishes.append((finish[i], i))
        prompt_tokens += sum(r.prompt_len for r in reqs)
        padded_prompt += batch * bucket
        row_steps += sum(r.output_len - 1 for r in reqs)
        padded_row_steps += batch * (o_max - 1)
        end = t_first + steps_s
        batches.append((now, end, len(reqs), bucket, o_max, len(queue)))
        served += len(reqs)
        if next_closed < n:  # each finished request's user sends the next one
            for t_fin, _ in sorted(finishes):
                if next_closed >= n:
                    break
                heapq.heappush(pending, (t_fin, next_closed))
                next_closed += 1
        finishes.clear()
        now = end
    return StaticRun(
        tuple(arrival),
        tuple(start),
        tuple(first),
        tuple(finish),
        tuple(batches),
        prompt_tokens,
        padded_prompt,
        row_steps,
        padded_row_steps,
    )
