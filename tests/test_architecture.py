"""The stage order of docs/architecture.md as an enforced contract, read from the import statements.

Every ``import`` in ``src/dfx`` counts, function-level (lazy) ones included. Two rules:

1. torch is imported only by ``capture/``, ``models/`` and ``measure/``: everything from the
   ``Graph`` on is plain Python, so a saved graph costs, compiles and draws without torch.
2. The pipeline stages (ir, costs, hardware, schedule, compile, roofline, parallel, arch) never
   import the layers above them (analysis, inference, sim, shapes, viz, sweep, measure, capture,
   models, cli). The exceptions are the entry-point modules a package keeps beside itself for the
   command line (``command.py``) and its chained API (``api.py``): they are the application layer,
   placed next to the package they drive.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dfx"

TORCH_PACKAGES = {"capture", "models", "measure"}
PIPELINE = {"ir", "costs", "hardware", "schedule", "compile", "roofline", "targets", "parallel", "arch"}
ABOVE_PIPELINE = {
    "analysis",
    "inference",
    "training",
    "sim",
    "shapes",
    "viz",
    "sweep",
    "measure",
    "capture",
    "models",
    "cli",
}
ENTRY_POINT_MODULES = {"command.py", "api.py"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement in ``path``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            if node.module == "dfx":  # `from dfx import analysis`
                found += [(node.lineno, f"dfx.{alias.name}") for alias in node.names]
    return found


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_the_contract_reads_every_module():
    # a contract over no files cannot fail: make sure the walk finds the packages it rules on
    assert {_package(p) for p in _sources()} >= PIPELINE | TORCH_PACKAGES | {"analysis", "cli"}


def test_torch_is_imported_only_by_capture_models_and_measure():
    offenders = [
        f"{p.relative_to(SRC)}:{line} imports {module}"
        for p in _sources()
        if _package(p) not in TORCH_PACKAGES
        for line, module in _imports(p)
        if module == "torch" or module.startswith("torch.")
    ]
    assert not offenders, "torch outside capture/, models/, measure/:\n" + "\n".join(offenders)


@pytest.mark.parametrize("package", sorted(PIPELINE))
def test_pipeline_stages_never_import_the_layers_above(package):
    offenders = []
    for p in (SRC / package).rglob("*.py"):
        if p.name in ENTRY_POINT_MODULES:
            continue
        for line, module in _imports(p):
            parts = module.split(".")
            if parts[0] == "dfx" and len(parts) > 1 and parts[1] in ABOVE_PIPELINE:
                offenders.append(f"{p.relative_to(SRC)}:{line} imports {module}")
    assert not offenders, f"{package}/ imports a higher layer:\n" + "\n".join(offenders)


def test_a_violation_is_seen(tmp_path):
    # the reader itself: a lazy import inside a function is found, with its line
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from dfx.analysis import analyze\n    import torch.fx\n")
    assert _imports(module) == [(2, "dfx.analysis"), (3, "torch.fx")]


def test_importing_dfx_arch_pulls_in_no_roofline_or_costs():
    # arch/__init__.py says so: the protocol's type names are imported for type checking only, the
    # models on first use (each target's arch_model)
    import subprocess
    import sys

    def loaded(statement: str) -> set[str]:
        code = f"import sys; {statement}; print(sorted(m for m in sys.modules if m.startswith('dfx.')))"
        return set(
            eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        )

    # beyond what `import dfx` itself loads (its version), dfx.arch alone
    assert loaded("import dfx.arch") - loaded("import dfx") == {"dfx.arch"}


# --- one target per machine family (docs/architecture.md, "Targets") ---------------------------------

FAMILY_KINDS = {"GPU", "TPU", "TSP", "WAFER", "SPYRE", "DATAFLOW", "CPU"}
KIND_VALUES = {"gpu", "tpu", "tsp", "wafer", "spyre", "dataflow", "cpu"}
# where a family may be named: the targets themselves, and the schema that defines the kinds
FAMILY_HOMES = {"targets", "hardware"}


def _family_tests(path: Path) -> list[str]:
    """Every place ``path`` tells machine families apart: ``Kind.GPU`` and its siblings, a comparison
    of some ``.kind`` with a family's name, any comparison or method call on a ``.vendor``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in FAMILY_KINDS
            and isinstance(node.value, ast.Name)
            and node.value.id == "Kind"
        ):
            found.append(f"{node.lineno}: Kind.{node.attr}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "vendor" for s in sides):
                found.append(f"{node.lineno}: compares a vendor")
            if any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides) and any(
                isinstance(s, ast.Constant) and s.value in KIND_VALUES for s in sides
            ):
                found.append(f"{node.lineno}: compares a kind with a family's name")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "vendor":
            found.append(f"{node.lineno}: reads .vendor.{node.attr}")
    return found


def test_only_the_targets_tell_machine_families_apart():
    offenders = [
        f"{p.relative_to(SRC)}:{hit}" for p in _sources() if _package(p) not in FAMILY_HOMES for hit in _family_tests(p)
    ]
    assert not offenders, "a machine family tested outside dfx/targets:\n" + "\n".join(offenders)


def test_a_family_test_is_seen(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "def f(p):\n    if p.kind is Kind.GPU: pass\n    if p.vendor.lower() == 'groq': pass\n"
        "    return p.kind == 'tsp'\n"
    )
    assert sorted(h.split(":")[0] for h in _family_tests(module)) == ["2", "3", "4"]


def test_every_kind_has_one_target():
    from dfx.hardware import Kind, list_profiles, load_profile
    from dfx.targets import TARGETS, target_for

    assert set(TARGETS) == set(Kind)
    for ref in list_profiles():
        profile = load_profile(ref if isinstance(ref, str) else ref.id)
        assert target_for(profile).kind is profile.kind


# --- stages in one direction, and no cycles -------------------------------------------------------

# The analysis pipeline, lowest first (docs/architecture.md): a stage imports only those before it.
STAGES = ("capture", "costs", "compile", "roofline", "targets", "parallel")


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


@pytest.mark.parametrize("stage", STAGES)
def test_stages_import_only_downward(stage):
    later = set(STAGES[STAGES.index(stage) + 1 :])
    offenders = [
        f"{p.relative_to(SRC)}:{line} imports {module}"
        for p in (SRC / stage).rglob("*.py")
        if p.name not in ENTRY_POINT_MODULES
        for line, module in _imports(p)
        if module.split(".")[0] == "dfx" and len(module.split(".")) > 1 and module.split(".")[1] in later
    ]
    assert not offenders, f"{stage}/ imports a later stage:\n" + "\n".join(offenders)


def test_no_import_cycle_anywhere():
    import networkx as nx

    modules = {_module_name(p): p for p in _sources()}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                candidates = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            graph.add_edges_from((name, c) for c in candidates if c in modules and c != name)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, "import cycles (lazy imports included):\n" + "\n".join(map(str, cycles))
