"""Every docstring example in ``src/dfx`` runs as written, collected from the package itself.

The modules are found by walking ``src/dfx``, so a new module's examples run without being listed
anywhere. Modules of the torch packages (``capture/``, ``models/``, ``measure/``) skip where torch is
not installed; every other module must import without it (tests/test_architecture.py).
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
TORCH_PACKAGES = {"capture", "models", "measure"}
_FINDER = doctest.DocTestFinder(exclude_empty=True)
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names() -> list[str]:
    """Dotted names of every module under src/dfx, packages by their ``__init__``."""
    names = []
    for path in sorted((SRC / "dfx").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # running it is the command line, not an example
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _has_examples(name: str) -> bool:
    # read the source, not the module, so that collection imports nothing
    path = SRC.joinpath(*name.split("."))
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()
    return ">>> " in source


MODULES = [n for n in _module_names() if _has_examples(n)]


def test_the_walk_finds_the_modules_with_examples():
    # the seven hand-kept lists this file replaces named these; the walk must find at least them
    assert {
        "dfx.hardware.units",
        "dfx.sim.handmade",
        "dfx.viz.document",
        "dfx.costs.rules_loss",
        "dfx.arch.systolic.chip",
        "dfx.inference.phases",
        "dfx.measure.timing",
    } <= set(MODULES)
    assert len(MODULES) >= 40


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    if name.split(".")[1:2] and name.split(".")[1] in TORCH_PACKAGES:
        pytest.importorskip("torch")
    module = importlib.import_module(name)
    tests = [t for t in _FINDER.find(module, name) if t.examples]
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name}: '>>> ' in the source but no example was collected"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (printed above)"
