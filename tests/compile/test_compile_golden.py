"""Regression guard: compile + evaluate of a stored tiny Llama give the numbers the snapshot holds, bit for bit.

The snapshot (``data/compile_golden.json``) is not a derived value: it is what the code computed when
``make_compile_golden.py`` wrote it, kept so that speed-ups can show they moved no number. A change
meant to move numbers regenerates it (the generator's docstring says how) and reviews the diff.
"""

import json

import pytest

from dfx.ir import Graph

from .make_compile_golden import GOLDEN, GRAPH, PROFILES, snapshot

_REGENERATE = "if the change is meant to move numbers, run tests/compile/make_compile_golden.py and review the diff"


@pytest.fixture(scope="module")
def fresh() -> dict:
    return snapshot(Graph.from_json(GRAPH.read_text()))


@pytest.mark.parametrize("profile_id", PROFILES)
def test_compile_and_evaluate_match_the_snapshot(fresh, profile_id):
    want = json.loads(GOLDEN.read_text())["profiles"][profile_id]
    got = fresh[profile_id]
    summary = [k for k in want if not k.endswith("_sha256")]
    # exact equality: JSON round-trips a float's repr, so a changed last bit fails here
    assert {k: got[k] for k in summary} == {k: want[k] for k in summary}, _REGENERATE
    assert got["program_sha256"] == want["program_sha256"], f"a kernel's record changed; {_REGENERATE}"
    assert got["result_sha256"] == want["result_sha256"], f"a kernel's timing or slot changed; {_REGENERATE}"


def test_snapshot_is_not_trivial(fresh):
    # the guard only guards if the model reaches every pass: kernels fused, tiled, placed and scheduled
    for pid in PROFILES:
        got = fresh[pid]
        slack = 1e-12 * got["serial_time_s"]  # one stream's sum and a schedule's end round differently
        assert 0 < got["critical_path_s"] <= got["makespan_s"] + slack <= got["serial_time_s"] + 2 * slack
        assert got["tiles"] > got["kernels"] > 1
