"""The functional cycle-level simulation: it computes X @ W, and its cycle count is the analytical one."""

from __future__ import annotations

import numpy as np
import pytest

from dfx.arch.systolic import Dataflow, gemm, step
from dfx.arch.systolic.render import animate, text_frames
from dfx.errors import DfxError

CASES = [(4, 3, 3, 4, 4), (2, 2, 2, 2, 2), (5, 7, 6, 2, 3), (9, 4, 5, 3, 4), (1, 9, 2, 4, 2), (6, 1, 1, 3, 3)]


@pytest.mark.parametrize("dataflow", list(Dataflow))
@pytest.mark.parametrize("m,k,n,rows,cols", CASES)
def test_product_and_cycles_match(dataflow, m, k, n, rows, cols):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    x, w = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    trace = step(x, w, rows=rows, cols=cols, dataflow=dataflow)
    expected = gemm(m, k, n, rows=rows, cols=cols, dataflow=dataflow)
    np.testing.assert_allclose(trace.result, x @ w, rtol=1e-12, atol=1e-12)
    assert trace.cycles == expected.compute_cycles
    assert trace.cycles_with_drain == expected.compute_cycles_with_drain
    assert len(trace.frames) == trace.cycles_with_drain


def test_ws_frames_show_load_then_skewed_wavefront():
    x, w = np.arange(12.0).reshape(4, 3), np.arange(9.0).reshape(3, 3)
    trace = step(x, w, rows=4, cols=4, dataflow="ws")
    phases = [f.phase for f in trace.frames]
    assert phases[:4] == ["load"] * 4 and set(phases[4:]) == {"stream"}
    first = trace.frames[4]  # first stream cycle: only row 0, column 0 holds an input (X[0, 0])
    assert first.moving[0][0] == 0.0 and all(v is None for row in first.moving[1:] for v in row)
    assert trace.frames[3].stationary[0][:3] == (0.0, 1.0, 2.0)  # W[0] in the top row once loaded
    # output (t, c) leaves the bottom at stream cycle t + (R - 1) + c: Y[0, 0] at 4 + 3 = cycle 7
    assert trace.frames[7].emitted == ((0, 0, float((x @ w)[0, 0])),)
    last = {(i, j): v for f in trace.frames for i, j, v in f.emitted}
    assert len(last) == 12 and all(last[i, j] == (x @ w)[i, j] for i, j in last)


def test_os_drain_emits_results_after_the_counted_cycles():
    x, w = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0], [7.0, 8.0]])
    trace = step(x, w, rows=2, cols=2, dataflow="os")
    assert (trace.cycles, trace.cycles_with_drain) == (4, 6)  # PB-18
    assert [f.phase for f in trace.frames] == ["stream"] * 4 + ["drain"] * 2
    assert trace.frames[4].emitted == ((1, 0, 43.0), (1, 1, 50.0))  # bottom row leaves first


def test_text_frames_and_animation(tmp_path):
    trace = step(np.ones((2, 2)), np.ones((2, 2)), rows=2, cols=2, dataflow="ws")
    text = text_frames(trace)
    assert text.startswith("cycle 0  fold 0  load") and "result Y = X @ W" in text
    written = animate(trace, tmp_path / "ws.gif")
    head = written.read_bytes()[:6]
    assert (written.suffix, head) in {(".gif", b"GIF89a"), (".png", b"\x89PNG\r\n")}


def test_too_large_for_step_mode_is_a_one_line_error():
    with pytest.raises(DfxError, match="small cases"):
        step(np.ones((4, 4)), np.ones((4, 4)), rows=32, cols=32)
    with pytest.raises(DfxError, match="x \\[M, K\\]"):
        step(np.ones((4, 3)), np.ones((4, 4)), rows=4, cols=4)
