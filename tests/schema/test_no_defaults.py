"""No document key is read with a default outside dfx.schema: a renamed key must fail, never read as 0.

A read of a key by name, ``x.get("key")`` or ``x.get("key", default)``, is how a document's
missing key turns into a silent default. This test finds every such call in ``src/dfx`` outside
``dfx/schema`` (where :meth:`dfx.schema.fields.Obj.opt` is the one documented way to read an
optional key). The calls left are on mappings that are not dfx's documents; each is listed below
with the reason, by file and receiver, so that a new document read fails here and a stale entry
does too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dfx"

# (file under src/dfx, receiver expression) -> why a keyed .get there is not a document read
NOT_DOCUMENTS = {
    # Hugging Face config.json: torch's/transformers' format, whose keys vary by model family
    ("models/hf.py", "config"): "a Hugging Face config.json",
    ("models/hf.py", "c"): "a Hugging Face config.json",
    ("models/hf.py", "c.get('rope_parameters') or {}"): "a Hugging Face config.json",
    ("models/families.py", "c"): "a Hugging Face config.json",
    ("models/hf.py", "fields"): "a Hugging Face config.json (the fields handed to transformers)",
    ("models/families.py", "rope"): "a Hugging Face config.json's rope_parameters",
    ("models/families.py", "defaults"): "a reader's keyword defaults, not a document",
    ("arch/memory/model_shape.py", "config"): "a Hugging Face config.json",
    ("arch/memory/model_shape.py", "c"): "a Hugging Face config.json",
    ("arch/memory/api.py", "config"): "a Hugging Face config.json",
    # an object's own __dict__: the fields a result defers to their first read (HardwareResult, ProgramResult)
    ("roofline/evaluate.py", "fields_"): "a HardwareResult's __dict__ (its deferred fields)",
    ("roofline/program.py", "fields_"): "a ProgramResult's __dict__ (its deferred fields)",
    # torch's own structures
    ("capture/build.py", "node.meta"): "an fx node's meta",
    ("capture/inductor.py", "fx_node.meta"): "an fx node's meta",
    ("capture/propagate.py", "n.meta"): "an fx node's meta",
    ("capture/symbolic.py", "node.meta"): "an fx node's meta",
    ("capture/symbolic.py", "cond.meta"): "an fx node's meta (a guard's condition)",
    ("capture/symbolic.py", "placeholders[user].meta"): "an fx node's meta",
    ("capture/trace.py", "node.meta"): "an fx node's meta",
    ("capture/joint.py", "node.meta"): "an fx node's meta",
    ("capture/routing.py", "kwargs"): "an aten call's keyword arguments",
    ("measure/compiled.py", "mapping"): "Inductor's provenance tracking JSON",
    ("hardware/loader.py", "error"): "a pydantic validation error",
    # in-memory values while they are built, before any document is written
    ("sweep/evaluate.py", "task"): "a sweep task in memory: capture_cache is set only when the user's cache is on",
    ("result.py", "self.model"): "Analysis.model, the model fields an analysis records",
    ("compile/schedule.py", "program.meta"): "Program.meta, set by the compiler passes",
    ("measure/comparison.py", "self.run"): "Validation.run while the document is built",
    ("measure/validation.py", "measured.run"): "Measured.run, how the real run went",
    ("measure/validation.py", "info"): "capture_spec's info about the model",
    ("measure/calibration.py", "got"): "calibrate's benchmark results while it measures (a family may not run)",
    ("measure/machine.py", "self.overhead_by_kind"): "MachineModel's table, read from its record",
    (
        "measure/machine.py",
        "self.compiled_overhead",
    ): "MachineModel's table, read from its record; a kind absent is None",
    ("measure/cache_model.py", "machine.overhead_by_kind"): "MachineModel's table, read from its record",
    ("measure/calibration.py", "caches"): "the caches Linux reports",
    ("sweep/evaluate.py", "metrics"): "one point's metrics while its row is built",
    ("sweep/spec.py", "kwargs"): "a function's keyword arguments",
    ("sweep/evaluate.py", "kw"): "split_of's keywords for evaluate_on",
    ("sweep/evaluate.py", "result.extras"): "HardwareResult.extras in memory: chips only where a result spans chips",
    ("arch/gpu/plan.py", "dict(cn.flops_by_category)"): "a costed node's FLOPs by category",
    ("sim/api.py", "g.graph"): "a networkx graph's attributes given by the caller",
    ("sim/dag.py", "attrs"): "a networkx node's attributes given by the caller (optional by the API)",
    ("viz/render.py", "files"): "the pictures drawn so far",
    ("cli.py", "row"): "a row of `dfx hw list`, built by the command",
    ("hardware/quick.py", "fields"): "the fields of a quick profile text (--hw peak=...,bw=...)",
    ("viz/roofs.py", "profile"): "a shipped hardware profile's SI mapping (validated by its schema)",
    ("viz/roofs.py", "m"): "a memory level of that profile",
    # user input tables, not dfx's documents: their optional columns are the format (docs/dag.md)
    ("sim/handmade.py", "row"): "a row of a hand-made DAG table",
    # the checker that runs before a document is read, on possibly hostile input (docs/limits.md)
    ("report/doccheck.py", "node"): "checks a saved analysis before read_analysis",
    ("report/doccheck.py", "edge"): "checks a saved analysis before read_analysis",
    ("report/doccheck.py", "doc"): "checks a saved analysis before read_analysis",
    ("report/doccheck.py", "summary"): "checks a saved analysis before read_analysis",
    (
        "report/documents.py",
        "doc",
    ): "names what a file is by its schema tag (absent: not a dfx document), before a record reads it",
    # documents without a dfx.schema record yet (docs/export-format.md, "Documents"): dfx.graph/1
    # and the command reports below. TODO: records for them, then these entries go.
    ("ir/graph.py", "data"): "dfx.graph/1, read by Graph.from_dict (optional keys of older graphs)",
    ("ir/spec.py", "data"): "a TensorSpec of dfx.graph/1 (stride optional)",
    ("report/console.py", "o"): "an output of a dfx.graph/1 document (stride optional)",
    ("arch/memory/report.py", "d"): "the `dfx energy --json` report",
    ("arch/gpu/api.py", "doc"): "the `dfx triton --json` report",
    (
        "sweep/report.py",
        "r",
    ): "a row of a sweep's results table (chips, parallel: columns added with the parallel axis)",
}


def _keyed_gets(path: Path) -> list[tuple[int, str, str]]:
    """(line, receiver, key) of every ``receiver.get("key", ...)`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            receiver = ast.unparse(node.func.value)
            if receiver != "os.environ":  # the environment is not a document
                found.append((node.lineno, receiver, node.args[0].value))
    return found


def _scan() -> dict[tuple[str, str], list[str]]:
    seen: dict[tuple[str, str], list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("schema/"):
            continue
        for line, receiver, key in _keyed_gets(path):
            seen.setdefault((rel, receiver), []).append(f"{rel}:{line}: {receiver}.get({key!r}, ...)")
    return seen


def test_no_document_key_is_read_with_a_default_outside_the_schema():
    offenders = [site for where, sites in _scan().items() if where not in NOT_DOCUMENTS for site in sites]
    assert not offenders, (
        "a document key read with .get() outside dfx.schema: read it through the document's "
        "record (dfx.schema), or, if the mapping is not a document, add it to NOT_DOCUMENTS "
        "with the reason:\n" + "\n".join(offenders)
    )


def test_the_allow_list_has_no_stale_entries():
    stale = sorted(set(NOT_DOCUMENTS) - set(_scan()))
    assert not stale, f"NOT_DOCUMENTS entries no longer found (remove them): {stale}"


def test_the_scan_sees_a_document_read(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(doc):\n    return doc.get('makespan_s', 0.0) + doc['x'].get('y')\n")
    assert _keyed_gets(module) == [(2, "doc", "makespan_s"), (2, "doc['x']", "y")]
