"""dfx.schema owns the calibration document (dfx.calibration/1): one reader, one writer, a missing key is an error.

The document written by a real calibration reads back unchanged in tests/measure/test_calibrate.py
(it needs torch and seconds of measuring); here a small hand-made one shows the rules.
"""

from __future__ import annotations

import copy

import pytest

from dfx.schema import CALIBRATION_SCHEMA, SchemaError
from dfx.schema.calibration import TABLE_NAMES, read_calibration, read_calibration_tables

PROFILE = {"id": "host-cpu-calibrated", "name": "a CPU"}  # read as a plain mapping; parse_profile validates it
DOC = {
    "schema": "dfx.calibration/1",
    "device": "cpu",
    "threads": 2,
    "torch_version": "2.13.0",
    "date": "2026-12-01",
    "profile": PROFILE,
    "overhead_curve": [{"gap_s": 1e-6, "overhead_s": 4e-6}],
    "overhead_by_kind": {"add": 3e-6},
    "overhead_mixed": {"add": 4e-6},
    "overhead_curve_by_kind": [{"kind": "mean", "gap_s": 1e-6, "overhead_s": 5e-6}],
    "overhead_curve_each": [{"kind": "relu", "gap_s": 1e-6, "overhead_s": 2e-6}],
    "gemm_bias": [{"rows": 64, "k": 512, "n": 512, "mm_s": 1e-4, "addmm_s": 1.05e-4}],
    "vector_rates": {"exp": 1e9},
    "gemm_dtype": "float32",
    "gemm_table": [{"rows": 1, "k": 512, "n": 512, "flops": 524288, "flop_per_s": 2e10}],  # 2 * 1 * 512 * 512
    "attention_rates": [{"causal": True, "seq": 128, "flop_per_s": 5e10}],
    "conv_points": [{"rows": 64, "k": 27, "n": 16, "flop_per_s": 1e10}],
    "resident_bytes": 8388608,
    "reference_flop_per_s": 3e10,
    "gemm_cold": [{"rows": 16, "k": 4096, "n": 4096, "hot_s": 4e-3, "cold_s": 7e-3}],
    "after_gemm": [{"bytes": 589824, "streamed_bytes": 1310720, "hot_s": 5e-6, "after_s": 1e-5}],
    "cold_write": [{"bytes": 1048576, "hot_s": 2e-5, "cold_s": 7.7e-5}],
    "conv_points_channels_last": [{"rows": 64, "k": 27, "n": 16, "flop_per_s": 1.5e10}],
    "layout_copy": [{"bytes": 3211264, "time_s": 1.2e-4}],
    "after_gemm_chain": [{"position": 1, "streamed_bytes": 69206016, "time_s": 1.3e-4}],
    "compiled_overhead": {"generated": 1.8e-6, "addmm": 5e-6, "mm": 4e-6, "first_addmm": 6.5e-6},
    "vector_flop_per_s": 1e9,
    "gemm_curve": [{"flops": 524288, "flop_per_s": 2e10}],
    "measurements": {"op_overhead_s": {"value": 4e-6, "median_s": 4e-6, "reps": 100, "how": "torch.add"}},
    "warnings": [],
    "affinity": [0, 1],
    "verdict": {"busy": False, "line": "the machine was quiet", "reasons": [], "before": None, "after": None},
}


def test_a_document_reads_back_to_the_same_json():
    r = read_calibration(DOC)
    assert r.to_dict() == DOC
    assert r.gemm_table[0].flops == 2 * 1 * 512 * 512 and r.attention_rates[0].causal is True
    assert r.missing() == ()  # every table is there
    assert r.tables.resident_bytes == 8388608 and r.measurements["op_overhead_s"].reps == 100
    assert r.verdict is not None and r.verdict.busy is False and r.affinity == (0, 1)


def test_a_document_written_before_the_tables_existed_reads_them_as_empty():
    first_version = {k: v for k, v in DOC.items() if k not in TABLE_NAMES + ("gemm_dtype", "affinity", "verdict")}
    r = read_calibration(first_version)
    assert r.missing() == TABLE_NAMES and r.gemm_dtype == "float32" and r.gemm_table == ()
    assert r.verdict is None and r.affinity == ()


@pytest.mark.parametrize(
    "path", [("profile",), ("threads",), ("gemm_table", 0, "flop_per_s"), ("measurements", "op_overhead_s", "how")]
)
def test_a_missing_key_is_an_error_naming_document_and_key(path):
    doc = copy.deepcopy(DOC)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    with pytest.raises(SchemaError) as err:
        read_calibration(doc)
    dotted = ".".join(str(p) for p in path).replace(".0.", "[0].")
    assert err.value.document == CALIBRATION_SCHEMA and err.value.key == dotted
    assert "dfx calibrate --json" in str(err.value)


def test_a_renamed_key_is_an_error_not_a_default():
    doc = copy.deepcopy(DOC)
    doc["attention_rates"][0]["seq_len"] = doc["attention_rates"][0].pop("seq")
    with pytest.raises(SchemaError, match=r"attention_rates\[0\]\.seq is missing"):
        read_calibration(doc)


def test_a_wrong_kind_is_an_error():
    with pytest.raises(SchemaError, match=r"attention_rates\[0\]\.causal has a bad value 'yes'"):
        read_calibration({**DOC, "attention_rates": [{"causal": "yes", "seq": 128, "flop_per_s": 5e10}]})


def test_a_profiles_calibrated_section_reads_through_the_same_tables():
    tables = {k: DOC[k] for k in TABLE_NAMES + ("gemm_dtype",)}
    t = read_calibration_tables({**tables, "gemm_table": [{"rows": 1, "k": 512, "n": 512, "flop_per_s": 2e10}]})
    assert t.gemm_table[0].flops is None and t.to_dict()["gemm_table"] == [
        {"rows": 1, "k": 512, "n": 512, "flop_per_s": 2e10}
    ]


def test_another_document_is_refused_by_its_tag():
    with pytest.raises(SchemaError, match="not a dfx.calibration/1 document"):
        read_calibration({"schema": "dfx.validation/1"})
