"""The compiled execution model: kernels on their share of the cores, list-scheduled; hand-derived times."""

import pickle

import pytest

from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec
from dfx.roofline import Bound, ExecutionModel, evaluate
from dfx.targets import compile_for, target_for

H100_BF16 = 989.4e12  # FLOP/s, the profile's bf16 dense peak
H100_HBM = 3.35e12  # B/s
H100_LAUNCH = 1.5e-6  # s, op_overhead_s


def two_mms(n: int = 256) -> Graph:
    """x [n, n] @ w1 and x @ w2, both bf16 graph outputs: two independent GEMMs."""
    t = TensorSpec((n, n), "bfloat16")

    def mm(name: str, w: str) -> Node:
        return Node(
            name,
            "call_function",
            "aten.mm.default",
            inputs=(Edge("x"), Edge(w)),
            outputs=(t,),
            aten_calls=(AtenCall("aten.mm.default", (t, t), (), (t,)),),
        )

    return Graph(
        name="two_mms",
        nodes=(
            Node("x", "placeholder", "x", outputs=(t,), input_kind="input"),
            Node("w1", "placeholder", "w1", outputs=(t,), input_kind="input"),
            Node("w2", "placeholder", "w2", outputs=(t,), input_kind="input"),
            mm("mm1", "w1"),
            mm("mm2", "w2"),
            Node("output", "output", "output", inputs=(Edge("mm1"), Edge("mm2"))),
        ),
    )


def untiled(costed, hw: str = "h100"):
    """The compiled program without its tiling pass: placement estimates 128 x 128 output tiles per
    GEMM (compile/placement.py); the GPU tiling pass's Triton programs are tested in
    tests/compile/test_tiling_gpu.py."""
    from dfx.compile import compile_program

    profile = load_profile(hw)
    return compile_program(
        costed, profile, passes=tuple(p for p in target_for(profile).passes(profile) if p.name != "tiling")
    )


# One 256 x 256 x 256 bf16 GEMM on an H100:
#   FLOPs 2 * 256^3 = 33,554,432 -> 33,554,432 / 989.4e12 = 33.9 ns on the whole GPU
#   bytes 3 * 256 * 256 * 2 = 393,216 -> / 3.35e12 = 117.4 ns on the whole GPU: memory-bound
#   tiles (256 / 128)^2 = 4 -> 4 of 132 SMs, so 132 / 4 = 33 times longer, + 1.5 us launch
ONE_MM_S = 393_216 / H100_HBM * 132 / 4 + H100_LAUNCH


def test_kernel_time_on_its_share_of_the_gpu():
    costed = annotate(two_mms())
    r = evaluate(costed, "h100", execution_model="compiled", program=untiled(costed))
    (k1, k2) = r.program.kernels
    assert (k1.cores, k2.cores) == (4, 4)
    assert k1.bound is Bound.MEMORY
    assert k1.compute_time_s == pytest.approx(33_554_432 / H100_BF16)
    assert k1.time_s == pytest.approx(ONE_MM_S)


def test_independent_kernels_share_the_gpu_dynamically():
    # 4 + 4 SMs of 132: both run at once. Makespan one kernel, serial two, critical path one.
    costed = annotate(two_mms())
    r = evaluate(costed, "h100", execution_model=ExecutionModel.COMPILED, program=untiled(costed))
    assert r.execution_model is ExecutionModel.COMPILED
    assert r.program.policy.value == "dynamic"
    assert r.makespan_s == pytest.approx(ONE_MM_S)
    assert r.latency_s == r.makespan_s
    assert r.serial_time_s == pytest.approx(2 * ONE_MM_S)
    assert r.critical_path.time_s == pytest.approx(ONE_MM_S)
    # the node times are the kernels' (one node per kernel here) and sum to the serial time
    assert r.node("mm1").time_s == pytest.approx(ONE_MM_S)
    assert sum(t.time_s for t in r.nodes) == pytest.approx(r.serial_time_s)


def test_kernels_on_every_core_run_one_after_another():
    # Spyre: each kernel divided over all 32 cores, static order: makespan = serial.
    costed = annotate(two_mms())
    r = evaluate(costed, "spyre", execution_model="compiled", program=compile_for(costed, load_profile("spyre")))
    assert {k.cores for k in r.program.kernels} == {32}
    assert r.program.policy.value == "static"
    assert r.makespan_s == pytest.approx(r.serial_time_s)
    # both kernels are on the critical path's rival branches: one after another, the makespan is their sum
    # (they stream x from one on-chip copy, so mm2 reads less off chip than mm1: not 2x one kernel)
    (k1, k2) = r.program.kernels
    assert k1.offchip_bytes - k2.offchip_bytes == 256 * 256 * 2  # x (bf16 [256, 256]) loaded once
    assert r.makespan_s > r.critical_path.time_s


def test_node_level_models_quote_the_serial_time():
    # eager: one operator at a time on the whole machine, one stream: makespan = serial.
    # 117.4 ns of HBM + 1.5 us launch per GEMM
    r = evaluate(annotate(two_mms()), "h100", execution_model="eager")
    assert r.serial_time_s == pytest.approx(2 * (393_216 / H100_HBM + H100_LAUNCH))
    assert r.makespan_s == r.serial_time_s == r.latency_s
    assert r.to_dict()["makespan_s"] == r.serial_time_s
    assert r.to_dict()["program"] is None


def test_compiled_export_fields():
    costed = annotate(two_mms())
    d = evaluate(costed, "h100", execution_model="compiled", program=untiled(costed)).to_dict()
    assert d["execution_model"] == "compiled"
    assert d["makespan_s"] == pytest.approx(ONE_MM_S)
    prog = d["program"]
    assert prog["schedule_policy"] == "dynamic" and prog["cores"] == 132 and prog["kernel_count"] == 2
    # 2 kernels x 4 SMs busy for the whole makespan of 132 SMs
    assert prog["core_utilization"] == pytest.approx(8 / 132)
    assert [s["name"] for s in prog["stages"]] == ["lower", "fusion", "placement", "schedule"]
    assert {k["name"]: k["cores"] for k in prog["kernels"]} == {"k0_mm1": 4, "k1_mm2": 4}
    assert d["critical_path"]["nodes"][-1] == "output"


def test_unknown_execution_model_is_one_line():
    from dfx.hardware import HardwareProfileError

    with pytest.raises(HardwareProfileError, match="unknown execution model 'jit'; expected one of eager"):
        evaluate(annotate(two_mms()), load_profile("h100"), execution_model="jit")


def test_program_from_compute_times_equals_program_from_node_records():
    # a kernel that is neither collective nor operator-timed reads only its nodes' compute times
    # (its memory time and launch are its own), so both entries give the same result on a GPU and Spyre
    from dfx.targets import compile_for
    from dfx.roofline.latency import node_timings
    from dfx.roofline.program import evaluate_program, evaluate_program_from_figures

    costed = annotate(two_mms())
    for hw in ("h100", "spyre"):
        profile = load_profile(hw)
        program = compile_for(costed, profile)
        nodes = node_timings(costed, profile, ExecutionModel.COMPILED)
        compute = {t.name: t.compute_time_s for t in nodes}
        # mm1 alone: 2 * 256^3 FLOPs at the bf16 peak (33.9 ns on an H100)
        if hw == "h100":
            assert compute["mm1"] == pytest.approx(33_554_432 / H100_BF16)
        full = evaluate_program(program, nodes, profile)
        lazy = evaluate_program_from_figures(program, compute, profile)
        # its latency's figures at once, the kernels' records on first read (then the same records)
        assert "kernels" not in lazy.__dict__ and "schedule" in lazy.__dict__
        assert (lazy.makespan_s, lazy.serial_time_s, lazy.critical_path) == (
            full.makespan_s,
            full.serial_time_s,
            full.critical_path,
        )
        assert "kernels" not in lazy.__dict__
        assert lazy.kernels == full.kernels and lazy == full
        again = evaluate_program_from_figures(program, compute, profile)
        assert pickle.loads(pickle.dumps(again)) == full  # pickling works the records out first


def test_compiled_node_records_are_worked_out_on_first_read():
    # a compiled result's per-node records, bound shifts and dtype fallbacks (no latency reads them)
    # are made when first read: the same as where every node is timed first (an identity node timer)
    from dataclasses import replace

    costed = annotate(two_mms())
    deferred = evaluate(costed, "h100", execution_model="compiled", program=untiled(costed))
    assert "nodes" not in vars(deferred)
    at_once = evaluate(costed, "h100", execution_model="compiled", program=untiled(costed), node_timer=lambda n, t: t)
    assert deferred == at_once  # == reads every field, deferred ones included
    assert deferred.nodes == at_once.nodes and deferred.partition_shift == at_once.partition_shift
    assert deferred.node("mm1").time_s == pytest.approx(ONE_MM_S)  # one kernel's node: its kernel's time
    # a copy given a field keeps it; the others are still worked out
    copy = replace(evaluate(costed, "h100", execution_model="compiled", program=untiled(costed)), nodes=())
    assert copy.nodes == () and copy.dtype_fallbacks == at_once.dtype_fallbacks
    with pytest.raises(AttributeError, match="no attribute 'colour'"):
        deferred.colour  # noqa: B018


@pytest.mark.parametrize("hw", ["groq-lpu", "cerebras-wse-3", "google-tpu-v4"])
def test_architecture_timers_give_the_kernels_the_figures_their_records_carry(hw):
    # Groq's and the wafer's timers give each node's four seconds (figures), the TPU's its compute seconds
    # (compute_s), so a kernel is timed without the nodes' records: the same result as a timer that
    # offers neither (every node timed first, then the kernels from the records)

    costed = annotate(two_mms(640))
    profile = load_profile(hw)
    arch = target_for(profile).arch_model(profile)
    timer = arch.node_timer(costed, profile)
    assert hasattr(timer, "figures") or hasattr(timer, "compute_s")
    kw = {"execution_model": "compiled", "operator_times": getattr(arch, "times_operators", False)}
    fused = target_for(profile).fused(costed, profile)  # what Target.evaluate hands an operator-timed family
    kw |= (
        {"program": fused[0], "finish": fused[1]} if kw["operator_times"] else {"program": compile_for(costed, profile)}
    )
    fast = evaluate(costed, profile, node_timer=timer, **kw)
    full = evaluate(costed, profile, node_timer=lambda n, t: timer(n, t), **kw)
    if kw["operator_times"]:
        # a kernel's time is its nodes' sum: the critical path is the fused program's, made at once; the
        # passes after fusion (tiling, placement...) and the schedule's makespan wait for a reader
        assert "schedule" not in vars(fast.program) and "makespan_s" not in vars(fast)
        assert fast.critical_path == full.critical_path and fast.program.serial_time_s == full.program.serial_time_s
        assert "schedule" not in vars(fast.program)
    assert fast.program == full.program and fast.latency_s == full.latency_s
    assert fast == full


def test_a_runtime_times_the_compiled_kernels():
    # the H100's back-to-back runtime (its profile's runtimes entry): matmuls at 83.0% of peak, 84% of
    # HBM's bandwidth, 1.5 us a kernel. One 256^3 GEMM on 4 of 132 SMs:
    #   compute 33,554,432 / (989.4e12 x 0.83) = 40.9 ns, memory 393,216 / (3.35e12 x 0.84) = 139.7 ns,
    #   on 4 of 132 SMs: 139.7 ns x 33 = 4.61 us, + 1.5 us
    costed = annotate(two_mms())
    queued = evaluate(costed, "h100", execution_model="compiled", program=untiled(costed), runtime="back-to-back")
    k = queued.program.kernels[0]
    assert k.compute_time_s == pytest.approx(33_554_432 / (H100_BF16 * 0.83))
    assert k.memory_time_s == pytest.approx(393_216 / (H100_HBM * 0.84))
    assert k.overhead_s == 1.5e-6
    assert k.time_s == pytest.approx(393_216 / (H100_HBM * 0.84) * 132 / 4 + 1.5e-6)
    assert queued.extras["runtime"] == "back-to-back"
    # pytorch-eager-timed: the same fractions, 20 us a kernel
    timed = evaluate(costed, "h100", execution_model="compiled", program=untiled(costed), runtime="pytorch-eager-timed")
    assert timed.program.kernels[0].time_s == pytest.approx(k.time_s - 1.5e-6 + 20e-6)


def test_a_runtime_moves_the_tile_model_by_its_fixed_cost():
    # with the GPU tiling pass each GEMM's time is at least its Triton waves plus one launch; a runtime's fixed
    # cost replaces the profile's 1.5 us there too, so two runtimes with the same fractions differ by exactly
    # 20 - 1.5 = 18.5 us a kernel, whichever bound holds
    costed = annotate(two_mms(1024))
    program = compile_for(costed, load_profile("h100"))
    queued = evaluate(costed, "h100", execution_model="compiled", runtime="back-to-back", program=program)
    timed = evaluate(costed, "h100", execution_model="compiled", runtime="pytorch-eager-timed", program=program)
    for q, t in zip(queued.program.kernels, timed.program.kernels):
        assert t.time_s - q.time_s == pytest.approx(18.5e-6)


def test_the_compiled_times_under_a_runtime_are_the_same_from_figures_or_records():
    # evaluate() times a compiled program from the nodes' compute times alone (the lazy entry); a kernel
    # timer (here the identity) makes it build every node's record first: both give the same kernels
    costed = annotate(two_mms(512))
    program = compile_for(costed, load_profile("a100"))
    lazy = evaluate(costed, "a100", execution_model="compiled", runtime="back-to-back", program=program)
    full = evaluate(
        costed, "a100", execution_model="compiled", runtime="back-to-back", kernel_timer=lambda k, t: t, program=program
    )
    assert lazy.latency_s == full.latency_s
    assert [k.time_s for k in lazy.program.kernels] == [k.time_s for k in full.program.kernels]
