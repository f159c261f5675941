"""Continuous batching over a paged KV cache: the discrete-event loop of a vLLM/SGLang-style server.

Each iteration (vLLM V1's scheduler, ``vllm/v1/core/sched/scheduler.py``, in outline):

1. every running sequence that has finished its prompt decodes one token; one whose cache needs a
   new block of ``kv_block`` tokens gets it, and when none is free the most recently admitted
   sequence is **preempted** (its blocks freed, it goes back to the head of the queue and later
   recomputes its prompt and the tokens it had generated: vLLM's recompute preemption);
2. sequences part-way through their prompt take their next chunk, then waiting requests are
   admitted first come, first served, each with a chunk of its prompt, while the token budget
   ``max_batch_tokens`` lasts, fewer than ``max_seqs`` sequences run and the free blocks hold the
   chunk's tokens;
3. the iteration's time is :meth:`dfx.serve.steps.IterationCost.iteration_s`; at its end a
   sequence that finished its prompt emits its first token (TTFT), every decoding sequence its
   next, and a sequence with all its output tokens frees its blocks.

Separate prefill (``mixed_prefill=False``: SGLang v0.3's scheduler, whose ``forward_step`` runs a
prefill batch whenever one can be formed and a decode step otherwise): steps 1 and 2 swap. Waiting
requests (and sequences part-way through their prompt) form a prefill-only iteration first, while
the token budget, ``max_seqs`` and the free blocks less one block per decoding sequence (its next
token's, so a prefill cannot starve the batch it joins) allow; the decode batch runs only in an
iteration with no prefill, and pauses for each one. A request's TPOT then holds every prefill that
ran while it decoded.

Cache accounting: a sequence that has generated ``g`` tokens of a prompt of ``P`` holds
``P + g - 1`` tokens in the cache (the newest token's K and V are written by the next step), in
``ceil(tokens / kv_block)`` blocks.

Between events the loop jumps: while every running sequence decodes, no request can be admitted
and no block boundary can run the cache out, ``j`` iterations of a decode batch ``B`` whose cache
grows by ``B`` tokens an iteration take ``j a + s (j K0 + B j (j - 1) / 2)`` seconds (``D = a + s K``),
so the loop advances ``j`` iterations at once, to the next finish, arrival or possible block
shortage. The result is the same as stepping one iteration at a time (``tests/serve``).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

from dfx.errors import DfxError
from dfx.serve.speculative import expected_tokens_per_step
from dfx.serve.steps import IterationCost
from dfx.serve.workload import Request

__all__ = ["ContinuousConfig", "EngineRun", "run_continuous"]

# vLLM's defaults (vllm/engine/arg_utils.py, EngineArgs): block_size 16 tokens, max_num_seqs 256,
# max_num_batched_tokens 2048 with chunked prefill (vLLM V1's default on GPUs)
DEFAULT_KV_BLOCK = 16
DEFAULT_MAX_SEQS = 256
DEFAULT_MAX_BATCH_TOKENS = 2048


@dataclass(frozen=True)
class ContinuousConfig:
    """The runtime's limits: token budget per iteration, sequences at once, block size (tokens),
    KV-cache blocks in all."""

    kv_blocks: int
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_seqs: int = DEFAULT_MAX_SEQS
    kv_block: int = DEFAULT_KV_BLOCK
    # True: prompt chunks join the decode iteration (vLLM V1; Sarathi-Serve). False: a prefill runs
    # as its own iteration, first, while the decode batch waits (SGLang v0.3's default,
    # ``enable_mixed_chunk: bool = False`` in python/sglang/srt/server_args.py; vLLM V0's scheduler
    # without chunked prefill). Module docstring, "Separate prefill".
    mixed_prefill: bool = True
    # speculative decoding (dfx.serve.speculative): K tokens proposed a step, accepted with this rate
    speculative_k: int = 0
    accept: float = 0.0

    def __post_init__(self) -> None:
        for name in ("kv_blocks", "max_batch_tokens", "max_seqs", "kv_block"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                flag = "--" + name.replace("_", "-")
                raise DfxError(f"{flag} {v!r}: expected a whole number >= 1")

    @property
    def tokens_per_step(self) -> float:
        """A decode step's tokens a sequence, in expectation (1 without speculation)."""
        return expected_tokens_per_step(self.speculative_k, self.accept) if self.speculative_k else 1.0


class _Seq:
    """A request's state in the server."""

    __slots__ = (
        "req",
        "target",
        "cached",
        "generated",
        "blocks",
        "first_s",
        "finish_s",
        "preempted",
        "arrive_s",
        "steps",
        "start_s",
    )

    def __init__(self, req: Request, arrive_s: float) -> None:
        self.req = req
        self.arrive_s = arrive_s
        self.target = req.prompt_len  # tokens to prefill before the next token is emitted
        self.cached = 0
        self.generated = 0
        self.blocks = 0
        self.first_s = -1.0
        self.finish_s = -1.0
        self.preempted = 0
        self.steps = 0  # decode (verify) steps taken: speculation's tokens are counted by them
        self.start_s = -1.0  # its first prompt chunk's iteration start


@dataclass(frozen=True)
class EngineRun:
    """What a run produced: per request (in request order) arrival, first-token and finish times (s),
    preemptions; the timeline as ``(start_s, end_s, batch, kv_blocks_used, waiting)`` rows, one per
    iteration or per jump of identical decode iterations; iterations run."""

    arrival_s: tuple[float, ...]
    first_token_s: tuple[float, ...]
    finish_s: tuple[float, ...]
    preemptions: tuple[int, ...]
    timeline: tuple[tuple[float, float, int, int, int], ...]
    iterations: int
    kv_blocks: int
    # for a trace (dfx.serve.trace): per request the time its first prompt chunk was scheduled;
    # per timeline row (iterations in it, sequences decoding, prompt tokens)
    start_s: tuple[float, ...] = ()
    rows: tuple[tuple[int, int, int], ...] = ()


def _blocks(tokens: int, block: int) -> int:
    return -(-tokens // block)


def run_continuous(
    requests: Sequence[Request],
    cost: IterationCost,
    config: ContinuousConfig,
    *,
    concurrency: int | None = None,
    prefill_only: bool = False,
    decode_only: bool = False,
    arrivals_s: Sequence[float] | None = None,
) -> EngineRun:
    """Serve ``requests`` with continuous batching (module docstring).

    Parameters
    ----------
    requests : sequence of Request
        In index order; ``arrival_s`` is used unless ``arrivals_s`` or ``concurrency`` is given.
    cost : IterationCost
        The machine's iteration times.
    config : ContinuousConfig
    concurrency : int, optional
        A closed loop: the first ``concurrency`` requests arrive at 0, each finish sends the next.
    prefill_only : bool
        A disaggregated prefill pool: a request leaves after its first token.
    decode_only : bool
        A disaggregated decode pool: a request arrives with its prompt's cache (no prefill).
    arrivals_s : sequence of float, optional
        Arrival times overriding the requests' own (the decode pool's, after the transfer).

    Raises
    ------
    DfxError
        A request whose prompt alone needs more blocks than the cache has (it could never run).
    """
    n = len(requests)
    block, total_blocks = config.kv_block, config.kv_blocks
    need = max(r.prompt_len + r.output_len - 1 for r in requests) if n else 0
    if _blocks(need, block) > total_blocks:
        raise DfxError(
            f"a request of {need:,} tokens needs {_blocks(need, block):,} KV blocks of {block} tokens but the cache "
            f"holds {total_blocks:,}; give shorter lengths, more chips (--chips) or a smaller --kv-dtype"
        )
    seqs: list[_Seq | None] = [None] * n
    pending: list[tuple[float, int]] = []  # (arrival time, index): a heap
    if concurrency is not None:
        for i in range(min(concurrency, n)):
            pending.append((0.0, i))
        next_closed = min(concurrency, n)
    else:
        times = arrivals_s if arrivals_s is not None else [r.arrival_s for r in requests]
        pending = [(float(t), i) for i, t in enumerate(times)]
        next_closed = n
    heapq.heapify(pending)
    waiting: deque[_Seq] = deque()
    running: list[_Seq] = []
    free = total_blocks
    now = 0.0
    done = 0
    iterations = 0
    timeline: list[tuple[float, float, int, int, int]] = []
    out_first = [0.0] * n
    out_finish = [0.0] * n
    out_arrive = [0.0] * n
    out_pre = [0] * n
    out_start = [0.0] * n
    rows: list[tuple[int, int, int]] = []

    def arrive(upto: float) -> None:
        while pending and pending[0][0] <= upto:
            t, i = heapq.heappop(pending)
            s = _Seq(requests[i], t)
            if decode_only:
                s.target = 0  # its prompt's cache came with it
                s.cached = requests[i].prompt_len
                s.generated = 1
                s.first_s = t
            seqs[i] = s
            waiting.append(s)

    def finish(s: _Seq, t: float) -> None:
        nonlocal free, done, next_closed
        s.finish_s = t
        free += s.blocks
        s.blocks = 0
        i = s.req.index
        out_first[i], out_finish[i], out_arrive[i], out_pre[i] = s.first_s, t, s.arrive_s, s.preempted
        out_start[i] = s.start_s if s.start_s >= 0 else s.arrive_s
        done += 1
        if next_closed < n:
            heapq.heappush(pending, (t, next_closed))
            next_closed += 1

    spec_k = config.speculative_k
    per_step = config.tokens_per_step

    def gain(s: _Seq) -> int:
        """Tokens the next decode step adds: 1, or with speculation the step's share of the expected
        ``per_step`` (``floor(d E) - floor((d - 1) E)`` at step ``d``: deterministic, the mean exact)."""
        if not spec_k:
            return 1
        d = s.steps + 1
        g = math.floor(d * per_step + 1e-9) - math.floor((d - 1) * per_step + 1e-9)
        return max(1, min(g, s.req.output_len - s.generated))

    while done < n:
        arrive(now)
        if not running and not waiting:
            now = max(now, pending[0][0])
            continue
        # 1. decodes, preempting the newest sequence while a block is short; 2. prompt chunks
        # (separate prefill: 2 first, and 1 only in an iteration with no chunk; module docstring)
        chunks: list[tuple[_Seq, int]] = []
        decoding: list[_Seq] = []
        reserve = 0  # separate prefill: the blocks the decoding sequences' next tokens need, kept free
        if not config.mixed_prefill:
            reserve = sum(_blocks(s.cached + gain(s), block) - s.blocks for s in running if s.cached >= s.target)
        if not config.mixed_prefill:
            free, chunks = _schedule_chunks(running, waiting, decoding, config.max_batch_tokens, free - reserve, config)
            free += reserve
        if not chunks:
            free, decoding = _decode_blocks(running, waiting, free, block, gain)
            if config.mixed_prefill:
                budget = config.max_batch_tokens - len(decoding)
                free, chunks = _schedule_chunks(running, waiting, decoding, budget, free, config)
        if not decoding and not chunks:
            if not pending:
                raise DfxError("the KV cache cannot hold any waiting request; give more blocks")  # guarded above
            now = max(now, pending[0][0])
            continue
        # 3. a jump over identical decode iterations, where nothing can change but time
        if not chunks and not (waiting and _admissible(waiting[0], free - reserve, block, running, config)):
            if spec_k:
                j, dt, gains = _spec_jump(decoding, cost, free, block, pending, now, waiting, spec_k, per_step)
            else:
                j, dt = _jump(decoding, cost, free, block, pending, now, waiting, prefill_only)
                gains = [j] * len(decoding)
            if j > 1:
                timeline.append((now, now + dt, len(decoding), total_blocks - free, len(waiting)))
                rows.append((j, len(decoding), 0))
                now += dt
                iterations += j
                for s, g in zip(decoding, gains):
                    s.cached += g
                    s.generated += g
                    s.steps += j
                    nb = _blocks(s.cached, block)
                    free -= nb - s.blocks
                    s.blocks = nb
                _retire(running, now, finish)
                continue
        k = sum(s.cached for s in decoding)
        drafts = [(len(decoding) * spec_k, 0)] if spec_k and decoding else []  # K more query tokens a sequence
        dt = cost.iteration_s(len(decoding), k, [(t, s.cached) for s, t in chunks] + drafts)
        timeline.append((now, now + dt, len(decoding) + len(chunks), total_blocks - free, len(waiting)))
        rows.append((1, len(decoding), sum(t for _s, t in chunks)))
        for s, _t in chunks:
            if s.start_s < 0:
                s.start_s = now
        now += dt
        iterations += 1
        for s in decoding:
            g = gain(s)
            s.cached += g
            s.generated += g
            s.steps += 1
        for s, t in chunks:
            s.cached += t
            if s.cached >= s.target:
                if s.generated == 0:
                    s.first_s = now
                s.generated += 1
        if prefill_only:
            for s in list(running):
                if s.generated >= 1 and s.cached >= s.target:
                    running.remove(s)
                    finish(s, now)
        _retire(running, now, finish)
    return EngineRun(
        tuple(out_arrive),
        tuple(out_first),
        tuple(out_finish),
        tuple(out_pre),
        tuple(timeline),
        iterations,
        total_blocks,
        tuple(out_start),
        tuple(rows),
    )


def _decode_blocks(running: list, waiting: deque, free: int, block: int, gain) -> tuple[int, list]:
    """Give each decoding sequence the blocks its next ``gain(s)`` tokens need, preempting the newest running
    sequence while one is short (vLLM's recompute preemption); the free blocks left and the
    sequences that decode."""
    for s in [s for s in running if s.cached >= s.target]:
        if s.cached < s.target:  # preempted below, for a sequence before it
            continue
        want = _blocks(s.cached + gain(s), block) - s.blocks
        while want > free:
            victim = running.pop()
            free += victim.blocks
            victim.blocks = 0
            victim.target = victim.req.prompt_len + victim.generated  # recompute what it had
            victim.cached = 0
            victim.preempted += 1
            waiting.appendleft(victim)
            if victim is s:
                break
        if s.cached >= s.target:
            free -= want
            s.blocks += want
    return free, [s for s in running if s.cached >= s.target]


def _schedule_chunks(
    running: list, waiting: deque, decoding: list, budget: int, free: int, config: ContinuousConfig
) -> tuple[int, list]:
    """Prompt chunks for this iteration within ``budget`` tokens and ``free`` blocks: sequences
    part-way through their prompt first, then waiting requests first come, first served (a
    decode-only arrival joins ``decoding`` with its prompt's blocks). The free blocks left and the
    ``(sequence, tokens)`` chunks.

    Mixed prefill shrinks a chunk to the free blocks. Separate prefill (SGLang's) admits a chunk
    whole or not at all, and a chunk that completes its prompt only with the block its first decoded
    token will need kept free too (not allocated: returned in the free count)."""
    block = config.kv_block
    whole = not config.mixed_prefill
    kept = 0  # separate prefill: blocks kept free for the first decode of the prompts completed here
    chunks: list[tuple[_Seq, int]] = []

    def size(s: _Seq, want: int) -> int:
        nonlocal kept
        if not whole:
            return _fit(s, want, free, block)
        ahead = (
            _blocks(s.cached + want + 1, block) - _blocks(s.cached + want, block) if want == s.target - s.cached else 0
        )
        if _blocks(s.cached + want, block) - s.blocks + ahead > free - kept:
            return 0
        kept += ahead
        return want

    for s in running:
        if s.cached < s.target and budget > 0:
            t = size(s, min(s.target - s.cached, budget))
            if t > 0:
                free -= _blocks(s.cached + t, block) - s.blocks
                s.blocks = _blocks(s.cached + t, block)
                chunks.append((s, t))
                budget -= t
    while waiting and budget > 0 and len(running) < config.max_seqs:
        s = waiting[0]
        if s.cached >= s.target:  # decode-only arrival: needs its prompt's blocks, no prefill
            want = _blocks(s.cached + 1, block)
            if want > free - kept:
                break
            waiting.popleft()
            free -= want
            s.blocks = want
            running.append(s)
            decoding.append(s)
            budget -= 1
            continue
        t = size(s, min(s.target - s.cached, budget))
        if t <= 0:
            break
        waiting.popleft()
        running.append(s)
        free -= _blocks(s.cached + t, block) - s.blocks
        s.blocks = _blocks(s.cached + t, block)
        chunks.append((s, t))
        budget -= t
    return free, chunks


def _fit(s: _Seq, tokens: int, free: int, block: int) -> int:
    """The most of ``tokens`` prompt tokens whose blocks fit ``free`` (a chunk shrinks to fit)."""
    room = (s.blocks + free) * block - s.cached
    return max(0, min(tokens, room))


def _admissible(s: _Seq, free: int, block: int, running: list, config: ContinuousConfig) -> bool:
    """Whether the head of the queue could be admitted now (a jump must stop for it)."""
    if len(running) >= config.max_seqs:
        return False
    if s.cached >= s.target:
        return _blocks(s.cached + 1, block) <= free
    return (s.blocks + free) * block - s.cached > 0


def _retire(running: list, now: float, finish) -> None:
    kept = []
    for s in running:
        if s.generated >= s.req.output_len:
            finish(s, now)
        else:
            kept.append(s)
    running[:] = kept


def _spec_gain(d: int, i: int, per_step: float) -> int:
    """Tokens a sequence gains in its steps ``d + 1 .. d + i`` at ``per_step`` a step in expectation:
    ``floor((d + i) E) - floor(d E)`` (run_continuous's ``gain``, summed)."""
    return math.floor((d + i) * per_step + 1e-9) - math.floor(d * per_step + 1e-9)


def _spec_jump(
    decoding: list,
    cost: IterationCost,
    free: int,
    block: int,
    pending: list,
    now: float,
    waiting,
    spec_k: int,
    per_step: float,
) -> tuple[int, float, list[int]]:
    """:func:`_jump` for speculative verify steps: how many to take at once, their summed time and
    each sequence's tokens gained. The steps are summed one by one (each sequence's gain a step
    differs), the same sums as stepping: ``D(B, K_i) + P(B (K + 1)) - P(B)`` at the cache ``K_i``
    of step ``i``, to the next finish, arrival, block shortage or end of ``D``'s affine piece."""
    b = len(decoding)
    rem = [s.req.output_len - s.generated for s in decoding]
    room = (free // b) * block - block  # tokens each sequence may gain before its blocks can run short
    if room <= per_step + 1:
        return 1, 0.0, []
    k0 = sum(s.cached for s in decoding)
    a, s_tok = cost.decode_line(b, k0)
    a += cost.prefill_s(b * (spec_k + 1)) - cost.prefill_s(b)  # the B K draft tokens join the pass
    end = getattr(cost, "segment_end", None)
    stop = end(b, k0) if end is not None else math.inf
    gap = pending[0][0] - now if pending and not waiting else math.inf
    done = [0] * b
    k, total, j = k0, 0.0, 0
    while True:
        total += a + s_tok * k
        j += 1
        step = [_spec_gain(s.steps, j, per_step) for s in decoding]
        k = k0 + sum(step)
        if (
            any(g >= r for g, r in zip(step, rem))  # a sequence finishes at this step
            or max(step) + per_step + 1 > room
            or k / b >= stop
            or total >= gap
        ):
            done = [min(g, r) for g, r in zip(step, rem)]
            break
    return j, total, done


def _jump(
    decoding: list, cost: IterationCost, free: int, block: int, pending: list, now: float, waiting, prefill_only: bool
) -> tuple[int, float]:
    """How many identical decode iterations to take at once, and their summed time (module docstring)."""
    if prefill_only:
        return 1, 0.0
    b = len(decoding)
    k0 = sum(s.cached for s in decoding)
    j = min(s.req.output_len - s.generated for s in decoding)  # to the next finish
    j = min(j, (free // b) * block)  # each sequence needs at most ceil(j / block) more blocks
    a, s_tok = cost.decode_line(b, k0)
    end = getattr(cost, "segment_end", None)
    stop = end(b, k0) if end is not None else math.inf
    if math.isfinite(stop):  # stay on one affine piece of D
        j = min(j, max(1, math.floor(stop - k0 / b)))
    if pending and not waiting:  # the next arrival is admitted at the first iteration boundary after it
        gap = pending[0][0] - now
        qa, qb = s_tok * b / 2, a + s_tok * k0 - s_tok * b / 2
        if qa > 0:
            root = (-qb + math.sqrt(qb * qb + 4 * qa * gap)) / (2 * qa)
        else:
            root = gap / qb if qb > 0 else j
        j = min(j, max(1, math.ceil(root - 1e-12)))
    if j <= 1:
        return 1, 0.0
    return j, j * a + s_tok * (j * k0 + b * j * (j - 1) / 2)
