"""Data lifetime: live ranges from last use, views alias their source, first-fit placement."""

from __future__ import annotations

import math

from dfx.arch.memory.lifetime import lifetime, live_ranges, peak_live_bytes
from dfx.ir import Edge, Graph, Node, ParameterInfo, TensorSpec

from tests.arch.memory.conftest import chain


def _diamond() -> Graph:
    # x (400 B) -> a (400 B) -> v = view(a) ; b = f(x) (800 B) ; c = g(v, b) (400 B) -> output
    s, big = TensorSpec((100,), "float32"), TensorSpec((200,), "float32")
    return Graph(
        (
            Node("w", "placeholder", "w", outputs=(s,), input_kind="parameter"),
            Node("x", "placeholder", "x", outputs=(s,), input_kind="input"),
            Node("a", "call_function", "aten.mul.Tensor", inputs=(Edge("x"), Edge("w")), outputs=(s,)),
            Node("v", "call_function", "aten.view.default", inputs=(Edge("a"),), outputs=(s,)),
            Node("b", "call_function", "aten.cat.default", inputs=(Edge("x"), Edge("x")), outputs=(big,)),
            Node("c", "call_function", "aten.add.Tensor", inputs=(Edge("v"), Edge("b")), outputs=(s,)),
            Node("output", "output", "output", inputs=(Edge("c"),)),
        ),
        (ParameterInfo("w", s),),
    )


_CATS = {"v": "view"}


def test_ranges_from_last_use_with_views_aliasing():
    ranges = {r.tensor: (r.nbytes, r.start, r.end) for r in live_ranges(_diamond(), _CATS)}
    # the weight and the view own no activation bytes; a lives until c (step 5) reads its view
    assert ranges == {"x": (400, 1, 4), "a": (400, 2, 5), "b": (800, 4, 5), "c": (400, 5, 6)}


def test_peak_and_placement_by_hand():
    # step 4: x, a, b alive = 400 + 400 + 800 = 1,600 B; step 5: a, b, c = 1,600 B (first reached at 4)
    lt = lifetime(_diamond(), math.inf, _CATS)
    assert (lt.peak_bytes, lt.peak_step, lt.spilled_bytes) == (1600, 4, 0)
    # 1,000 B scratchpad: x, a fit (800 B); b (800 B) does not and spills; c fits beside a
    lt = lifetime(_diamond(), 1000, _CATS)
    assert lt.spilled() == {"b"} and lt.spilled_bytes == 800
    assert lt.peak_onchip_bytes == 800 and lt.peak_bytes == 1600


def test_chain_holds_two_tensors_at_a_time():
    # each step holds its input and its output: 2 * 2048 B at fp16 for 1,024 elements
    lt = lifetime(chain([1024, 1024, 1024, 1024]).graph, math.inf)
    assert lt.peak_bytes == 4096
    assert [r.graph_output for r in lt.ranges] == [False, False, False, True]


def test_model_peak_is_no_more_than_all_activations(gpt2_small):
    cats = {cn.name: cn.category.value for cn in gpt2_small.nodes}
    lt = lifetime(gpt2_small.graph, 2e6, cats)  # one Spyre core's LX
    total = sum(r.nbytes for r in lt.ranges)
    assert 0 < lt.peak_onchip_bytes <= 2e6
    assert lt.peak_bytes <= total
    assert lt.spilled_bytes == sum(r.nbytes for r in lt.ranges if not r.on_chip)


def test_peak_live_bytes_by_hand_and_as_the_placement_counts_it(gpt2_small):
    # the diamond's peak by hand (test_peak_and_placement_by_hand): 1,600 B at step 4; a chain of four
    # 2,048 B tensors holds two at a time
    assert peak_live_bytes(_diamond(), _CATS) == 1600
    assert peak_live_bytes(chain([1024, 1024, 1024, 1024]).graph) == 4096
    cats = {cn.name: cn.category.value for cn in gpt2_small.nodes}
    assert peak_live_bytes(gpt2_small.graph, cats) == lifetime(gpt2_small.graph, math.inf, cats).peak_bytes
