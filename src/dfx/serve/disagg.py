"""Disaggregated serving: prefill and decode on separate pools of chips, the KV cache moved between.

DistServe (Zhong et al., OSDI 2024) and Splitwise (Patel et al., ISCA 2024) put the prompt pass on
one pool and the token-by-token decode on another, so a long prefill never stalls a decode batch.
Here each pool is one replica of the model's split (``--chips``/``--parallel``, so twice the chips
in all) running continuous batching (:mod:`dfx.serve.engine`): the prefill pool's requests leave
after their first token; each then sends its prompt's K and V, ``kv_bytes_per_token * P`` bytes,
over the interconnect as one send/recv (:func:`dfx.parallel.collectives.collective_s`: the
profile's ``hop_latency_s`` plus bytes over ``ring_bytes_per_s``), and joins the decode pool, whose
cache takes it without a prefill. TTFT is the prefill pool's; the transfer and the decode pool's
queue fall in the time between the first and the second token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from dfx.serve.engine import ContinuousConfig, EngineRun, run_continuous
from dfx.serve.steps import IterationCost
from dfx.serve.workload import Request

__all__ = ["DisaggregatedRun", "run_disaggregated"]


@dataclass(frozen=True)
class DisaggregatedRun:
    """The two pools' runs, and per request its first-token and finish times (s) and transfer time."""

    prefill: EngineRun
    decode: EngineRun | None
    arrival_s: tuple[float, ...]
    first_token_s: tuple[float, ...]
    finish_s: tuple[float, ...]
    transfer_s: tuple[float, ...]
    preemptions: tuple[int, ...]


def run_disaggregated(
    requests: Sequence[Request],
    cost: IterationCost,
    config: ContinuousConfig,
    transfer_s: Callable[[int], float],
    *,
    concurrency: int | None = None,
) -> DisaggregatedRun:
    """Serve ``requests`` on a prefill pool and a decode pool of the same machine and split.

    ``transfer_s(prompt_len)`` is the seconds one request's cache takes between the pools.
    A closed loop (``concurrency``) sends each next request when one leaves the prefill pool: a
    stated simplification (the user's own request is not done yet).
    """
    pre = run_continuous(requests, cost, config, concurrency=concurrency, prefill_only=True)
    n = len(requests)
    moves = [transfer_s(r.prompt_len) for r in requests]
    rest = [r for r in requests if r.output_len > 1]
    finish = list(pre.finish_s)
    pre_count = list(pre.preemptions)
    dec = None
    if rest:
        local = [replace(r, index=k) for k, r in enumerate(rest)]
        arrive = [pre.first_token_s[r.index] + moves[r.index] for r in rest]
        dec = run_continuous(local, cost, config, decode_only=True, arrivals_s=arrive)
        for k, r in enumerate(rest):
            finish[r.index] = dec.finish_s[k]
            pre_count[r.index] += dec.preemptions[k]
    return DisaggregatedRun(
        pre, dec, pre.arrival_s, pre.first_token_s, tuple(finish), tuple(moves[:n]), tuple(pre_count)
    )
