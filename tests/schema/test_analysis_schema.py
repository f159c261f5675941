"""dfx.schema owns the analysis document: one reader, one writer, and a missing key is an error."""

from __future__ import annotations

import copy
import json

import pytest

from dfx.schema import ANALYSIS_SCHEMA, Bound, SchemaError
from dfx.schema.analysis import AnalysisDoc, example_analysis, example_hardware, migrate_analysis, read_analysis

PROFILES = ["nvidia-h100-sxm", "google-tpu-v5e", "groq-lpu"]  # compiled GPU (eager beside), systolic, chips


@pytest.fixture(scope="module")
def doc():
    import dfx

    return json.loads(json.dumps(dfx.analyze("mlp", hardware=PROFILES).to_dict()))


def test_a_written_document_reads_back_to_the_same_json(doc):
    # symmetry: every key the writers put in, the records read, and write back unchanged
    record = read_analysis(doc)
    assert json.loads(json.dumps(record.to_dict())) == doc
    assert set(record.hardware) == set(PROFILES)


def test_the_writers_go_through_the_records(doc):
    import dfx

    a = dfx.analyze("mlp", hardware=["nvidia-h100-sxm"])
    assert isinstance(a.to_record(), AnalysisDoc)
    assert a.to_dict() == a.to_record().to_dict()


def test_the_typed_fields_carry_the_document_values(doc):
    r = read_analysis(doc)
    h100 = r.hardware["nvidia-h100-sxm"]
    raw = doc["hardware"]["nvidia-h100-sxm"]
    assert h100.id == "nvidia-h100-sxm" and h100.makespan_s == raw["makespan_s"]
    assert h100.eager is not None and h100.eager.serial_time_s == raw["eager"]["serial_time_s"]
    assert h100.program is not None and len(h100.program.kernels) == raw["program"]["kernel_count"]
    # bound is read through the enum, and written back as its string
    for name, node in h100.nodes.items():
        assert node.bound is Bound(raw["nodes"][name]["bound"])
    assert "systolic" in r.hardware["google-tpu-v5e"].extras  # an architecture model's fields are kept
    assert r.hardware["groq-lpu"].chips == doc["hardware"]["groq-lpu"]["chips"]


@pytest.mark.parametrize(
    "path",
    [
        ("totals", "flops"),
        ("nodes", 0, "bytes_read"),
        ("edges", 0, "bytes"),
        ("hardware", "nvidia-h100-sxm", "serial_time_s"),
        ("hardware", "nvidia-h100-sxm", "nodes", "linear", "time_s"),
        ("hardware", "nvidia-h100-sxm", "program", "kernels", 0, "end_s"),
        ("hardware", "nvidia-h100-sxm", "eager", "makespan_s"),
    ],
)
def test_a_missing_key_is_an_error_naming_document_key_and_fix(doc, path):
    broken = copy.deepcopy(doc)
    parent = broken
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    with pytest.raises(SchemaError) as err:
        read_analysis(broken)
    dotted = ".".join(str(p) for p in path).replace(".0.", "[0].").replace(".0", "[0]")
    assert err.value.document == ANALYSIS_SCHEMA and err.value.key == dotted
    assert f"{ANALYSIS_SCHEMA}: {dotted} is missing" in str(err.value) and "dfx analyze --out" in str(err.value)


def test_a_renamed_key_is_an_error_not_a_default(doc):
    broken = copy.deepcopy(doc)
    h = broken["hardware"]["nvidia-h100-sxm"]
    h["serial_s"] = h.pop("serial_time_s")  # renamed by a careless writer
    with pytest.raises(SchemaError, match=r"hardware\.nvidia-h100-sxm\.serial_time_s is missing"):
        read_analysis(broken)


def test_a_wrong_kind_of_value_is_an_error(doc):
    broken = copy.deepcopy(doc)
    broken["totals"]["flops"] = "many"
    with pytest.raises(SchemaError, match=r"totals\.flops has a bad value 'many'"):
        read_analysis(broken)
    broken = copy.deepcopy(doc)
    first = next(iter(broken["hardware"]["nvidia-h100-sxm"]["nodes"]))
    broken["hardware"]["nvidia-h100-sxm"]["nodes"][first]["bound"] = "latency"  # not a Bound
    with pytest.raises(SchemaError, match="bound has a bad value 'latency'"):
        read_analysis(broken)


def test_another_document_is_refused():
    with pytest.raises(SchemaError, match="'dfx.simulation/1'.*not an analysis document"):
        read_analysis({"schema": "dfx.simulation/1"})
    with pytest.raises(SchemaError, match="must be a JSON object"):
        read_analysis([1, 2])


def test_a_document_from_before_makespan_and_program_reads_through_the_migration():
    # written before 2026-12-01 (38ae178): no makespan_s, no program; one operator at a time
    old = example_analysis(
        nodes=[{"name": "a", "flops": 4}], hardware={"toy": example_hardware({"a": {"time_s": 3.0}})}
    )
    del old["hardware"]["toy"]["makespan_s"], old["hardware"]["toy"]["program"]
    r = read_analysis(old)
    assert r.hardware["toy"].makespan_s == 3.0  # = serial_time_s, the sum of the one node's 3.0 s
    assert r.hardware["toy"].program is None
    assert "makespan_s" not in old["hardware"]["toy"]  # the user's document is not changed
    # nothing else is filled in: a key missing for another reason is still an error
    del old["hardware"]["toy"]["serial_time_s"]
    with pytest.raises(SchemaError, match="serial_time_s is missing"):
        read_analysis(old)


def test_migrate_leaves_a_current_document_alone(doc):
    assert migrate_analysis(doc) is doc


def test_bound_and_its_string_are_one_dict_key():
    # documents hold "compute"; pictures key colours by string: the enum must find them
    assert {"compute": 1}[Bound.COMPUTE] == 1 and {Bound.MEMORY: 2}["memory"] == 2
    assert f"{Bound.NONE}" == "none"
