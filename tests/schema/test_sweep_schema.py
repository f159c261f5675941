"""dfx.schema owns the sweep document (dfx.sweep/1, a sweep folder's sweep.json)."""

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
