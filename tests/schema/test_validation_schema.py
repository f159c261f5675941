"""dfx.schema owns the validation document (dfx.validation/1): one reader, one writer, a missing key is an error."""

from __future__ import annotations

import copy
import json
import math

import pytest

from dfx.schema import VALIDATION_SCHEMA, SchemaError
from dfx.schema.validation import ValidationDoc, example_validation, read_validation


@pytest.fixture(scope="module")
def validation():
    from dfx.measure.comparison import compare

    # a: predicted 2 s, measured 1 s; b: 1 s and 1 s; v: a view, predicted 0 s, measured 0.5 s (not counted)
    return compare(
        {"a": 2.0, "b": 1.0, "v": 0.0},
        {"a": 1.0, "b": 1.0, "v": 0.5},
        2.5,
        categories={"a": "matmul", "b": "elementwise", "v": "view"},
        hardware="host-cpu",
        model={"name": "m", "batch": 1},
        run={"device": "cpu", "threads": 2, "repeat": 3},
    )


def test_the_writer_goes_through_the_record_and_reads_back_the_same_json(validation):
    assert isinstance(validation.to_record(), ValidationDoc)
    doc = json.loads(json.dumps(validation.to_dict()))
    assert doc == validation.to_record().to_dict()
    r = read_validation(doc)
    assert r.to_dict() == doc
    # |2 - 1| / 1 = 1.0 and |1 - 1| / 1 = 0: median 0.5; end to end (2 + 1 + 0 - 2.5) / 2.5 = 0.2
    assert [n.name for n in r.counted] == ["a", "b"] and r.median_abs_error == 0.5
    assert math.isclose(r.end_to_end.error, 0.2)
    assert (r.uncounted.nodes, r.uncounted.measured_s) == (1, 0.5)
    assert r.model_field("name") == "m" and r.model_field("seq") is None and r.run_field("threads") == 2


def test_a_nan_figure_reads_back_as_nan():
    # no counted node: the median error is NaN, written by json as NaN (null in a hand-made document)
    r = read_validation(example_validation({"v": ("view", 0.0, 1.0)}, median_abs_error=None))
    assert math.isnan(r.median_abs_error) and r.counted == ()


@pytest.mark.parametrize("path", [("run",), ("end_to_end", "error"), ("nodes", 0, "counted"), ("uncounted", "nodes")])
def test_a_missing_key_is_an_error_naming_document_and_key(validation, path):
    doc = copy.deepcopy(validation.to_dict())
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    with pytest.raises(SchemaError) as err:
        read_validation(doc)
    dotted = ".".join(str(p) for p in path).replace(".0.", "[0].")
    assert err.value.document == VALIDATION_SCHEMA and err.value.key == dotted
    assert "dfx validate --json" in str(err.value)


def test_a_renamed_key_is_an_error_not_a_default(validation):
    doc = copy.deepcopy(validation.to_dict())
    doc["nodes"][0]["category_name"] = doc["nodes"][0].pop("category")
    with pytest.raises(SchemaError, match=r"nodes\[0\]\.category is missing"):
        read_validation(doc)


def test_another_document_is_refused_by_its_tag():
    with pytest.raises(SchemaError, match="'dfx.validation/0' in x.json: not a dfx.validation/1 document"):
        read_validation({"schema": "dfx.validation/0"}, "x.json")
