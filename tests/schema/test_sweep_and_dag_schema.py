"""dfx.schema owns the sweep document (dfx.sweep/1, sweep.json) and the hand-made DAG document (dfx.dag/1)."""

from __future__ import annotations

import json

import pytest

from dfx.schema import SWEEP_SCHEMA, SchemaError
from dfx.schema.sweep import read_sweep


def test_the_runner_writes_the_record_and_reads_it_back(tmp_path):
    from dfx.sweep.runner import SPEC_FILE, _prepare
    from dfx.sweep.spec import SweepSpec

    spec = SweepSpec(models=("mlp",), hardware=("h100",))
    _prepare(spec, tmp_path, force=False)
    doc = json.loads((tmp_path / SPEC_FILE).read_text())
    r = read_sweep(doc)
    assert r.to_dict() == doc and r.schema == SWEEP_SCHEMA and r.fingerprint == spec.fingerprint()
    _prepare(spec, tmp_path, force=False)  # the same sweep resumes into its folder


def test_a_missing_or_renamed_key_is_an_error():
    with pytest.raises(SchemaError, match="dfx.sweep/1: fingerprint is missing"):
        read_sweep({"schema": SWEEP_SCHEMA, "hash": "0123", "spec": {}})
    with pytest.raises(SchemaError, match="not a dfx.sweep/1 document"):
        read_sweep({"schema": "dfx.analysis/1"})


def test_the_dag_document_reads_back_and_a_missing_key_is_an_error():
    # dfx.dag/1 (dfx dag --json): a -> b of 1 s and 2 s on one processor, makespan 3 s
    from dfx.schema.dag import read_dag
    from dfx.sim.handmade import solve_dag

    doc = json.loads(
        json.dumps(
            solve_dag([{"name": "a", "time_s": 1.0}, {"name": "b", "inputs": "a", "time_s": 2.0}], pes=1).to_dict()
        )
    )
    r = read_dag(doc)
    assert r.to_dict() == doc and r.makespan_s == 3.0 and [n.name for n in r.nodes] == ["a", "b"]
    del doc["nodes"][1]["time_given"]
    with pytest.raises(SchemaError, match=r"dfx.dag/1: nodes\[1\]\.time_given is missing.*dfx dag --json"):
        read_dag(doc)
