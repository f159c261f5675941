"""Decode steps built from three captures equal their own captures; generate sums them within 0.1%."""

import math

import pytest

import dfx
from dfx.analysis import evaluate_on
from dfx.costs.precision import Precision
from dfx.hardware import load_profile
from dfx.inference.kv_range import DecodeRange, NotAffine, affine_text
from dfx.inference.phases import sum_over_steps
from dfx.inference.steps import capture_step, is_cache_input


def test_affine_text_moves_only_the_integers_that_differ():
    at = affine_text('{"s": [4, 10, 40], "eps": 1e-05}', '{"s": [4, 20, 80], "eps": 1e-05}', 10, 20)
    assert at(13) == '{"s": [4, 13, 52], "eps": 1e-05}'  # 10 + 10 * 3/10, 40 + 40 * 3/10
    with pytest.raises(NotAffine):
        affine_text('{"op": "mm"}', '{"op": "bmm"}', 1, 2)
    with pytest.raises(NotAffine):  # a rise of 3 over 2 steps is not whole at k = 1
        affine_text("[0]", "[3]", 0, 2)(1)


def test_every_step_of_the_range_equals_its_capture(tiny_llama):
    def capture(k):
        return capture_step(tiny_llama, batch=2, tokens=1, kv_len=k, dtype="bfloat16")

    steps = DecodeRange(capture, 8, 19)
    for k in range(8, 20):
        built = steps.step(k)
        assert built.graph == capture(k).graph, k  # every node, shape, stride, byte and name
        assert built.costed.total == capture(k).costed.total
    assert steps.affine is True


HARDWARE = ("nvidia-h100-sxm", "groq-lpu", "cerebras-wse-3")


def test_generate_equals_the_step_by_step_sum_within_a_thousandth(tiny_llama):
    prompt, output, batch = 16, 40, 2
    fast = dfx.analyze(
        tiny_llama,
        hardware=list(HARDWARE),
        phase="generate",
        prompt_len=prompt,
        output_len=output,
        batch=batch,
        dtype="fp32",  # the slow path below captures in fp32
    )
    precision = Precision.of("float32")
    for hw in HARDWARE:
        profile = load_profile(hw)
        # the slow path: every decode step captured and evaluated (KV lengths P .. P+O-2)
        slow = [
            evaluate_on(
                precision.apply(
                    capture_step(tiny_llama, batch=batch, tokens=1, kv_len=k, dtype="float32").costed, is_cache_input
                ),
                profile,
            ).latency_s
            for k in range(prompt, prompt + output - 1)
        ]
        got = fast.inference.metrics(profile.id)
        assert math.isclose(got.decode_s, sum(slow), rel_tol=1e-3), hw
        assert len(got.decode_kv_lens_evaluated) < output - 1  # a range was summed, not every step


def test_the_tolerance_checks_quarter_points():
    # on the chord at the midpoint only: a bump at 3/4 of the range must be found
    def f(k):
        return 1.0 + (5.0 if k == 75 else 0.0)

    total, seen = sum_over_steps(f, 0, 100, 1e-5)
    assert total == 101 + 5 and 75 in seen


def test_the_graph_built_piece_by_piece_equals_the_whole_text_moved(tiny_llama):
    # the reference: the whole graph's JSON text with every moving integer moved (affine_text),
    # parsed back, in the capture's meta order; the builder moves each node's text on its own
    import json
    from dataclasses import replace

    from dfx.inference.kv_range import _Builder
    from dfx.ir import Graph

    def capture(k):
        return capture_step(tiny_llama, batch=2, tokens=1, kv_len=k, dtype="bfloat16").graph

    lo, hi = 8, 20
    at = affine_text(capture(lo).to_json(), capture(hi).to_json(), lo, hi)
    builder = _Builder(capture(lo), capture(hi), lo, hi)
    for k in range(lo, hi + 1):
        doc = json.loads(at(k))
        want = replace(Graph.from_dict(doc), meta=tuple(doc["meta"].items()))
        got = builder.graph(k)
        assert got == want and got.meta == want.meta, k
    assert builder.graph(lo) == capture(lo)  # no piece lost or reordered


def test_the_builder_refuses_what_affine_text_refuses():
    from dfx.inference.kv_range import _Builder
    from dfx.ir import Graph, Node, TensorSpec

    def graph(*widths):
        return Graph(
            tuple(
                Node(f"x{i}", "placeholder", f"x{i}", outputs=(TensorSpec((2, w), "float32"),))
                for i, w in enumerate(widths)
            )
        )

    with pytest.raises(NotAffine):  # a node more at one end
        _Builder(graph(4), graph(4, 4), 0, 4)
    builder = _Builder(graph(4, 8), graph(4, 11), 0, 2)  # 8 -> 11 over 2 steps: not whole at k = 1
    with pytest.raises(NotAffine):
        builder.graph(1)
    assert builder.graph(2) == graph(4, 11)
