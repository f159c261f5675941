"""dfx.schema owns the compile document (dfx.compile/1): one reader, one writer, a missing key is an error."""

from __future__ import annotations

import copy
import json

import pytest

from dfx.schema import COMPILE_SCHEMA, SchemaError
from dfx.schema.compile import CompileDoc, read_compile
from tests.compile.test_lower import _chain_graph


@pytest.fixture(scope="module")
def program():
    from dfx.compile import lower_eager
    from dfx.costs import annotate
    from dfx.hardware import load_profile

    return lower_eager(annotate(_chain_graph()), load_profile("h100"))


def test_the_writer_goes_through_the_record_and_reads_back_the_same_json(program):
    record = program.to_record()
    assert isinstance(record, CompileDoc)
    doc = json.loads(json.dumps(program.to_dict()))
    assert doc == record.to_dict()
    assert read_compile(doc).to_dict() == doc
    # the chain graph: relu and neg are the two working nodes, each its own eager kernel
    r = read_compile(doc)
    assert [k.nodes for k in r.kernels] == [("relu",), ("neg",)] and r.totals.kernels == 2
    # relu and neg each read and write 32 fp32 through HBM: 2 * 2 * 128 B = 512 B
    assert r.totals.offchip_bytes == 512 == sum(k.offchip_bytes for k in r.kernels)


@pytest.mark.parametrize("path", [("totals", "offchip_bytes"), ("kernels", 0, "tile_shape"), ("profile",)])
def test_a_missing_key_is_an_error_naming_document_and_key(program, path):
    doc = copy.deepcopy(program.to_dict())
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    with pytest.raises(SchemaError) as err:
        read_compile(doc)
    dotted = ".".join(str(p) for p in path).replace(".0.", "[0].")
    assert err.value.document == COMPILE_SCHEMA and err.value.key == dotted
    assert "dfx compile --json" in str(err.value)


def test_a_renamed_key_is_an_error_not_a_default(program):
    doc = copy.deepcopy(program.to_dict())
    doc["kernels"][0]["offchip"] = doc["kernels"][0].pop("offchip_bytes")
    with pytest.raises(SchemaError, match=r"kernels\[0\]\.offchip_bytes is missing"):
        read_compile(doc)


def test_another_document_is_refused_by_its_tag(program):
    with pytest.raises(SchemaError, match="not a dfx.compile/1 document"):
        read_compile({**program.to_dict(), "schema": "dfx.analysis/1"})
