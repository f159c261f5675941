"""The shortcuts a sweep takes change no number: no eager evaluation on GPUs, one wafer mapping per evaluation."""

import dfx
from dfx.analysis import evaluate_on
from dfx.hardware import load_profile
from dfx.targets import compile_for


def test_gpu_without_eager_numbers_has_the_same_latency():
    a = dfx.analyze("bert-layer", hardware=["nvidia-h100-sxm"], batch=2, seq=8, dtype="bf16")
    full = a.hardware[0]
    lean = evaluate_on(a.costed, load_profile("nvidia-h100-sxm"), eager=False)
    assert "eager" in full.extras and "eager" not in lean.extras
    assert lean.latency_s == full.latency_s and lean.serial_time_s == full.serial_time_s


def test_wafer_mapping_is_shared_within_an_evaluation_and_equal_to_a_fresh_one():
    from dfx.arch.spatial import wafer

    a = dfx.analyze("bert-layer", hardware=[], batch=2, seq=8, dtype="bf16")
    cs3 = load_profile("cerebras-wse-3")
    first = wafer.map_graph(a.costed, cs3)
    assert wafer.map_graph(a.costed, cs3) is first  # the timer, the export and the placement share it
    fresh = wafer.map_layers(
        wafer.stages_of(a.costed), wafer.WaferCore.from_profile(cs3), max_wafers=wafer.max_wafers(cs3)
    )
    assert fresh == first
    # another graph (or profile) is mapped afresh, never served a stale mapping
    b = dfx.analyze("bert-layer", hardware=[], batch=4, seq=8, dtype="bf16")
    assert wafer.map_graph(b.costed, cs3) is not first


def test_a_gemm_is_autotuned_once_per_process_and_profile():
    from dfx.arch.gpu.plan import clear_gemm_plans, gemm_plan

    h100, a100 = load_profile("nvidia-h100-sxm"), load_profile("nvidia-a100-sxm-80gb")
    clear_gemm_plans()
    first = gemm_plan(64, 768, 3072, "bfloat16", h100)
    assert gemm_plan(64, 768, 3072, "bfloat16", h100) is first  # M = batch x seq = 64 again: no second autotune
    assert gemm_plan(64, 768, 3072, "bfloat16", a100) is not first  # another machine is tuned for itself
    assert gemm_plan(64, 768, 3072, "bfloat16", h100, batch=2) is not first
    clear_gemm_plans()
    assert gemm_plan(64, 768, 3072, "bfloat16", h100) == first  # a fresh autotune picks the same plan


def test_peak_activations_are_computed_once_per_graph_not_per_profile():
    import math

    from dfx.arch.memory.lifetime import lifetime
    from dfx.parallel import plan

    a = dfx.analyze("bert-layer", hardware=[], batch=2, seq=8, dtype="bf16").costed
    b = dfx.analyze("bert-layer", hardware=[], batch=4, seq=8, dtype="bf16").costed

    def fresh(c):
        return lifetime(c.graph, math.inf, {n.name: n.category.value for n in c.nodes}).peak_bytes

    assert plan._peak_activation_bytes(a) == fresh(a)
    assert plan._peak_activation_bytes(b) == fresh(b) != fresh(a)  # another graph is never served a's peak
    assert plan._peak_activation_bytes(a) == fresh(a)


def test_one_chip_is_evaluated_once_for_every_split(monkeypatch):
    import dfx.analysis as analysis
    from dfx.sweep.evaluate import run_group
    from dfx.sweep.spec import load_spec

    spec = load_spec(
        None,
        {
            "models": ["bert-layer"],
            "hardware": ["nvidia-h100-sxm"],
            "seq": [8],
            "batch": [2],
            "parallel": ["auto", 1, 2, 4, "tp=2,pp=1"],
        },
    )
    calls = []
    real = analysis.evaluate_one_chip
    monkeypatch.setattr(analysis, "evaluate_one_chip", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = run_group(spec.groups()[0].to_task())
    assert len(rows) == 5 and len(calls) == 1  # 5 splits of one (profile, execution model): one evaluation
    a = dfx.analyze("bert-layer", hardware=["nvidia-h100-sxm"], batch=2, seq=8, dtype="bf16", chips=4)
    assert rows[3]["latency_s"] == a.hardware[0].latency_s


def _fresh_compile(costed, profile):
    """``compile_program`` with the fusion cache emptied first: fusion computed afresh, the reference."""
    from dfx.compile.fusion import clear_fusion_cache

    clear_fusion_cache()
    return compile_for(costed, profile)


def test_fusion_is_computed_once_per_graph_for_profiles_with_equal_rules():
    from dfx.compile.fusion import CACHE_STATS, clear_fusion_cache

    a = dfx.analyze("bert-layer", hardware=[], batch=2, seq=8, dtype="bf16").costed
    h100, a100, v4 = (
        load_profile("nvidia-h100-sxm"),
        load_profile("nvidia-a100-sxm-80gb"),
        load_profile("google-tpu-v4"),
    )
    ref_a100 = _fresh_compile(a, a100)
    clear_fusion_cache()
    compile_for(a, h100)
    assert CACHE_STATS == {"hits": 0, "misses": 1}
    shared = compile_for(a, a100)  # both GPUs fuse by InductorRules(): the H100's fusion is reused
    assert CACHE_STATS == {"hits": 1, "misses": 1}
    assert shared == ref_a100  # every kernel, decision, stage note and schedule as a fresh compile's
    compile_for(a, v4)  # XLA's rules are other rules: fused afresh
    assert CACHE_STATS == {"hits": 1, "misses": 2}
    b = dfx.analyze("bert-layer", hardware=[], batch=4, seq=8, dtype="bf16").costed
    compile_for(b, h100)  # another size is another graph: never served a's kernels
    assert CACHE_STATS == {"hits": 1, "misses": 3}


def test_compiled_programs_over_many_sizes_equal_fresh_compiles():
    """Every profile of the sweep's axes, at 6 sizes: the cached pipeline gives the fresh pipeline's program."""
    from dfx.compile.fusion import CACHE_STATS, clear_fusion_cache

    refs = ("nvidia-h100-sxm", "nvidia-a100-sxm-80gb", "google-tpu-v4", "groq-lpu", "cerebras-wse-3", "ibm-spyre")
    profiles = [load_profile(r) for r in refs]
    for batch, seq in ((1, 8), (2, 8), (1, 24), (4, 16), (2, 32), (4, 32)):
        costed = dfx.analyze("gpt2-block", hardware=[], batch=batch, seq=seq, dtype="bf16").costed
        fresh = [_fresh_compile(costed, p) for p in profiles]
        clear_fusion_cache()
        cached = [compile_for(costed, p) for p in profiles]
        assert cached == fresh, (batch, seq)
        # 6 profiles: the two GPUs share InductorRules(); the 3 dataflow chips' on-chip capacities
        # differ (Groq 220 MiB, Cerebras 44 GB, Spyre 64 MB) but a GPT-2 block's regions at these sizes
        # need far less than the smallest, so every capacity answers each comparison alike and the
        # first chip's run is reused with its capacity re-quoted: 3 fusions, 3 hits per size
        assert CACHE_STATS == {"hits": 3, "misses": 3}, (batch, seq)


def test_sweep_rows_equal_analyze_with_the_fusion_cache_emptied(spec, full_sweep):
    """12 more points of the 216-point sweep (run with the cache, in worker processes), against dfx.analyze run afresh."""
    import random

    from dfx.compile.fusion import clear_fusion_cache

    _, _, rows = full_sweep
    for p in random.Random(2026).sample(spec.points(), 12):
        clear_fusion_cache()
        a = dfx.analyze(p.model, hardware=[p.hardware], batch=p.batch, seq=p.seq, dtype="bf16")
        assert rows[p.point_id]["latency_s"] == a.hardware[0].latency_s, p  # exactly


def test_capture_objects_are_frozen_only_in_processes_that_opt_in():
    import subprocess
    import sys

    from dfx.heap import after_capture

    assert after_capture() is False  # a library caller (this test process) keeps its collector as it is
    # a process that opts in (the command line, a sweep worker) collects, then freezes what survives
    code = (
        "import gc; from dfx.heap import after_capture, freeze_after_capture; freeze_after_capture(); "
        "assert gc.get_freeze_count() == 0; assert after_capture(); assert gc.get_freeze_count() > 0"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    # the command line opts in for its run only: main() called in this process puts the setting back
    from dfx import cli

    _run_cli_main(cli, ["--version"])
    assert after_capture() is False


def _run_cli_main(cli, argv):
    import sys

    saved = sys.argv
    sys.argv = ["dfx", *argv]
    try:
        cli.main()
    except SystemExit as exc:
        assert exc.code in (0, None)
    finally:
        sys.argv = saved


def test_a_dataflow_fusion_is_reused_at_another_capacity_only_where_no_decision_changes():
    """The on-chip capacity is read only by ``need > capacity``: a run is reused for a capacity that answers
    every comparison of the run alike, and fused afresh (never reused) for one that would flip one."""
    from dfx.compile import lower_eager
    from dfx.compile.fusion import CACHE_STATS, _CapacityProbe, _fuse_program, clear_fusion_cache, fusion_pass
    from dfx.compile.rules import DataflowRules

    costed = dfx.analyze("gpt2-block", hardware=[], batch=2, seq=16, dtype="bf16").costed
    spyre = load_profile("ibm-spyre")
    program = lower_eager(costed, spyre)
    # the largest region a roomy chip accepts, measured by the probe (independently of the cache)
    probe = _CapacityProbe(DataflowRules(capacity_bytes=1e12))
    _fuse_program(program, costed, probe)
    largest = probe.largest_accepted
    assert 0 < largest < 1e12 and probe.smallest_refused == float("inf")  # nothing refused at 1 TB

    def fresh(capacity):
        clear_fusion_cache()
        return fusion_pass(DataflowRules(capacity_bytes=capacity))(program, costed, spyre)

    for capacity, reused in ((2e11, True), (largest, True), (largest - 1, False)):
        expected = fresh(capacity)
        clear_fusion_cache()
        fusion_pass(DataflowRules(capacity_bytes=1e12))(program, costed, spyre)  # the run to reuse
        got = fusion_pass(DataflowRules(capacity_bytes=capacity))(program, costed, spyre)
        assert CACHE_STATS == ({"hits": 1, "misses": 1} if reused else {"hits": 0, "misses": 2}), capacity
        assert got.program == expected.program and got.notes == expected.notes, capacity
        assert got.modified == expected.modified
    # the re-quoted reasons name the capacity of the chip asked, as a fresh run writes them
    decisions = fresh(2e11).program.meta["fusion_decisions"]
    assert decisions and all("2e+11 B" in d.reason for d in decisions if d.fused)


def test_pool_chunks_shrink_to_single_groups_and_keep_every_task_in_order():
    from dfx.sweep.runner import _chunks

    # 10 tasks, 2 workers: ceil(10 / 8) = 2, then 8 left, ceil(8 / 8) = 1 each
    assert [len(c) for c in _chunks(list(range(10)), 2)] == [2, 1, 1, 1, 1, 1, 1, 1, 1]
    # 144 groups (the bench's 864-point sweep), 2 workers: ceil(144 / 8) = 18, capped at 16; then
    # ceil(128 / 8) = 16, ceil(112 / 8) = 14, ceil(98 / 8) = 13, ...; the last 8 tasks go one at a time
    chunks = _chunks(list(range(144)), 2)
    sizes = [len(c) for c in chunks]
    assert sizes[:4] == [16, 16, 14, 13] and sizes[-8:] == [1] * 8 and len(sizes) == 27
    assert [t for c in chunks for t in c] == list(range(144))
    assert _chunks([], 2) == []
    # a task that captures (not cached) goes alone, and the chunk before it stops short: 20 tasks,
    # 1 worker, task 3 to capture: ceil(20 / 4) = 5 cut to 0..2; [3]; ceil(16 / 4) = 4; ceil(12 / 4) = 3; ...
    cached = [i != 3 for i in range(20)]
    assert [len(c) for c in _chunks(list(range(20)), 1, cached)] == [3, 1, 4, 3, 3, 2, 1, 1, 1, 1]


def test_a_worker_freezes_what_it_inherits_and_runs_a_cached_group_with_the_collector_off(tmp_path):
    import subprocess
    import sys

    # a group whose graph is cached runs with the collector off, then freezes what it made (no
    # collection: such a group leaves no cycles, see the test below); the collector is on again
    # afterwards, and the rows are run_group's
    code = (
        "import gc, json, sys; from dfx.heap import start_worker; "
        "from dfx.sweep.evaluate import run_group, graph_on_disk; from dfx.sweep import runner, load_spec; "
        "assert gc.get_freeze_count() == 0; start_worker(); frozen = gc.get_freeze_count(); assert frozen > 0; "
        "spec = load_spec(None, {'models': ['gpt2-block'], 'hardware': ['ibm-spyre'], 'seq': [8], 'batch': [1]}); "
        "task = spec.groups()[0].to_task(); cache = sys.argv[1]; seen = []; inner = runner.run_group; "
        "runner.run_group = lambda t, c: seen.append(gc.isenabled()) or inner(t, c); "
        "first = runner._run_in_worker(task, cache); assert graph_on_disk(task, cache); "  # a capture: gc on
        "before = gc.get_freeze_count(); again = runner._run_in_worker(task, cache); "
        "assert seen == [True, False] and gc.isenabled(), seen; "  # the cached group: off, and on again after
        "assert gc.get_freeze_count() > before; "  # what the group made was frozen
        "assert json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True) "
        "== json.dumps(run_group(task, cache), sort_keys=True)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "graphs")], check=True)


def test_groups_on_cached_graphs_leave_no_reference_cycles(full_sweep):
    """What a worker's cached group makes is frozen without a collection (dfx.heap.held), which is
    right only while such a group leaves no garbage in reference cycles: a collection after each
    group must find nothing unreachable (0), the first group of a process (imports) included."""
    import json
    import subprocess
    import sys

    from tests.sweep.conftest import AXES

    out, _, _ = full_sweep
    code = (
        "import gc, json, sys; from dfx.sweep import load_spec; from dfx.sweep.evaluate import run_group; "
        "tasks = [g.to_task() for g in load_spec(None, json.loads(sys.argv[1])).groups()]; gc.collect(); found = []; "
        "[(gc.disable(), run_group(t, sys.argv[2]), found.append(gc.collect()), gc.enable()) for t in tasks]; "
        "assert len(found) == 36 and set(found) == {0}, found"
    )
    subprocess.run([sys.executable, "-c", code, json.dumps(AXES), str(out / "graphs")], check=True)


def test_seq_sized_buffers_that_do_not_export_fall_back_to_a_bucket_per_seq(monkeypatch):
    from dfx import analysis
    from dfx.capture import symbolic
    from dfx.errors import CaptureError
    from dfx.sweep import graphs

    def refuse(ep, as_input):
        if as_input:
            raise CaptureError("buffer could not be exported as an input")
        return {}

    monkeypatch.setattr(symbolic, "_restore_buffers", refuse)
    graphs.reset()
    got = {
        (b, s): graphs.forward_graph("llama3-8b-layer", b, s, "bfloat16", "auto") for b, s in [(2, 8), (3, 8), (4, 8)]
    }
    # (2, 8): concrete, and the lifted export refused; the model is then sized by seq: (3, 8) opens
    # seq 8's bucket (concrete + a batch-symbolic export), (4, 8) is substituted into it
    assert graphs._FIXED[("llama3-8b-layer", "bfloat16")] == (False, True, ())
    assert dict(graphs.CAPTURES) == {"concrete": 2, "symbolic": 2, "substituted": 1}
    for (b, s), g in got.items():
        ref, _ = analysis.capture_spec("llama3-8b-layer", batch=b, seq=s, dtype="bfloat16", method="auto")
        assert g.to_json() == ref.to_json(), (b, s)
    graphs.reset()


def test_a_buffer_padded_past_seq_is_not_given_seq_rows(monkeypatch):
    import torch

    from dfx import analysis
    from dfx.models.registry import PRESETS, Preset
    from dfx.sweep import graphs

    class Padded(torch.nn.Module):
        """A table of seq rows rounded up to a multiple of 8, read whole: 16 and 24 rows at the probe
        seqs 16 and 24 (as a table of seq rows), but 24 at seq 20."""

        def __init__(self, seq):
            super().__init__()
            self.register_buffer("table", torch.zeros(-(-seq // 8) * 8, 32))
            self.proj = torch.nn.Linear(32, 32)

        def forward(self, x):
            return self.proj(x) @ self.table.T

    monkeypatch.setitem(PRESETS, "padded", Preset("padded", Padded, lambda b, t: (b, t, 32), 16))
    graphs.reset()
    got = {s: graphs.forward_graph("padded", 2, s, "bfloat16", "auto") for s in (8, 16, 20)}
    assert graphs._FIXED[("padded", "bfloat16")] == (False, False, ("table",))
    # seq 20: (2, 20, 32) @ (32, 24) -> (2, 20, 24), a table of 24 rows, not 20
    assert got[20].nodes[-2].outputs[0].shape == (2, 20, 24)
    for s, g in got.items():
        ref, _ = analysis.capture_spec("padded", batch=2, seq=s, dtype="bfloat16", method="auto")
        assert g.to_json() == ref.to_json(), s
    graphs.reset()


def test_a_buckets_groups_travel_as_one_chunk_largest_first():
    from dfx.sweep import load_spec
    from dfx.sweep.runner import _bucket_chunks

    # gpt2-block: batch 1 is one bucket (seq symbolic), batch 2..3 another (both symbolic); so for
    # llama3-8b-layer, whose seq-sized rotary tables export as inputs. A point of seq 1 has nothing
    # symbolic in llama's batch 1 row: captured concretely, alone.
    tasks = [
        g.to_task()
        for m, b, seqs in (("gpt2-block", [1, 2, 3], [8, 16]), ("llama3-8b-layer", [1, 2, 3], [1, 8, 16]))
        for g in load_spec(None, {"models": [m], "hardware": ["ibm-spyre"], "batch": b, "seq": seqs}).groups()
    ]
    chunks = _bucket_chunks(tasks, 2, [False] * len(tasks))
    sizes = [sorted((t["model"], t["batch"], t["seq"]) for t in c) for c in chunks]
    assert sizes[0] == [("gpt2-block", b, s) for b in (2, 3) for s in (8, 16)]
    assert sizes[1] == [("llama3-8b-layer", b, s) for b in (2, 3) for s in (8, 16)]
    assert sizes[2:4] == [
        [("gpt2-block", 1, 8), ("gpt2-block", 1, 16)],
        [("llama3-8b-layer", 1, 8), ("llama3-8b-layer", 1, 16)],
    ]
    # seq 1 is a size of 1 (never symbolic): batch 2..3 at seq 1 share a bucket (batch symbolic), batch 1 is alone
    assert sizes[4:] == [[("llama3-8b-layer", 2, 1), ("llama3-8b-layer", 3, 1)], [("llama3-8b-layer", 1, 1)]]
    # a cached group needs no bucket: it rides in the shrinking chunks after the captures
    cached = _bucket_chunks(tasks, 2, [True] * len(tasks))
    assert sum(len(c) for c in cached) == len(tasks) and all(len(c) <= 16 for c in cached)
