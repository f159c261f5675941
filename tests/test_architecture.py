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
PIPELINE = {"ir", "costs", "hardware", "schedule", "compile", "roofline", "parallel", "arch"}
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
    # models on first use (arch_models)
    import subprocess
    import sys

    code = "import sys, dfx.arch; print(sorted(m for m in sys.modules if m.startswith('dfx.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["dfx.arch"]
