"""dfx.parallel.shard: Megatron-LM's split of each matmul, timed by the machine's own model of the share."""

from __future__ import annotations

import pytest

from dfx.analysis import evaluate_one_chip
from dfx.arch.gpu.plan import gemm_plan
from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.ir import AtenCall, Edge, Graph, Node, ParameterInfo, TensorSpec
from dfx.parallel import ParallelPlan, place
from dfx.parallel.shard import Role, shard_roles, shard_timer
from dfx.roofline import evaluate

DT = "bfloat16"


def spec(*shape: int) -> TensorSpec:
    return TensorSpec(tuple(shape), DT)


def _linear(name: str, module: str, src: str, rows: int, k: int, n: int) -> Node:
    """``[rows, k] @ weight[n, k]^T`` as torch.export records an ``nn.Linear`` without bias."""
    w, x, out = spec(n, k), spec(rows, k), spec(rows, n)
    calls = (
        AtenCall("aten.t.default", (w,), (), (spec(k, n),)),
        AtenCall("aten.mm.default", (x, spec(k, n)), (), (out,)),
    )
    return Node(
        name, "call_function", "aten.linear.default", module, (Edge(src),), (out,), (f"{module}.weight",), calls
    )


def _mlp(rows: int, d: int, hidden: int) -> Graph:
    """x[rows, d] -> layers.0.fc1 (d -> hidden) -> layers.0.fc2 (hidden -> d): Megatron's MLP, no activation."""
    params = (
        ParameterInfo("layers.0.fc1.weight", spec(hidden, d)),
        ParameterInfo("layers.0.fc2.weight", spec(d, hidden)),
    )
    nodes = (
        Node("x", "placeholder", "x", outputs=(spec(rows, d),), input_kind="input"),
        _linear("fc1", "layers.0.fc1", "x", rows, d, hidden),
        _linear("fc2", "layers.0.fc2", "fc1", rows, hidden, d),
        Node("output", "output", "output", inputs=(Edge("fc2"),)),
    )
    return Graph(nodes, params, name="mlp")


def _one_linear(rows: int, k: int, n: int) -> Graph:
    params = (ParameterInfo("fc.weight", spec(n, k)),)
    nodes = (
        Node("x", "placeholder", "x", outputs=(spec(rows, k),), input_kind="input"),
        _linear("fc", "fc", "x", rows, k, n),
        Node("output", "output", "output", inputs=(Edge("fc"),)),
    )
    return Graph(nodes, params, name="linear")


def _call(name: str, target: str, srcs: tuple[str, ...], ins: tuple[TensorSpec, ...], out: TensorSpec, params=()):
    return Node(
        name,
        "call_function",
        target,
        "",
        tuple(Edge(s) for s in srcs),
        (out,),
        params,
        (AtenCall(target, ins, (), (out,)),),
    )


def test_roles_follow_the_data_flow_as_megatron_splits_a_layer():
    # Shoeybi et al. 2019, section 3: a linear on the whole activation is split by its columns (N),
    # one on a split activation by its rows (K); a contraction with no weight (attention's two
    # products) splits its batch of heads; a weight reaching a bmm through expand is still a weight.
    x, h = spec(4, 8), spec(4, 16)
    nodes = (
        Node("x", "placeholder", "x", outputs=(x,), input_kind="input"),
        Node("w", "placeholder", "w", outputs=(spec(8, 8),), input_kind="parameter"),
        _linear("up", "up", "x", 4, 8, 16),  # reads x whole: column-parallel, output split
        _call("act", "aten.gelu.default", ("up",), (h,), h),  # stays split
        _call("scores", "aten.mm.default", ("act", "act"), (h, spec(16, 4)), spec(4, 4)),  # no weight: heads
        _call("mix", "aten.mm.default", ("scores", "act"), (spec(4, 4), h), h),  # no weight: heads
        _linear("down", "down", "mix", 4, 16, 8),  # reads a split activation: row-parallel, output whole
        _call("res", "aten.add.Tensor", ("x", "down"), (x, x), x),  # whole
        _call("wx", "aten.expand.default", ("w",), (spec(8, 8),), spec(1, 8, 8)),  # a weight still
        _call("proj", "aten.bmm.default", ("res", "wx"), (spec(1, 4, 8), spec(1, 8, 8)), spec(1, 4, 8)),
        Node("output", "output", "output", inputs=(Edge("proj"),)),
    )
    params = (ParameterInfo("up.weight", spec(16, 8)), ParameterInfo("down.weight", spec(8, 16)))
    roles = shard_roles(annotate(Graph(nodes, params, name="layer")))
    assert dict(roles) == {
        "up": Role.COLUMN,
        "scores": Role.HEADS,
        "mix": Role.HEADS,
        "down": Role.ROW,
        "proj": Role.COLUMN,  # its input `res` is whole again after the row-parallel `down`
    }


def test_a_gpu_split_takes_the_tile_models_waves_at_n_over_tp():
    # [4096 x 4096] @ [4096 x 8448] on an H100 (989.4 TFLOP/s bf16 over 132 SMs, 1.5 us per kernel).
    # One chip: 128 x 256 tiles, 32 x 33 = 1,056 = 8 x 132: 8 full waves, each SM one tile of
    # 2 * 128 * 256 * 4096 FLOPs at 989.4e12 / 132 FLOP/s = 35.81 us: 286.50 + 1.5 = 288.00 us.
    h100 = load_profile("h100")
    per_sm = 989.4e12 / 132
    cg = annotate(_one_linear(4096, 4096, 8448))
    # the ideal roofline (--runtime ideal): the tile model's waves are the point here; under the H100's default
    # runtime (back-to-back, matmuls at 83% of peak) the roofline's 283.5 GFLOP / 821 TFLOP/s = 345 us binds
    one = evaluate_one_chip(cg, h100, execution_model="eager", runtime="ideal")  # the unfused program on the tile model
    assert one.node("fc").time_s == pytest.approx(8 * 2 * 128 * 256 * 4096 / per_sm + 1.5e-6, rel=1e-6)
    # tp=8, column-parallel: N / 8 = 1,056. The model's best tiles there are 64 x 64, 4 per SM
    # (checked below, as the hand arithmetic assumes): 64 row blocks x ceil(1056 / 64) = 17 column
    # blocks (the last half masked) = 1,088 tiles, 4 x 132 = 528 per wave: 3 waves, the busiest SM
    # running 4 + 4 + 1 = 9 tiles of 2 * 64 * 64 * 4096 FLOPs = 9 x 4.4766 us = 40.29 + 1.5 = 41.79 us.
    # The roofline's 1/8 would be 286.50 / 8 + 1.5 = 37.31 us: more than 8 times faster than one chip.
    plan = gemm_plan(4096, 4096, 1056, DT, h100)
    assert (plan.tile_shape[:2], plan.blocks_per_sm, plan.tiles, plan.waves) == ((64, 64), 4, 1088, 3)
    split = shard_timer(one, cg, 8, 1)(cg["fc"], one.node("fc"), False)
    assert split == pytest.approx(9 * 2 * 64 * 64 * 4096 / per_sm + 1.5e-6, rel=1e-6)
    assert split > 286.50e-6 / 8 + 1.5e-6
    # and it is what one chip charges the graph built at the sharded shape (the compile stage's own path)
    small = annotate(_one_linear(4096, 4096, 1056))
    sharded = evaluate_one_chip(small, h100, execution_model="eager", runtime="ideal")
    assert split == pytest.approx(sharded.node("fc").time_s, rel=1e-9)


def test_megatrons_mlp_splits_n_then_k_on_the_gpu():
    # fc1 (column-parallel) runs [4096 x 4096] @ [4096 x 8448 / 8]; fc2 (row-parallel) runs
    # [4096 x 8448 / 8] @ [1056 x 4096]: each is what one chip charges a linear of that shape, compiled.
    # The ideal roofline (runtime "ideal"), where the tile model binds (see the test above)
    h100 = load_profile("h100")
    cg = annotate(_mlp(4096, 4096, 8448))
    one = evaluate_one_chip(cg, h100, runtime="ideal")
    timer = shard_timer(one, cg, 8, 1)
    fc1, fc2 = (timer(cg[n], one.node(n), False) for n in ("fc1", "fc2"))

    def linear_s(m: int, k: int, n: int) -> float:
        return evaluate_one_chip(annotate(_one_linear(m, k, n)), h100, runtime="ideal").node("fc").time_s

    col, row = linear_s(4096, 4096, 1056), linear_s(4096, 1056, 4096)
    wrong = linear_s(4096, 512, 8448)  # fc1 split by K
    assert (fc1, fc2) == (pytest.approx(col, rel=1e-9), pytest.approx(row, rel=1e-9))
    assert abs(wrong - col) > 0.05 * col  # the split dimension matters to the tile model (37.3 against 41.8 us)
    # the placed latency: both shares, and Megatron's two all-reduces of the [4096 x 4096] bf16 output
    # (33,554,432 B) over 8 NVLink chips: 6.6 + 2 * 7 * 0.6 us + 2 * 7 / 8 * 33,554,432 / 450e9 each
    ar = 2 * (6.6e-6 + 14 * 0.6e-6 + 2 * 7 / 8 * 33554432 / 450e9)
    placed = place(one, cg, ParallelPlan(tp=8))
    assert placed.latency_s == pytest.approx(fc1 + fc2 + ar, rel=1e-9)


def test_a_tpu_split_replans_the_sharded_gemm_on_the_mxus():
    # [8192 x 1024] @ [1024 x 384] on a TPU v4: 8 MXUs of 128 x 128 at 1.05 GHz, weight-stationary, M
    # streamed. One chip: 8 (K) x 3 (N) = 24 folds, 3 per MXU: 2*128 + 128 + 8192 - 2 = 8,574 cycles
    # for the first, 8,192 more for each next (pipelined): 24,958 cycles = 23.770 us, over the
    # 23,855,104 B / 1.2 TB/s = 19.88 us of memory. tp=2, N / 2 = 192: two 128-wide folds, one half
    # empty: 16 folds, 2 per MXU: 8,574 + 8,192 = 16,766 cycles = 15.968 us (memory 9.94 us). The
    # roofline's half would be 23.770 / 2 = 11.885 us.
    tpu = load_profile("google-tpu-v4")
    cg = annotate(_one_linear(8192, 1024, 384))
    one = evaluate_one_chip(cg, tpu)
    assert one.node("fc").time_s == pytest.approx(24958 / 1.05e9, rel=1e-9)
    split = shard_timer(one, cg, 2, 1)(cg["fc"], one.node("fc"), False)
    assert split == pytest.approx(16766 / 1.05e9, rel=1e-9)


def test_a_tpu_split_of_a_weight_bound_gemm_reads_its_kernels_hbm_traffic():
    # decode: [8 x 4096] @ [4096 x 11008] bf16 on a TPU v5e (4 MXUs of 128 x 128 at 1.5 GHz, 819 GB/s,
    # no fixed cost). One chip: (8 * 4096 + 4096 * 11008 + 8 * 11008) * 2 = 90,419,200 B from HBM =
    # 110.40 us, over the MXUs' 58.9 us. tp=4, N / 4 = 2752: 32 x 22 = 704 folds, 176 per MXU, each
    # streaming 8 rows: 2*128 + 128 + 8 - 2 = 390 cycles, then 175 x 128 more = 22,790 cycles = 15.19 us,
    # under the quarter of the bytes, 27.60 us. (The node's own memory time is the scratchpad model's,
    # on chip: 1/4 of max(58.9, that) would be 14.7 us, 7.5 times faster than one chip.)
    v5e = load_profile("google-tpu-v5e")
    cg = annotate(_one_linear(8, 4096, 11008))
    one = evaluate_one_chip(cg, v5e)
    assert one.node("fc").time_s == pytest.approx(90419200 / 819e9, rel=1e-9)
    split = shard_timer(one, cg, 4, 1)(cg["fc"], one.node("fc"), False)
    assert split == pytest.approx(90419200 / 4 / 819e9, rel=1e-9)


def test_without_a_per_shape_model_the_roofline_share_stands():
    # the node-level eager roofline (no program): the matmul's compute and memory over tp, its fixed cost whole
    h100 = load_profile("h100")
    cg = annotate(_one_linear(8, 1024, 1024))
    one = evaluate(cg, h100, execution_model="eager")
    fc = one.node("fc")
    split = shard_timer(one, cg, 2, 1)(cg["fc"], fc, False)
    assert split == max(fc.compute_time_s, fc.memory_time_s) / 2 + fc.overhead_s


def test_expert_parallelism_runs_each_expert_whole_on_its_chip():
    # two experts of [8 x 1024] @ [1024 x 1024] bf16 under layers.0.mlp.experts; ep=2: each chip runs
    # one of them whole (GShard), launch included: the layer's compute is one expert's time, plus two
    # all-to-alls of the last expert's [8 x 1024] output (16,384 B) over 2 chips: 6.6 + 0.6 us + 1/2 x
    # 16,384 B / 450 GB/s each
    h100 = load_profile("h100")
    params = tuple(ParameterInfo(f"layers.0.mlp.experts.{i}.weight", spec(1024, 1024)) for i in (0, 1))
    nodes = (
        Node("x", "placeholder", "x", outputs=(spec(8, 1024),), input_kind="input"),
        _linear("e0", "layers.0.mlp.experts.0", "x", 8, 1024, 1024),
        _linear("e1", "layers.0.mlp.experts.1", "x", 8, 1024, 1024),
        Node("output", "output", "output", inputs=(Edge("e0"), Edge("e1"))),
    )
    cg = annotate(Graph(nodes, params, name="experts"))
    one = evaluate(cg, h100, execution_model="eager")
    # each expert reads 2,097,152 B of weight + 16,384 in + 16,384 out at 3.35 TB/s, + 1.5 us
    expert = (2097152 + 2 * 16384) / 3.35e12 + 1.5e-6
    assert one.node("e0").time_s == pytest.approx(expert)
    a2a = 2 * (6.6e-6 + 0.6e-6 + 0.5 * 16384 / 450e9)
    placed = place(one, cg, ParallelPlan(ep=2))
    assert placed.latency_s == pytest.approx(2 * expert / 2 + a2a)


def test_one_chip_is_untouched_by_the_timer():
    h100 = load_profile("h100")
    cg = annotate(_one_linear(4096, 4096, 8448))
    one = evaluate_one_chip(cg, h100)
    timer = shard_timer(one, cg, 1, 1)
    assert all(timer(cn, t, False) == t.time_s for cn, t in zip(cg.nodes, one.nodes))


def test_a_gpu_attention_kernel_keeps_the_sms_its_output_gives_it():
    # sdpa on q = k = v = [1, 12, 64, 64] bf16 on an A100 (108 SMs, 1.5 us per kernel): no Triton plan,
    # so placement gives the kernel one SM per 128 x 128 block of its output, 12 * 64 * 64 = 49,152
    # elements: 3 SMs, and 3/108 of the bandwidth. tp=12 leaves one head per chip, 4,096 elements: 1 SM.
    #   one chip  = max(compute, memory) * 108 / 3 + 1.5 us
    #   one share = max(compute, memory) / 12 * 108 / 1 + 1.5 us        (3/12 of the one chip's waiting)
    a100 = load_profile("a100")
    out = spec(1, 12, 64, 64)
    sdpa = AtenCall("aten.scaled_dot_product_attention.default", (out, out, out), (), (out,))
    nodes = (
        Node("q", "placeholder", "q", outputs=(out,), input_kind="input"),
        Node("attn", "call_function", sdpa.op, "attn", (Edge("q"), Edge("q"), Edge("q")), (out,), (), (sdpa,)),
        Node("output", "output", "output", inputs=(Edge("attn"),)),
    )
    cg = annotate(Graph(nodes, (), name="heads"))
    one = evaluate_one_chip(cg, a100, execution_model="eager")
    kernel = next(k for k in one.program.kernels if k.nodes == ("attn",))
    assert kernel.cores == 3
    busy = max(kernel.compute_time_s, kernel.memory_time_s)
    assert one.node("attn").time_s == pytest.approx(busy * 108 / 3 + 1.5e-6, rel=1e-9)
    split = shard_timer(one, cg, 12, 1)(cg["attn"], one.node("attn"), False)
    assert split == pytest.approx(busy / 12 * 108 + 1.5e-6, rel=1e-9)
    assert split > busy / 12 + 1.5e-6  # the roofline's 1/12, which gave the one head 108 SMs' bandwidth
