"""Facts made once per graph and shared by its profiles: the same numbers as made afresh per node."""

from dfx.costs.record import Cost
from dfx.hardware import load_profile
from dfx.ir import ParameterInfo, TensorSpec
from dfx.roofline import Bound, ExecutionModel, node_timing
from dfx.roofline.latency import node_timings
from dfx.roofline.per_graph import clear_per_graph, per_graph


def _linear(build):
    # x -> view -> linear(w) -> relu: two nodes with no work (x, view), two with work; the fp16
    # linear's weight (8192 x 8192 x 2 = 134,217,728 B) overflows Spyre's 64 MB LX, so it spills
    weight = ParameterInfo("w", TensorSpec((8192, 8192), "float16"))
    act = TensorSpec((16, 8192), "float16")
    return build(
        [
            ("x", (), (act,), Cost(), ()),
            ("view", ("x",), (act,), Cost(), ()),
            ("linear", ("view",), (act,), Cost(2 * 16 * 8192 * 8192, 262_144 + 134_217_728, 262_144), ("w",)),
            ("relu", ("linear",), (act,), Cost(131_072, 262_144, 262_144), ()),
        ],
        parameters=[weight],
    )


def test_node_timings_equal_node_timing_of_each_node(build):
    costed = _linear(build)
    for ref in ("h100", "spyre", "groq-lpu", "tpu-v4", "cerebras-wse-3"):
        profile = load_profile(ref)
        for model in ExecutionModel:
            for dtype in (None, "float32"):
                want = tuple(node_timing(n, costed.graph, profile, model, dtype) for n in costed.nodes)
                assert node_timings(costed, profile, model, dtype) == want, (ref, model, dtype)
    h100 = load_profile("h100")
    runtime = h100.runtime(next(iter(h100.runtimes)))
    want = tuple(node_timing(n, costed.graph, h100, ExecutionModel.EAGER, efficiency=runtime) for n in costed.nodes)
    assert node_timings(costed, h100, ExecutionModel.EAGER, efficiency=runtime) == want


def test_a_node_with_no_work_has_one_timing_on_every_profile(build):
    costed = _linear(build)
    on_h100 = node_timings(costed, load_profile("h100"), ExecutionModel.COMPILED)
    on_spyre = node_timings(costed, load_profile("spyre"), ExecutionModel.COMPILED)
    assert on_h100[1] is on_spyre[1]  # the view: 0 s, bound none, wherever it runs
    assert (on_h100[1].bound, on_h100[1].time_s, on_h100[1].overhead_s) == (Bound.NONE, 0.0, 0.0)
    assert on_h100[2] is not on_spyre[2]  # the linear's time is each profile's own
    # Spyre spills 134,217,728 + 2 x 262,144 - 64,000,000 = 70,742,016 B of the linear's working set
    assert dict(on_spyre[2].bytes_by_level) == {"LX": 64_000_000, "LPDDR5": 70_742_016}


def test_per_graph_computes_a_fact_once_per_graph(build):
    calls = []

    def fact(costed):
        calls.append(costed)
        return len(costed.nodes)

    clear_per_graph()
    a, b = _linear(build), _linear(build)  # equal graphs, two objects: two facts
    assert [per_graph(a, fact), per_graph(a, fact), per_graph(b, fact)] == [4, 4, 4]
    assert len(calls) == 2 and calls[0] is a and calls[1] is b
    clear_per_graph()
    per_graph(a, fact)
    assert len(calls) == 3
