"""dfx.parallel: collectives by hand, plans, and a two-layer model split over chips."""

from __future__ import annotations

import pytest

from dfx.costs import annotate
from dfx.errors import DfxError
from dfx.hardware import load_profile
from dfx.ir import AtenCall, Edge, Graph, Node, ParameterInfo, TensorSpec
from dfx.parallel import Collective, ParallelPlan, collective_s, fewest_chips, parse_parallel, place, plan_for_chips
from dfx.roofline import evaluate

DT = "bfloat16"


def spec(*shape: int) -> TensorSpec:
    return TensorSpec(tuple(shape), DT)


def _linear(name: str, module: str, src: str, rows: int, k: int, n: int) -> Node:
    w, x, out = spec(n, k), spec(rows, k), spec(rows, n)
    calls = (
        AtenCall("aten.t.default", (w,), (), (spec(k, n),)),
        AtenCall("aten.mm.default", (x, spec(k, n)), (), (out,)),
    )
    return Node(
        name, "call_function", "aten.linear.default", module, (Edge(src),), (out,), (f"{module}.weight",), calls
    )


def two_layers() -> Graph:
    """x[8, 1024] -> layers.0.fc (1024 -> 1024) -> layers.1.fc (1024 -> 1024), bf16."""
    params = (
        ParameterInfo("layers.0.fc.weight", spec(1024, 1024)),
        ParameterInfo("layers.1.fc.weight", spec(1024, 1024)),
    )
    nodes = (
        Node("x", "placeholder", "x", outputs=(spec(8, 1024),), input_kind="input"),
        _linear("fc0", "layers.0.fc", "x", 8, 1024, 1024),
        _linear("fc1", "layers.1.fc", "fc0", 8, 1024, 1024),
        Node("output", "output", "output", inputs=(Edge("fc1"),)),
    )
    return Graph(nodes, params, name="two-layers")


def test_ring_all_reduce_follows_nccl():
    link = load_profile("a100").interconnect  # 300 GB/s each way, 0.6 us per step, 6.6 us per collective
    # 4 chips, 1 MB: 6.6 + 2 * 3 * 0.6 = 10.2 us; 2 * 3 / 4 * 1e6 / 300e9 = 5.0 us -> 15.2 us
    assert collective_s(link, Collective.ALL_REDUCE, 1e6, 4) == pytest.approx(15.2e-6)
    # all-gather: 6.6 + 3 * 0.6 = 8.4 us; 3 / 4 * 1e6 / 300e9 = 2.5 us -> 10.9 us
    assert collective_s(link, Collective.ALL_GATHER, 1e6, 4) == pytest.approx(10.9e-6)
    assert collective_s(link, Collective.ALL_REDUCE, 1e6, 1) == 0.0


def test_groq_collectives_cross_the_links_directly():
    link = load_profile("groq").interconnect  # 240 GB/s each way, 3 us per crossing, Dragonfly
    # 8 chips: 2 crossings (reduce-scatter, all-gather) = 6 us, not 2 * 7 = 14; 2 * 7 / 8 * 8 kB / 240e9
    assert collective_s(link, Collective.ALL_REDUCE, 8192, 8) == pytest.approx(6e-6 + 1.75 * 8192 / 240e9)
    assert collective_s(link, Collective.SEND_RECV, 16384, 2) == pytest.approx(3e-6 + 16384 / 240e9)


def test_parse_parallel():
    plan = parse_parallel("tp=8, pp=2")
    assert (plan.tp, plan.pp, plan.ep, plan.chips) == (8, 2, 1, 16)
    for bad in ("tp=8,tp=2", "zp=2", "dp=2,fsdp=2", "tp=x", "tp=0", ""):  # dp is a key since data parallelism
        with pytest.raises(DfxError):
            parse_parallel(bad)


def test_plan_for_chips_keeps_tensor_parallelism_in_the_domain():
    h100 = load_profile("h100")  # 8 GPUs per NVSwitch domain
    assert (plan_for_chips(h100, 16).tp, plan_for_chips(h100, 16).pp) == (8, 2)
    assert (plan_for_chips(h100, 4).tp, plan_for_chips(h100, 4).pp) == (4, 1)
    groq = load_profile("groq")  # weights on chip: a pipeline
    assert (plan_for_chips(groq, 600).tp, plan_for_chips(groq, 600).pp) == (1, 600)


def test_fewest_chips_reuses_capacity():
    cg = annotate(two_layers())
    # 2 x 1024 x 1024 x 2 B = 4,194,304 B of weights: one chip anywhere that has 4 MB
    assert fewest_chips(cg, load_profile("h100")) == 1
    assert fewest_chips(cg, load_profile("groq")) == 1


def test_tensor_and_pipeline_split_by_hand():
    h100 = load_profile("h100")
    cg = annotate(two_layers())
    one = evaluate(cg, h100, execution_model="eager")
    fc0 = one.node("fc0")
    # each layer: [8 x 1024] x [1024 x 1024] reads 2,097,152 B of weight, memory-bound on one chip.
    # tp=2: half of it per chip, + the 1.5 us fixed cost; Megatron's 2 all-reduces of the layer's
    # 8 x 1024 x 2 = 16,384 B output over 2 chips: 6.6 + 2 * 0.6 = 7.8 us + 2 * 1 / 2 * 16,384 / 450e9
    layer = max(fc0.compute_time_s, fc0.memory_time_s) / 2 + fc0.overhead_s
    ar = 2 * (7.8e-6 + 16384 / 450e9)
    placed = place(one, cg, ParallelPlan(tp=2, pp=1))
    assert placed.latency_s == pytest.approx(2 * (layer + ar))
    assert placed.extras["chips"] == 2
    # pp=2: layer 0 on chips 0-1, layer 1 on chips 2-3, one send of 16,384 B between them (1 step)
    send = 6.6e-6 + 0.6e-6 + 16384 / 450e9
    both = place(one, cg, ParallelPlan(tp=2, pp=2))
    assert both.latency_s == pytest.approx(2 * (layer + ar) + send)
    spans = both.extras["parallel"]["timeline"]
    assert [(s["chips"], s["kind"]) for s in spans] == [
        ([0, 1], "compute"),
        ([0, 1], "communication"),
        ([0, 1], "communication"),
        ([2, 3], "compute"),
        ([2, 3], "communication"),
    ]
    with pytest.raises(DfxError, match="pp=5 stages"):  # 4 groups: before, 2 layers, after
        place(one, cg, ParallelPlan(pp=5))
    # Megatron splits each matmul's output features: both layers have 1,024, so tp=1024 is the most
    with pytest.raises(DfxError, match=r"tp=2048: the model has 1024 output features .* use tp <= 1024"):
        place(one, cg, ParallelPlan(tp=2048))


def test_tensor_parallelism_cannot_split_heads_that_are_not_there():
    # An attention node's output is [B, H, S, D]: 12 heads bound tp at 12 (Megatron splits heads).
    a = load_profile("a100")
    out = spec(1, 12, 64, 64)
    sdpa = AtenCall("aten.scaled_dot_product_attention.default", (out, out, out), (), (out,))
    nodes = (
        Node("q", "placeholder", "q", outputs=(out,), input_kind="input"),
        Node(
            "attn",
            "call_function",
            "aten.scaled_dot_product_attention.default",
            "attn",
            (Edge("q"), Edge("q"), Edge("q")),
            (out,),
            (),
            (sdpa,),
        ),
        Node("output", "output", "output", inputs=(Edge("attn"),)),
    )
    cg = annotate(Graph(nodes, (), name="heads"))
    one = evaluate(cg, a)
    assert place(one, cg, ParallelPlan(tp=12)).extras["chips"] == 12
    with pytest.raises(DfxError, match=r"tp=16: the model has 12 attention heads.*use tp <= 12"):
        place(one, cg, ParallelPlan(tp=16))


def test_a_model_without_layers_is_one_layer_and_pays_the_all_reduces():
    # One block with no layers.N (as gpt2-block or mlp): tensor parallelism still all-reduces its
    # output twice (Megatron), or 4 GPUs would run it faster than one GPU's critical path for free.
    h100 = load_profile("h100")
    params = (ParameterInfo("fc.weight", spec(1024, 1024)),)
    nodes = (
        Node("x", "placeholder", "x", outputs=(spec(8, 1024),), input_kind="input"),
        _linear("fc", "fc", "x", 8, 1024, 1024),
        Node("output", "output", "output", inputs=(Edge("fc"),)),
    )
    cg = annotate(Graph(nodes, params, name="one-block"))
    one = evaluate(cg, h100, execution_model="eager")
    fc = one.node("fc")
    layer = max(fc.compute_time_s, fc.memory_time_s) / 2 + fc.overhead_s
    ar = 2 * (7.8e-6 + 16384 / 450e9)  # as in the two-layer case above: 8 x 1024 x 2 B over 2 chips
    placed = place(one, cg, ParallelPlan(tp=2, pp=1))
    assert placed.latency_s == pytest.approx(layer + ar)
    assert placed.extras["parallel"]["communication_s"] == pytest.approx(ar)


def test_one_gpu_is_unchanged():
    h100 = load_profile("h100")
    cg = annotate(two_layers())
    one = evaluate(cg, h100, execution_model="eager")
    placed = place(one, cg, ParallelPlan())
    assert placed.latency_s == one.latency_s and placed.extras["chips"] == 1


def test_a_profile_without_links_cannot_spread():
    cg = annotate(two_layers())
    one = evaluate(cg, load_profile("host-cpu"), execution_model="eager")
    with pytest.raises(DfxError, match="no interconnect"):
        place(one, cg, ParallelPlan(tp=2))


def _groq_with_sram(capacity: str):
    import copy
    from importlib import resources

    import yaml

    from dfx.hardware.loader import parse_profile

    text = (resources.files("dfx.hardware") / "profiles" / "groq-lpu.yaml").read_text(encoding="utf-8")
    data = copy.deepcopy(yaml.safe_load(text))
    data["memory"][0]["capacity_bytes"] = capacity
    return parse_profile(data, "groq-small")


def test_evaluate_on_spreads_groq_over_the_chips_its_weights_need():
    from dfx.analysis import evaluate_on

    small = _groq_with_sram("3 MB")
    cg = annotate(two_layers())
    # 2 x 2,097,152 B of weights on chips of 3,000,000 B: ceil(1.398) = 2 chips (dfx capacity's rule)
    assert fewest_chips(cg, small) == 2
    result = evaluate_on(cg, small, execution_model="scratchpad")
    assert result.extras["chips"] == 2
    assert result.latency_s == pytest.approx(result.extras["schedule"]["makespan_s"])  # the TSP schedule
    kinds = [s["kind"] for s in result.extras["parallel"]["timeline"]]
    assert kinds == ["compute", "communication", "compute"]  # chip 0, the C2C crossing, chip 1


def test_chips_and_parallel_must_agree():
    from dfx.request import split_of

    with pytest.raises(DfxError, match="--chips 4 disagrees with --parallel tp=8"):
        split_of(4, "tp=8")
    assert split_of(8, "tp=8").chips == 8


def test_an_offchip_memory_of_unknown_size_holds_the_model_on_one_chip():
    import copy
    from importlib import resources

    import yaml

    from dfx.hardware.loader import parse_profile

    text = (resources.files("dfx.hardware") / "profiles" / "host-cpu.yaml").read_text(encoding="utf-8")
    data = copy.deepcopy(yaml.safe_load(text))
    for level in data["memory"]:
        if level["on_chip"]:
            level["capacity_bytes"] = "1 MB"  # caches far below the 4,194,304 B of weights
    assert data["memory"][-1]["capacity_bytes"] is None  # DDR5: size unknown, where the weights live
    cpu = parse_profile(data, "host-cpu-small-caches")
    # ceil(4,194,304 / on-chip bytes) > 1 would spread a CPU over chips it has no interconnect for
    assert fewest_chips(annotate(two_layers()), cpu) == 1


def test_too_many_stages_names_what_chose_them():
    # a tester's --chips 100000000 on a one-layer block was told "use pp <= 1", a flag never given
    from dfx.errors import DfxError
    from dfx.parallel.place import _split_layers
    from dfx.parallel.plan import ParallelPlan

    with pytest.raises(DfxError, match=r"--chips 96 splits as tp 8 x pp 12, .* 1 layer group\(s\) .* use --chips <= 8"):
        _split_layers([0], 12, ParallelPlan(tp=8, pp=12, source="--chips"))  # 8 chips per layer x 1 layer
    with pytest.raises(DfxError, match=r"^the model needs 26 chips to fit \(fewest chips that fit"):
        _split_layers([0], 13, ParallelPlan(tp=2, pp=13, source="fewest chips that fit (dfx capacity)"))
    with pytest.raises(DfxError, match=r"pp=3 stages but the model has 2 layer groups; use pp <= 2"):
        _split_layers([0, 1], 3, ParallelPlan(pp=3, source="--parallel"))
