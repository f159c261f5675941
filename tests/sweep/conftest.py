"""One full sweep shared by the sweep tests: 3 models x 6 profiles x 4 sequence lengths x 3 batch sizes."""

import pytest

from dfx.sweep import ResultsTable, load_spec, run_sweep

# Three small transformer built-ins (a GPT-2 block, a BERT layer, a Llama-3 GQA layer) on six
# machines whose evaluations differ in kind: GPUs (Inductor-style), a TPU (systolic array model),
# Groq (TSP), Cerebras (wafer mapping), Spyre (scratchpad).
AXES = {
    "models": ["gpt2-block", "bert-layer", "llama3-8b-layer"],
    "hardware": ["nvidia-h100-sxm", "nvidia-a100-sxm-80gb", "google-tpu-v4", "groq-lpu", "cerebras-wse-3", "ibm-spyre"],
    "seq": [8, 16, 24, 32],
    "batch": [1, 2, 4],
}


@pytest.fixture(scope="session")
def spec():
    return load_spec(None, AXES)


@pytest.fixture(scope="session")
def full_sweep(spec, tmp_path_factory):
    """The sweep run once, on two local worker processes; (folder, SweepRun, rows by point id)."""
    out = tmp_path_factory.mktemp("sweep") / "full"
    run = run_sweep(spec, out, workers=2)
    return out, run, {r["point_id"]: r for r in ResultsTable(out).rows()}
