"""Static batching by hand: padding to the bucket and to the batch, and waiting for the next batch."""

from __future__ import annotations

import pytest

from dfx.serve.static import run_static
from dfx.serve.steps import IterationCost
from dfx.serve.workload import Request


class Compiled(IterationCost):
    """A compiled batch: its prefill takes 1 s per 16 tokens of bucket, each decode step 0.5 s."""

    def decode_line(self, batch, kv_tokens):
        return 0.5, 0.0

    def batch_prefill_s(self, batch, tokens):
        return tokens / 16


def test_padding_by_hand():
    # one batch of 4 rows, buckets 8 and 16: the longest prompt (12) takes the 16 bucket
    prompts, outputs = [5, 8, 12, 3], [2, 3, 4, 2]
    reqs = [Request(i, 0.0, p, o) for i, (p, o) in enumerate(zip(prompts, outputs))]
    run = run_static(reqs, Compiled(), batch=4, buckets=[8, 16])
    # prompt tokens 5 + 8 + 12 + 3 = 28 of 4 x 16 = 64 padded
    assert (run.prompt_tokens, run.prompt_padded_tokens) == (28, 64)
    # decode runs O_max - 1 = 3 steps on 4 rows = 12 row-steps, of which 1 + 2 + 3 + 1 = 7 are real
    assert (run.decode_row_steps, run.decode_padded_row_steps) == (7, 12)
    # first tokens when the 16-token prefill ends (1 s); the last of each after its O - 1 steps
    assert run.first_token_s == pytest.approx((1.0,) * 4)
    assert run.finish_s == pytest.approx((1.5, 2.0, 2.5, 1.5))
    assert run.batches == ((0.0, 2.5, 4, 16, 4, 0),)


def test_requests_wait_for_the_next_batch():
    # batch 2: the first request starts alone at t = 0 (the server does not wait to fill a batch),
    # the batch takes 8 / 16 + 3 * 0.5 = 2 s; the two that arrive meanwhile wait for it, then go together
    reqs = [Request(0, 0.0, 8, 4), Request(1, 0.1, 8, 4), Request(2, 0.2, 8, 4)]
    run = run_static(reqs, Compiled(), batch=2, buckets=[8])
    waits = [s - a for s, a in zip(run.start_s, run.arrival_s)]
    assert waits == pytest.approx([0.0, 1.9, 1.8])
    assert run.finish_s == pytest.approx((2.0, 4.0, 4.0))
    # the first batch ran 1 of its 2 rows: 8 of 16 prompt tokens padding, 3 of 6 row-steps
    assert (run.prompt_tokens, run.prompt_padded_tokens) == (24, 32)
    assert (run.decode_row_steps, run.decode_padded_row_steps) == (9, 12)


def test_a_prompt_longer_than_every_bucket_is_refused():
    from dfx.errors import DfxError

    with pytest.raises(DfxError, match="largest bucket"):
        run_static([Request(0, 0.0, 100, 4)], Compiled(), batch=1, buckets=[64])
