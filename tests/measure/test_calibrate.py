"""Calibration on a tiny budget: positive, finite figures of the right order; a profile load_profile accepts."""

import math

import pytest
import torch
import yaml

from dfx.errors import DfxError
from dfx.hardware import load_profile
from dfx.measure.calibration import calibrate, host_caches


@pytest.fixture(scope="module")
def cal():
    # One thread: on a busy shared machine a second OpenMP worker waits a scheduler quantum (~8 ms)
    # for a core, which turns a 5 us add into 8 ms; the test checks the figures, not the threading.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return calibrate(budget_s=0.5)
    finally:
        torch.set_num_threads(threads)


def test_figures_are_positive_finite_and_plausible(cal):
    peak = cal.peak_flop_per_s["float32"].value
    assert math.isfinite(peak) and 1e8 < peak < 1e13  # a CPU core does ~1e9-1e11, a big socket ~1e12
    for level, sample in cal.bandwidth.items():
        assert math.isfinite(sample.value) and 1e8 < sample.value < 1e12, level
    assert 1e-7 < cal.overhead.value < 1e-2  # an eager op: microseconds
    assert set(cal.vector_rates) == {"gelu", "gelu_tanh", "softmax", "layer_norm", "batch_norm"}
    assert all(math.isfinite(s.value) and 1e6 < s.value < 1e13 for s in cal.vector_rates.values())
    assert list(cal.bandwidth)[-1] == "DRAM"
    assert cal.threads == 1


def test_written_profile_loads_and_every_number_has_a_source(cal, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(cal.to_profile(), sort_keys=False))
    profile = load_profile(str(path))
    assert profile.id == "host-cpu-calibrated" and profile.kind.value == "cpu"
    assert profile.peak("float32").flop_per_s == pytest.approx(cal.peak_flop_per_s["float32"].value)
    assert profile.off_chip_level().name == "DRAM"
    assert profile.op_overhead_s == pytest.approx(cal.overhead.value)
    source = profile.source_of("peak_flop_per_s.float32")
    assert "dfx calibrate" in source and torch.__version__ in source and "torch.mm" in source


def test_json_document(cal):
    import json

    from dfx.schema.calibration import read_calibration

    doc = cal.to_dict()
    assert doc["schema"] == "dfx.calibration/1"
    assert doc == cal.to_record().to_dict()  # the writer goes through dfx.schema's record ...
    assert read_calibration(json.loads(json.dumps(doc))).to_dict() == doc  # ... and the reader gives it back
    assert list(doc)[:6] == ["schema", "device", "threads", "torch_version", "date", "profile"]
    assert set(doc["measurements"]) >= {"peak_flop_per_s.float32", "memory.DRAM.bandwidth_bytes_per_s", "op_overhead_s"}


def test_host_caches_read_from_a_sysfs_tree(tmp_path):
    # two cores with a private 512K L2 each and one shared 32M L3 -> L2 1 MiB in 2 instances, L3 32 MiB in 1
    for cpu in (0, 1):
        for idx, (level, kind, size, shared) in enumerate(
            [("1", "Data", "32K", str(cpu)), ("2", "Unified", "512K", str(cpu)), ("3", "Unified", "32768K", "0-1")]
        ):
            d = tmp_path / f"cpu{cpu}" / "cache" / f"index{idx}"
            d.mkdir(parents=True)
            for name, text in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                (d / name).write_text(text + "\n")
    caches = host_caches(tmp_path)
    assert caches["L2"].capacity_bytes == 2 * 512 * 1024 and caches["L2"].instances == 2
    assert caches["L3"].capacity_bytes == 32 * 2**20 and caches["L3"].instances == 1
    assert host_caches(tmp_path / "absent") == {}


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(DfxError, match="expected cpu or cuda"):
        calibrate(device="tpu")
    for budget in (0, -1, float("nan"), float("inf"), 3601):  # (0, 3600] seconds only
        with pytest.raises(DfxError, match="above 0 and at most 3600"):
            calibrate(budget_s=budget)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU; the refusal is for machines without one")
def test_cuda_without_a_gpu_is_refused():
    with pytest.raises(DfxError, match="no CUDA GPU"):
        calibrate(device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: the GPU calibration path needs one")
def test_cuda_calibration():
    cal = calibrate(device="cuda", budget_s=2.0)
    assert cal.to_profile()["kind"] == "gpu" and "HBM" in cal.bandwidth


def test_gemm_table_is_a_full_grid_of_plausible_rates(cal):
    sizes = (64, 512, 2048, 8192)  # 8192: past a 7B model's 4096 x 11008 projections
    assert {(p.rows, p.k, p.n) for p in cal.gemm_table} == {
        (r, k, n) for r in (1, 16, 64, 256, 1024) for k in sizes for n in sizes
    }
    assert all(1e6 < p.flop_per_s < 1e13 for p in cal.gemm_table)  # a GEMV on a slow core to a big socket


def test_attention_and_convolution_rates_are_plausible(cal):
    assert {(c, s) for c, s, _ in cal.attention} == {(c, s) for c in (False, True) for s in (64, 256, 1024)}
    assert all(1e6 < r < 1e13 for _, _, r in cal.attention)
    assert len(cal.convs) == 7 and all(1e6 < p.flop_per_s < 1e13 for p in cal.convs)
    # the first conv is 1x1, 256 -> 64 on 28 x 28: its implicit GEMM is [784, 256] x [256, 64]
    assert (cal.convs[0].rows, cal.convs[0].k, cal.convs[0].n) == (784, 256, 64)
    # the same seven in channels-last (Inductor's layout on a CPU), the same implicit GEMMs
    assert [(p.rows, p.k, p.n) for p in cal.convs_cl] == [(p.rows, p.k, p.n) for p in cal.convs]
    assert all(1e6 < p.flop_per_s < 1e13 for p in cal.convs_cl)
    # Inductor's compile does not fit a 0.5 s budget: the layout copy is not measured, and the document says so
    assert cal.layout_copy == () and "layout_copy" in _missing_tables(cal)


def _missing_tables(cal):
    from dfx.schema.calibration import read_calibration

    return read_calibration(cal.to_dict()).missing()


def test_layout_copy_points_time_the_compiled_copy_with_what_the_compile_left_of_the_budget():
    from dfx.measure.microbench import layout_copy_points

    seen = {}
    ticks = iter([0.0, 0.25])  # the compile takes 0.25 s of the 0.3 s budget

    def fake_compile(fn, example):
        seen["shape"] = tuple(example.shape)
        seen["channels_last"] = fn(example).is_contiguous(memory_format=torch.channels_last)
        return fn

    ((nbytes, seconds),) = layout_copy_points("cpu", 0.3, compile_fn=fake_compile, clock=lambda: next(ticks))
    # [1, 128, 56, 56] fp32 = 401,408 elements, 1,605,632 B, read once and written once: 3,211,264 B
    assert seen == {"shape": (1, 128, 56, 56), "channels_last": True} and nbytes == 3_211_264
    assert 0 < seconds < 1
    assert layout_copy_points("cuda", 0.3, compile_fn=fake_compile) == ()  # a GPU runs no C++ kernel


def test_the_compiled_families_compile_first_and_then_only_time(monkeypatch):
    import dfx.measure.calibration as calibration

    compiled = []

    def fake_compile():
        compiled.append("copy")
        return lambda x: x.contiguous(memory_format=torch.channels_last)

    def fake_tiny():
        compiled.append("tiny")
        return "run", ["inputs"]

    timed = []
    monkeypatch.setattr(calibration, "compile_layout_copy", fake_compile)
    monkeypatch.setattr(calibration, "compile_tiny_linears", fake_tiny)
    monkeypatch.setattr(calibration, "compiled_overheads", lambda budget_s, tiny: timed.append(tiny) or {"mm": 1e-6})
    steps = []
    (copy_label, copy_key, copy), (_, calls_key, calls) = calibration._compiled_families(0.3, None, steps.append)
    # both compiled when the families are made, before calibrate runs (and watches) any family
    assert compiled == ["copy", "tiny"] and steps == [
        "compiling Inductor's channels-last copy",
        "compiling a tiny graph of linears",
    ]
    assert (copy_key, calls_key) == ("layout_copy", "compiled_overhead")
    ((nbytes, seconds),) = copy()
    assert nbytes == 2 * 4 * 128 * 56 * 56 and compiled == ["copy", "tiny"]  # timing it compiles nothing more
    assert calls() == {"mm": 1e-6} and timed == [("run", ["inputs"])]  # the tiny graph compiled above


def test_compiled_overheads_read_each_kind_of_call_off_the_stamped_tiny_graph():
    from dfx.measure.microbench import compiled_overheads

    class FakeRun:  # the tiny graph's five calls, as dfx.measure.compiled.CompiledRun stamps them
        calls = (
            ("extern_kernels.addmm:1", ("linear",)),
            ("cpp_fused_relu_view_0:2", ("relu",)),
            ("extern_kernels.addmm:3", ("linear_1",)),
            ("cpp_fused_relu_view_0:4", ("relu_1",)),
            ("extern_kernels.mm:5", ("linear_2",)),
        )
        readings = [0.0] * 6

        def stamped(self, inputs):
            # stamps at 0, 6, 7.8, 12.8, 14.4, 18.4 us: calls of 6, 1.8, 5, 1.6 and 4 us
            self.readings[:] = [0.0, 6e-6, 7.8e-6, 12.8e-6, 14.4e-6, 18.4e-6]

    got = compiled_overheads(0.0, (FakeRun(), []), clock=lambda: 1.0)  # no time left: the three rounds alone
    assert got == pytest.approx(
        # the first call, the later addmm, the median of the two ReLUs (1.8 and 1.6: 1.7), the mm
        {"first_addmm": 6e-6, "addmm": 5e-6, "generated": 1.7e-6, "mm": 4e-6}
    )


def test_overhead_curve_and_residency(cal):
    gaps = [g for g, _ in cal.overhead_curve]
    assert len(gaps) == 8 and gaps == sorted(gaps)  # the hot loop, then seven gaps (10 us to 30 ms)
    assert all(1e-7 < o < 1e-1 for _, o in cal.overhead_curve)
    caches = host_caches()
    if "L3" in caches:  # between 0 and twice the L3: the sweep's range
        assert 0 <= cal.resident.value <= 2 * caches["L3"].capacity_bytes


def test_json_tables_read_back_as_a_machine_model(cal):
    from dfx.measure.machine import MachineModel

    doc = cal.to_dict()
    m = MachineModel.from_calibration(doc)
    assert len(m.gemm_table) == 80 and set(m.vector_flop_per_s) == set(cal.vector_rates)  # 5 rows x 4 k x 4 n
    assert len(m.attention_rates) == 6 and len(m.conv_points) == 7 and m.overhead_by_kind == dict(cal.overhead_by_kind)
    assert m.overhead_curve == tuple(sorted(cal.overhead_curve))
    assert m.overhead_mixed == dict(cal.overhead_mixed)
    # the tiny (1, 8, 8) pair, then rows 1, 64, 256 x (k, n) in (512, 512), (512, 2048), (2048, 512), (2048, 2048)
    assert [p[:3] for p in m.gemm_bias] == [(1, 8, 8)] + [
        (r, k, n) for k, n in ((512, 512), (512, 2048), (2048, 512), (2048, 2048)) for r in (1, 64, 256)
    ]
    # mean and cat each keep their own curve, at the median curve's gaps
    assert set(m.overhead_curve_by_kind) == {"mean", "cat"}
    assert all([g for g, _ in c] == [g for g, _ in m.overhead_curve] for c in m.overhead_curve_by_kind.values())
    # each of the nine tiny kinds keeps its own curve at the same gaps; the median curve is, point by point,
    # the median of the nine (the hot loop first)
    import statistics

    assert set(m.overhead_curve_each) == {
        "add", "relu", "gelu", "softmax", "layer_norm", "linear", "conv2d", "batch_norm", "attention",
    }  # fmt: skip
    assert all([g for g, _ in c] == [g for g, _ in m.overhead_curve] for c in m.overhead_curve_each.values())
    for i, (_, median_s) in enumerate(m.overhead_curve):
        assert statistics.median(c[i][1] for c in m.overhead_curve_each.values()) == pytest.approx(median_s)


def test_per_kind_overheads_hot_and_in_turn(cal):
    kinds = {"add", "relu", "gelu", "softmax", "layer_norm", "linear", "conv2d", "batch_norm", "attention"}
    # the hot loop's kinds, and beside them a view, a linear on a 3-D input, a mean and a cat (kept out of the median)
    side = {"view", "linear_nd", "mean", "cat"}
    assert set(cal.overhead_by_kind) == kinds | side
    assert set(cal.overhead_mixed) == kinds | side
    assert all(1e-8 < v < 1e-2 for v in (*cal.overhead_by_kind.values(), *cal.overhead_mixed.values()))


def test_cold_gemm_and_after_gemm_tables(cal):
    from dfx.measure.machine import MachineModel

    # a [rows, 4096] x [4096, 4096] GEMM hot and with its weight from DRAM, for rows 1, 16, 64, 256
    assert [(p.rows, p.k, p.n) for p in cal.gemm_cold] == [(r, 4096, 4096) for r in (1, 16, 64, 256)]
    assert all(0 < p.hot_s < 10 and 0 < p.cold_s < 10 for p in cal.gemm_cold)
    # an add on 48 Ki and 256 Ki fp32 elements (3 tensors x 4 B: 589,824 and 3,145,728 B) after GEMMs whose
    # [64, k] x [k, k] moved 4 x (64k + k^2 + 64k) B: k = 512 -> 1,310,720 B ... k = 4096 -> 69,206,016 B
    assert {(p.bytes, p.streamed_bytes) for p in cal.after_gemm} == {
        (b, 4 * (128 * k + k * k)) for b in (589_824, 3_145_728) for k in (512, 1024, 2048, 4096)
    }
    m = MachineModel.from_calibration(cal.to_dict())
    assert len(m.gemm_cold) == 4 and len(m.after_gemm) == 8
    # six tiny element-wise calls after each [64, 4096] x [4096, 4096] GEMM, by position: it moved
    # 4 x (64 x 4096 + 4096 x 4096 + 64 x 4096) = 69,206,016 B
    assert [(p, b) for p, b, _ in cal.after_gemm_chain] == [(p, 69_206_016) for p in range(1, 7)]
    assert all(1e-8 < t < 1e-2 for _, _, t in cal.after_gemm_chain)  # a dispatch: microseconds
    assert m.after_gemm_chain == cal.after_gemm_chain


def test_the_l3_is_streamed_at_the_geometric_mean_of_the_l2_and_the_l3(monkeypatch):
    from dfx.measure import calibration
    from dfx.measure.calibration import CacheLevel

    caches = {"L2": CacheLevel("L2", 4 * 2**20, 2), "L3": CacheLevel("L3", 400 * 2**20, 1)}
    monkeypatch.setattr(calibration, "host_caches", lambda: caches)
    _, sets, _, _ = calibration._plan("cpu")
    # L2: half of 4 MiB; L3: sqrt(4 MiB x 400 MiB) = 40 MiB (a quarter would be 100 MiB);
    # DRAM: 4 x 400 MiB
    assert sets == {"L2": 2 * 2**20, "L3": 40 * 2**20, "DRAM": 1600 * 2**20}
