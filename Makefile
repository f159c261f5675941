# dfx: `make demo` runs the main job on the built-in default model; `make test` runs the tests.
# Both create .venv on first use. torch 2.13.0 (CPU) is installed first and pinned, so that pip
# does not resolve the torch range to a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
OUT ?= out/demo

.PHONY: venv lint format test demo bench clean system-deps images

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

# Opt-in, as root: Graphviz (its `dot` lays out the DAG with module clusters; without it dfx lays the
# DAG out itself) and Chromium (the browser tests of report.html, skipped without it). No other
# target installs system packages: `make test` and `make demo` need no root.
system-deps:
	@scripts/install_system_deps.sh graphviz chromium

# ruff's lint rules (pyproject.toml [tool.ruff.lint]) and its formatter's check ([tool.ruff.format]);
# .ci/run runs it before the tests. `make format` rewrites what the check would change.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .

# The suite runs on every core (pytest-xdist): about 8 minutes (2,532 tests) on this project's 2-core machine.
test: venv
	$(PY) -m pytest -q -n auto

demo: venv
	$(VENV)/bin/dfx analyze gpt2-block --out $(OUT) --force

# The README's pictures (docs/images/), regenerated from the GPT-2 block.
images: venv
	$(PY) scripts/make_readme_images.py

bench: venv
	$(PY) bench/bench_capture.py

clean:
	rm -rf $(VENV) out .pytest_cache
