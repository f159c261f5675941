"""``dfx serve --trace``: the run as Chrome/Perfetto spans, checked against a run worked by hand."""

from __future__ import annotations

import json

import pytest

from dfx.serve.engine import ContinuousConfig, run_continuous
from dfx.serve.steps import IterationCost
from dfx.serve.trace import RunRecord, lanes, record_continuous, serving_trace
from dfx.serve.workload import Request


class PhaseServer(IterationCost):
    """A decode iteration 1 s, a prefill 0.5 s, whatever their sizes."""

    def decode_line(self, batch, kv_tokens):
        return 1.0, 0.0

    def prefill_s(self, tokens):
        return 0.5 if tokens else 0.0

    def iteration_s(self, batch, kv_tokens, chunks=()):
        return (1.0 if batch else 0.0) + (0.5 if chunks else 0.0)


class _Machine:
    profile_id, scheduler = "m", "continuous"

    def __init__(self, record: RunRecord) -> None:
        self.record = record


class _Result:
    class config:  # noqa: N801 - the attribute serving_trace reads
        model, hardware = "toy", ("m",)

    def __init__(self, record: RunRecord) -> None:
        self.machines = (_Machine(record),)


def test_a_separate_prefill_run_as_spans():
    # the run of tests/serve/test_engine.py::test_separate_prefill_pauses_the_decode_batch:
    #   0.0-0.5 prefill A;  0.5-1.5 decode A;  1.5-2.0 prefill B (B arrived at 1.2: queued 0.3 s)
    #   2.0-4.0 decode A, B (B done at 4.0);  4.0-5.0 decode A
    reqs = [Request(0, 0.0, 10, 5), Request(1, 1.2, 10, 3)]
    run = run_continuous(reqs, PhaseServer(), ContinuousConfig(kv_blocks=64, mixed_prefill=False))
    doc = json.loads(json.dumps(serving_trace(_Result(record_continuous(run)))))
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    by_name = {e["name"]: (e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6) for e in spans}
    assert by_name["request 1 queued"] == pytest.approx((1.2, 1.5))
    assert by_name["request 1 prefill"] == pytest.approx((1.5, 2.0))
    assert by_name["request 1 decode"] == pytest.approx((2.0, 4.0))
    assert by_name["request 0 decode"] == pytest.approx((0.5, 5.0))
    assert "request 0 queued" not in by_name  # admitted at its arrival
    # the server track: two prefill iterations of 10 prompt tokens each, and 1 + 2 + 1 decode
    # iterations (a run of identical ones may be one span: count the iterations in the args)
    server = [e for e in spans if e["cat"] == "iteration"]
    assert sum(e["args"]["iterations"] for e in server) == run.iterations == 6
    assert sorted(e["args"]["prompt_tokens"] for e in server if e["args"]["prompt_tokens"]) == [10, 10]
    assert sum(e["dur"] for e in server) / 1e6 == pytest.approx(5.0)  # busy from 0 to 5.0 without a gap


def test_requests_share_lanes_only_when_they_do_not_overlap():
    # A [0, 3], B [1, 2], C [2.5, 4], D [3, 5]: B takes lane 1; at 2.5 lane 1 is free again (B left
    # at 2): C takes it; at 3 A has left lane 0: D takes it
    assert lanes([0.0, 1.0, 2.5, 3.0], [3.0, 2.0, 4.0, 5.0]) == [0, 1, 1, 0]
