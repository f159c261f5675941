"""The Ray path gives the same rows as the local path, on a local Ray of 2 CPUs (ray is in the dev extra)."""

import shutil

import pytest

from dfx.sweep import ResultsTable, load_spec, run_sweep
from dfx.sweep.runner import CACHE_DIR


def test_ray_gives_identical_rows(full_sweep, tmp_path):
    pytest.importorskip("ray", reason="Ray is in the dev extra: pip install -e .[dev]")
    spec = load_spec(
        None,
        {
            "models": ["gpt2-block", "bert-layer"],
            "hardware": ["nvidia-h100-sxm", "ibm-spyre"],
            "seq": [8, 32],
            "batch": [2],
        },
    )
    out = tmp_path / "ray"
    shutil.copytree(full_sweep[0] / CACHE_DIR, out / CACHE_DIR)
    run = run_sweep(spec, out, workers=2, ray=True)  # a local Ray with 2 CPUs, shut down after
    assert run.executor == "ray" and run.ran == 8
    import ray

    assert not ray.is_initialized()
    rows = {r["point_id"]: r for r in ResultsTable(out).rows()}
    assert rows == {k: full_sweep[2][k] for k in rows} and len(rows) == 8
