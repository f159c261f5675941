"""dfx.schema owns the simulation document (dfx.simulation/1): one reader, one writer, a missing key is an error."""

from __future__ import annotations

import copy
import json

import pytest

from dfx.schema import SIMULATION_SCHEMA, SchemaError
from dfx.schema.simulation import SimulationDoc, example_simulation, read_simulation

# fork-join s -> {a, b} -> j of 1, 2, 2, 1 s on two PEs: both policies run a and b side by side
FORK_JOIN = ({"s": 1.0, "a": 2.0, "b": 2.0, "j": 1.0}, [("s", "a"), ("s", "b"), ("a", "j"), ("b", "j")])


@pytest.fixture(scope="module")
def result():
    from dfx.sim.api import simulate

    return simulate(FORK_JOIN, pes=2, steps=True)


def test_the_writer_goes_through_the_record_and_reads_back_the_same_json(result):
    assert isinstance(result.to_record(), SimulationDoc)
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc == result.to_record().to_dict()
    r = read_simulation(doc)
    assert r.to_dict() == doc
    # makespan 1 + 2 + 1 = 4 s under both policies; critical path s-a-j = 4 s; work 6 s / 2 PEs = 3 s
    assert [p.name for p in r.policies] == ["static", "dynamic"]
    assert [p.makespan_mean_s for p in r.policies] == [4.0, 4.0]
    assert (r.critical_path_s, r.work_over_pes_s, r.lower_bound_s) == (4.0, 3.0, 4.0)
    assert r.static_over_dynamic == 1.0 and r.comparison is not None and r.comparison.runs == 1
    assert r.policies[0].steps is not None and r.policies[0].steps[0].fired == ("s",)


def test_the_example_document_is_valid():
    r = read_simulation(example_simulation({"dynamic": [("a", 0, 0.0, 2.0)]}, pes=1))
    assert r.policies[0].run0_makespan_s == 2.0 and r.comparison is None


@pytest.mark.parametrize(
    "path",
    [
        ("runs",),
        ("lower_bounds", "work_s"),
        ("policies", "static", "memory", "peak_bytes"),
        ("policies", "dynamic", "schedule", 0, "pe"),
    ],
)
def test_a_missing_key_is_an_error_naming_document_and_key(result, path):
    doc = copy.deepcopy(result.to_dict())
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    with pytest.raises(SchemaError) as err:
        read_simulation(doc)
    dotted = ".".join(str(p) for p in path).replace(".0.", "[0].")
    assert err.value.document == SIMULATION_SCHEMA and err.value.key == dotted
    assert "dfx simulate --json" in str(err.value)


def test_a_renamed_key_is_an_error_not_a_default(result):
    doc = copy.deepcopy(result.to_dict())
    doc["policies"]["static"]["predicted_s"] = doc["policies"]["static"].pop("predicted_makespan_s")
    with pytest.raises(SchemaError, match=r"policies\.static\.predicted_makespan_s is missing"):
        read_simulation(doc)


def test_another_document_is_refused_by_its_tag():
    with pytest.raises(SchemaError, match="'dfx.analysis/1'.*not a dfx.simulation/1 document"):
        read_simulation({"schema": "dfx.analysis/1"})
