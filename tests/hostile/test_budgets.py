"""The budget mechanisms themselves: faster searches give the same answers, forced writes still write."""

import math

from ._runner import run_main


def _sides_by_every_block_count(dim: int, granule: int) -> list[int]:
    # the definition: for every block count r, the smallest granule multiple covering ceil(dim / r)
    out = set()
    for blocks in range(1, dim + 1):
        side = min(dim, granule * math.ceil(math.ceil(dim / blocks) / granule))
        out.add(side)
        if side <= granule:
            break
    return sorted(out)


def test_tile_sides_skip_only_repeated_block_counts():
    from dfx.arch.memory.tiling import _sides

    for dim in [*range(1, 200), 4096, 4099, 12_288, 50_257, 65_537]:
        for granule in (1, 7, 8, 64):
            assert _sides(dim, granule) == _sides_by_every_block_count(dim, granule), (dim, granule)


def test_animate_with_force_replaces_the_file_and_without_keeps_it(tmp_path):
    (tmp_path / "user.gif").write_bytes(b"mine")
    kept = run_main(["systolic", "--gemm", "2,2,2", "--array", "2x2", "--animate", "user.gif"], tmp_path)
    assert kept.rc == 2 and (tmp_path / "user.gif").read_bytes() == b"mine"
    forced = run_main(
        ["systolic", "--gemm", "2,2,2", "--array", "2x2", "--animate", "user.gif", "--force", "--json"], tmp_path
    )
    assert forced.rc == 0, forced.err
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written in (["user.gif"], ["user.gif", "user.png"]), written  # a PNG strip where pillow is missing
    assert (tmp_path / "user.gif").read_bytes() != b"mine" or (tmp_path / "user.png").exists()


def test_a_dot_that_never_returns_is_stopped_and_dfx_draws_the_dag(tmp_path, monkeypatch):
    """A `dot` (a shell wrapper whose child sleeps) past its budget: killed, dfx lays out the DAG, one note."""
    import json
    import os
    import time

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dot").write_text("#!/bin/sh\nsleep 1000\n")
    (fake / "dot").chmod(0o755)
    made = run_main(["analyze", "mlp", "--hw", "h100", "--json"], tmp_path)
    assert made.rc == 0, made.err
    (tmp_path / "a.json").write_text(json.dumps(json.loads(made.out)))
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DFX_DOT_TIMEOUT_S", "1")
    start = time.perf_counter()
    result = run_main(["report", "a.json", "--out", "pictures"], tmp_path)
    assert time.perf_counter() - start < 60
    assert result.rc == 0, result.err
    written = {p.name for p in (tmp_path / "pictures").iterdir()}
    assert {"dag.dot", "dag.svg", "dag.png"} <= written, written
    assert "<svg" in (tmp_path / "pictures" / "dag.svg").read_text()
    assert "did not finish in 1 s and was stopped" in result.err and "dfx laid out" in result.err


def test_dot_is_given_twenty_seconds_by_default(monkeypatch):
    from dfx.viz.dot import dot_timeout_s

    monkeypatch.delenv("DFX_DOT_TIMEOUT_S", raising=False)
    assert dot_timeout_s() == 20.0
    monkeypatch.setenv("DFX_DOT_TIMEOUT_S", "nonsense")
    assert dot_timeout_s() == 20.0
