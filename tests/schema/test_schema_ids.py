"""Every document's schema tag is one constant of dfx.schema.ids, defined there and nowhere else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from dfx.schema import ids

SRC = Path(__file__).resolve().parents[2] / "src" / "dfx"
TAG = re.compile(r"dfx\.[a-z_.]+/\d+")


def test_no_schema_tag_is_spelled_outside_dfx_schema():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("schema/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and TAG.fullmatch(node.value):
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, "schema tags spelled out; use the constant of dfx.schema.ids:\n" + "\n".join(found)


def test_each_tag_is_one_constant():
    tags = {name: getattr(ids, name) for name in ids.__all__ if name.endswith("_SCHEMA")}
    assert len(set(tags.values())) == len(tags)  # no two constants share a tag
    assert all(TAG.fullmatch(t) for t in tags.values())
