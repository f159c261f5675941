"""The compiled program as a Chrome/Perfetto trace: one event per kernel, on its core, inside the makespan."""

from __future__ import annotations

import json

import pytest

from dfx.schema.analysis import ANALYSIS_SCHEMA, ProgramRecord, example_program
from dfx.sim.program_trace import assign_cores
from dfx.sim.trace import Span, spans_trace


def _program(kernels: list[tuple[str, float, float, int]], cores: int) -> ProgramRecord:
    return ProgramRecord.from_dict(
        example_program(
            [{"name": n, "start_s": a, "end_s": b, "cores": c, "time_s": b - a} for n, a, b, c in kernels], cores=cores
        ),
        ANALYSIS_SCHEMA,
    )


def test_cores_are_given_first_fit_at_each_start():
    # 4 cores, kernels taken by start then end: b (0-1 s) gets cores 0-1, a (0-2 s) cores 2-3; b ends at
    # 1 s, so c (1 core, from 1 s) takes core 0; d (3 cores, from 2 s, after a and c ended) takes 0-2
    prog = _program([("a", 0.0, 2.0, 2), ("b", 0.0, 1.0, 2), ("c", 1.0, 2.0, 1), ("d", 2.0, 3.0, 3)], cores=4)
    assert assign_cores(prog) == {"b": (0, 2), "a": (2, 4), "c": (0, 1), "d": (0, 3)}


def test_spans_share_a_track_only_when_they_name_it():
    t = spans_trace(
        [Span("x", 0.0, 1e-6, "p", "t1"), Span("y", 0.0, 1e-6, "p", "t2"), Span("z", 1e-6, 2e-6, "q", "t1")]
    )
    x = {e["name"]: (e["pid"], e["tid"]) for e in t["traceEvents"] if e["ph"] == "X"}
    assert x == {"x": (1, 1), "y": (1, 2), "z": (2, 1)}
    with pytest.raises(ValueError, match="'w'"):
        spans_trace([Span("w", 2.0, 1.0, "p", "t")])


def test_analyze_trace_holds_one_event_per_kernel_on_its_core(tmp_path):
    from tests.hostile._runner import run_main

    run = run_main(["analyze", "gpt2-block", "--trace", "t.json", "--json"], tmp_path)
    assert run.rc == 0, run.err
    doc = json.loads(run.out)
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    spans = [e for e in trace if e["ph"] == "X"]
    assert len(doc["hardware"]) == 2  # the default profiles: an H100 and Spyre
    for hw_id, h in doc["hardware"].items():
        kernels = h["program"]["kernels"]
        mine = [e for e in spans if procs[e["pid"]] == f"{hw_id} chip 0"]
        assert sorted(e["name"] for e in mine) == sorted(k["name"] for k in kernels)  # one event per kernel
        makespan_us = h["makespan_s"] * 1e6
        for e in mine:
            core = int(threads[(e["pid"], e["tid"])].removeprefix("core "))
            assert 0 <= core < h["program"]["cores"], e
            assert 0 <= e["ts"] and e["ts"] + e["dur"] <= makespan_us * (1 + 1e-9), e
        by_track: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for e in mine:
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        for track in by_track.values():  # no two kernels at once on one core
            track.sort()
            assert all(b[0] >= a[1] - 1e-6 for a, b in zip(track, track[1:])), track


def test_trace_refuses_an_existing_file_before_the_work(tmp_path):
    from tests.hostile._runner import run_main

    (tmp_path / "t.json").write_text("mine")
    run = run_main(["analyze", "mlp", "--hw", "h100", "--trace", "t.json"], tmp_path)
    assert run.rc != 0 and "t.json" in run.err and (tmp_path / "t.json").read_text() == "mine"


def test_compile_trace_holds_the_scheduled_kernels(tmp_path):
    from tests.hostile._runner import run_main

    run = run_main(["compile", "gpt2-block", "--hw", "spyre", "--seq", "32", "--trace", "c.json", "--json"], tmp_path)
    assert run.rc == 0, run.err
    kernels = json.loads(run.out)["kernels"]
    trace = json.loads((tmp_path / "c.json").read_text())["traceEvents"]
    assert sorted(e["name"] for e in trace if e["ph"] == "X") == sorted(k["name"] for k in kernels)
