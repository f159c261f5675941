"""A sweep gives, point by point, the numbers of separate dfx.analyze calls; it resumes where it stopped."""

import math
import random
import shutil

import pytest

import dfx
from dfx.sweep import ResultsTable, run_sweep
from dfx.sweep.runner import CACHE_DIR


def test_sweep_covers_every_point_once(spec, full_sweep):
    out, run, rows = full_sweep
    assert spec.n_points == 3 * 6 * 4 * 3 == 216
    assert run.ran == 216 and run.already_done == 0
    # one capture per (model, batch, seq): 3 x 3 x 4 = 36 groups of 6 profiles
    assert run.groups_ran == 36 and len(list((out / CACHE_DIR).glob("*.graph.json"))) == 36
    assert len(rows) == 216 and not any(r["error"] for r in rows.values())


def test_sample_of_points_equals_separate_analyze_calls(spec, full_sweep):
    _, _, rows = full_sweep
    sample = random.Random(17).sample(spec.points(), 6)
    for p in sample:
        assert p.dtype == "bfloat16"  # the sweep's default, as dfx analyze's
        a = dfx.analyze(p.model, hardware=[p.hardware], batch=p.batch, seq=p.seq, dtype="bf16")
        row = rows[p.point_id]
        assert row["latency_s"] == a.hardware[0].latency_s, p  # exactly, not approximately
        assert row["flops"] == a.to_dict()["totals"]["flops"]
        assert row["bytes"] == a.costed.total.bytes_read + a.costed.total.bytes_written
        # a forward pass processes batch * seq tokens in latency_s
        assert row["tokens_per_s"] == p.batch * p.seq / a.hardware[0].latency_s


def _batch_4_faster_than_1(rows, gpus: bool) -> list[str]:
    """Points at batch 4 predicted faster than the same point at batch 1 (4x the FLOPs, same weights)."""
    out = []
    for r in rows.values():
        if r["batch"] == 4 and r["hardware"].startswith("nvidia-") == gpus:
            small = rows[r["point_id"].replace("|4|", "|1|", 1)]
            assert r["flops"] == 4 * small["flops"]  # every FLOP of these layers scales with the batch
            if r["latency_s"] < small["latency_s"]:
                out.append(r["point_id"])
    return out


def test_latency_grows_with_batch(full_sweep):
    # more work is never faster on one machine: batch 4 takes at least as long as batch 1
    assert _batch_4_faster_than_1(full_sweep[2], gpus=False) == []


def test_latency_grows_with_batch_on_gpus(full_sweep):
    assert _batch_4_faster_than_1(full_sweep[2], gpus=True) == []


def _resume_folder(full_sweep, tmp_path):
    """A fresh folder with the full sweep's captured graphs, so resuming evaluates without capturing."""
    out = tmp_path / "resumed"
    shutil.copytree(full_sweep[0] / CACHE_DIR, out / CACHE_DIR)
    return out


def test_stopped_sweep_resumes_only_the_missing_points(spec, full_sweep, tmp_path):
    out = _resume_folder(full_sweep, tmp_path)
    seen = []

    def stop_halfway(rows):
        seen.extend(rows)
        if len(seen) >= 108:
            raise KeyboardInterrupt  # what Ctrl-C does halfway

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out, workers=1, on_rows=stop_halfway)
    table = ResultsTable(out)
    first = table.path.read_text()
    assert len(table.done_ids()) == 108  # 18 groups of 6 profiles made it to the table
    again = run_sweep(spec, out, workers=1)
    assert (again.already_done, again.ran, again.groups_ran) == (108, 108, 18)
    assert table.path.read_text().startswith(first)  # the first half's rows were kept, not rewritten
    rows = {r["point_id"]: r for r in table.rows()}
    # from graphs read back from the cache folder: the same numbers as the live captures
    assert rows == full_sweep[2]
    assert run_sweep(spec, out, workers=1).ran == 0


def test_torn_last_row_runs_again(spec, full_sweep, tmp_path):
    out = _resume_folder(full_sweep, tmp_path)
    run_sweep(spec, out, workers=1)
    table = ResultsTable(out)
    text = table.path.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    table.path.write_text(text[: len(text) - len(last) - 1] + last[: len(last) // 2])  # killed mid-write
    assert len(table.done_ids()) == 215
    again = run_sweep(spec, out, workers=1)
    assert again.ran == 1 and len(table.done_ids()) == 216
    assert {r["point_id"]: r for r in table.rows()} == full_sweep[2]


def test_a_sweep_into_its_folder_extends_it_unless_a_fixed_setting_differs(tmp_path):
    import json

    from dfx.errors import DfxError
    from dfx.sweep import load_spec

    def spec(seq, **settings):
        return load_spec(
            None, {"models": ["bert-layer"], "hardware": ["ibm-spyre"], "seq": seq, "batch": [1], **settings}
        )

    out = tmp_path / "s"
    assert run_sweep(spec([8]), out, workers=1).ran == 1
    # more points into the same table: the one already there is not run again (docs/sweeps.md)
    grown = run_sweep(spec([8, 16]), out, workers=1)
    assert (grown.points, grown.already_done, grown.ran) == (2, 1, 1)
    # points the folder lacks, none shared: they are added, the rows already there kept
    assert run_sweep(spec([24]), out, workers=1).ran == 1
    assert sorted(r["seq"] for r in ResultsTable(out).rows()) == [8, 16, 24]
    assert json.loads((out / "sweep.json").read_text())["spec"]["seq"] == [8, 16, 24]  # the union of the axes
    # a point's id does not name output_len: a generate row at another output_len would pass for this one's
    with pytest.raises(DfxError, match="output_len 128 .* this one has output_len 64"):
        run_sweep(spec([8], output_len=64), out, workers=1)
    assert run_sweep(spec([16], output_len=64), out, workers=1, force=True).ran == 1
    assert [r["seq"] for r in ResultsTable(out).rows()] == [16]
    (out / "sweep.json").write_text("not json")
    with pytest.raises(DfxError, match="cannot read"):
        run_sweep(spec([16]), out, workers=1)


def test_fp8_and_int8_points_equal_analyze(full_sweep, tmp_path):
    from dfx.sweep import load_spec

    # fp8 and int8 re-price the bf16 capture, which the sweep already holds: nothing is captured again
    spec = load_spec(
        None,
        {
            "models": ["bert-layer"],
            "hardware": ["nvidia-h100-sxm", "ibm-spyre"],
            "seq": [8],
            "batch": [1],
            "dtype": ["fp8", "int8"],
        },
    )
    out = _resume_folder(full_sweep, tmp_path)
    run_sweep(spec, out, workers=1)
    rows = {r["point_id"]: r for r in ResultsTable(out).rows()}
    for dtype, name in (("fp8", "float8_e4m3fn"), ("int8", "int8")):
        a = dfx.analyze("bert-layer", hardware=["nvidia-h100-sxm", "ibm-spyre"], batch=1, seq=8, dtype=dtype)
        for result in a.hardware:
            row = rows[f"bert-layer|{result.profile.id}|1|8|{name}|forward|default"]
            assert (
                row["latency_s"] == result.latency_s
                and row["bytes"] == a.to_dict()["totals"]["bytes_read"] + a.to_dict()["totals"]["bytes_written"]
            )
        bf16 = full_sweep[2]["bert-layer|nvidia-h100-sxm|1|8|bfloat16|forward|default"]
        assert row["bytes"] < bf16["bytes"]  # 1-byte elements move fewer bytes than 2-byte ones


def test_phase_points_equal_analyze_with_phase(tmp_path):
    from dfx.sweep import load_spec

    spec = load_spec(
        None,
        {
            "models": ["gpt2-block", "bert-layer"],
            "hardware": ["nvidia-h100-sxm"],
            "seq": [16],
            "batch": [2],
            "phase": ["prefill", "decode"],
            "dtype": ["fp32"],
        },
    )
    run_sweep(spec, tmp_path / "p", workers=1)
    rows = {r["point_id"]: r for r in ResultsTable(tmp_path / "p").rows()}
    pre = dfx.analyze("gpt2-block", hardware=["h100"], batch=2, phase="prefill", prompt_len=16, dtype="fp32")
    dec = dfx.analyze("gpt2-block", hardware=["h100"], batch=2, phase="decode", kv_len=16, dtype="fp32")
    r = rows["gpt2-block|nvidia-h100-sxm|2|16|float32|prefill|default"]
    m = pre.inference.metrics("nvidia-h100-sxm")
    assert (r["latency_s"], r["ttft_s"], r["tokens_per_s"]) == (
        pre.hardware[0].latency_s,
        m.ttft_s,
        m.prefill_tokens_per_s,
    )
    assert math.isnan(r["tpot_s"])
    r = rows["gpt2-block|nvidia-h100-sxm|2|16|float32|decode|default"]
    m = dec.inference.metrics("nvidia-h100-sxm")
    assert (r["latency_s"], r["tpot_s"], r["tokens_per_s"]) == (dec.hardware[0].latency_s, m.tpot_s, m.tokens_per_s)
    # a decode step of batch 2 makes 2 tokens in one step's time
    assert r["tokens_per_s"] == pytest.approx(2 / r["latency_s"], rel=1e-12)
    # BERT is not a causal decoder: dfx refuses the phase, and the sweep records why instead of stopping
    bert = rows["bert-layer|nvidia-h100-sxm|2|16|float32|decode|default"]
    assert bert["error"] and math.isnan(bert["latency_s"])


def test_one_capture_per_model_and_bucket(tmp_path):
    from dfx.sweep import graphs, load_spec

    # 2 models x 4 batch x 5 seq = 40 graphs. Buckets: batch 1 (seq symbolic) and batch 2..4 (both
    # symbolic) for gpt2-block and bert-layer; llama3-8b-layer too, though it sizes its rotary tables
    # by seq: they are exported as inputs of seq rows (dfx.capture.symbolic.seq_sized_buffers), so
    # 2 + 2 + 2 = 6 buckets.
    spec = load_spec(
        None,
        {
            "models": ["gpt2-block", "bert-layer"],
            "hardware": ["nvidia-h100-sxm", "ibm-spyre"],
            "batch": [1, 2, 3, 4],
            "seq": [8, 16, 24, 32, 40],
        },
    )
    llama = load_spec(
        None, {"models": ["llama3-8b-layer"], "hardware": ["ibm-spyre"], "batch": [1, 2, 3], "seq": [8, 16]}
    )
    graphs.reset()
    run_sweep(spec, tmp_path / "a", workers=1)
    # Per model, batch 1 (seq symbolic, degree 2): seq 8 concrete, 16 and 24 substituted (the grid),
    # 32 substituted and checked against the polynomial, 40 interpolated. Batch 2..4 (degree 1 in
    # batch): (2, 8) concrete, (2, 16..40) and (3, 8..24) substituted (grid {2, 3} x {8, 16, 24}),
    # (3, 32) substituted as the check, (3, 40) and batch 4's five interpolated.
    assert dict(graphs.CAPTURES) == {"symbolic": 4, "concrete": 4, "substituted": 2 * (3 + 8), "interpolated": 2 * 7}
    graphs.reset()
    run_sweep(llama, tmp_path / "b", workers=1)
    # batch 1: seq 8 concrete, seq 16 substituted; batch 2..3: (2, 8) concrete, (2, 16), (3, 8) and
    # (3, 16) substituted (two seqs never fill the three-seq grid, so nothing is interpolated)
    assert dict(graphs.CAPTURES) == {"symbolic": 2, "concrete": 2, "substituted": 1 + 3}
    rows = {r["point_id"]: r for r in ResultsTable(tmp_path / "a").rows()} | {
        r["point_id"]: r for r in ResultsTable(tmp_path / "b").rows()
    }
    # substituted and interpolated points against separate dfx.analyze calls, exactly
    for model, hw, batch, seq in [
        ("gpt2-block", "ibm-spyre", 3, 40),
        ("bert-layer", "nvidia-h100-sxm", 1, 24),
        ("llama3-8b-layer", "ibm-spyre", 3, 16),
    ]:
        a = dfx.analyze(model, hardware=[hw], batch=batch, seq=seq, dtype="bf16")
        row = rows[f"{model}|{hw}|{batch}|{seq}|bfloat16|forward|default"]
        assert row["latency_s"] == a.hardware[0].latency_s and row["flops"] == a.to_dict()["totals"]["flops"]


def test_parallel_axis_equals_analyze_with_chips_and_parallel(full_sweep, tmp_path):
    from dfx.sweep import load_spec, write_report
    from dfx.sweep.report import chips_curves

    spec = load_spec(
        None,
        {
            "models": ["gpt2-block"],
            "hardware": ["nvidia-h100-sxm", "groq-lpu"],
            "seq": [32],
            "batch": [4],
            "parallel": ["auto", 1, 2, 4, "pp=1,tp=2"],
        },
    )
    assert spec.parallel == ("auto", "chips=1", "chips=2", "chips=4", "tp=2,pp=1")
    out = _resume_folder(full_sweep, tmp_path)
    run_sweep(spec, out, workers=1)
    rows = {r["point_id"]: r for r in ResultsTable(out).rows()}
    assert len(rows) == 2 * 5
    base = "gpt2-block|nvidia-h100-sxm|4|32|bfloat16|forward|default"
    # auto is dfx analyze without --chips: the same row key as before the axis existed
    assert rows[base]["latency_s"] == full_sweep[2][base]["latency_s"] and rows[base]["chips"] == 1
    for par, kw in [("chips=2", {"chips": 2}), ("chips=4", {"chips": 4}), ("tp=2,pp=1", {"parallel": "tp=2"})]:
        a = dfx.analyze("gpt2-block", hardware=["nvidia-h100-sxm"], batch=4, seq=32, dtype="bf16", **kw)
        row = rows[f"{base}|{par}"]
        assert row["latency_s"] == a.hardware[0].latency_s and row["chips"] == a.hardware[0].extras["chips"], par
        assert row["tokens_per_s"] == 4 * 32 / row["latency_s"]
    # --chips 2 on an H100 is tensor parallelism over 2 chips (NVLink domain of 8): the same plan as tp=2
    assert rows[f"{base}|chips=2"]["latency_s"] == rows[f"{base}|tp=2,pp=1"]["latency_s"]
    curves = chips_curves(list(rows.values()))
    assert [c for c, _ in curves["gpt2-block"]["nvidia-h100-sxm"]] == [1, 2, 4]
    written = {p.name for p in write_report(list(rows.values()), out)}
    assert "tokens_per_s_vs_chips.png" in written


def test_groups_with_cached_graphs_are_known_before_running(spec, full_sweep):
    from dfx.sweep import load_spec
    from dfx.sweep.evaluate import graph_on_disk

    cache = str(full_sweep[0] / CACHE_DIR)
    # every graph of the full sweep is on disk: the pool forks at once, with nothing to warm up
    assert all(graph_on_disk(g.to_task(), cache) for g in spec.groups())
    other = load_spec(None, {"models": ["bert-layer"], "hardware": ["ibm-spyre"], "seq": [40], "batch": [1]})
    assert not any(graph_on_disk(g.to_task(), cache) for g in other.groups())
    fp8 = load_spec(
        None, {"models": ["bert-layer"], "hardware": ["ibm-spyre"], "seq": [8], "batch": [1], "dtype": ["fp8"]}
    )
    assert all(graph_on_disk(g.to_task(), cache) for g in fp8.groups())  # fp8 re-prices the bf16 graph


@pytest.mark.parametrize("phase", ["forward", "decode"])
def test_eager_on_a_chip_without_it_is_that_rows_error_only(tmp_path, phase):
    from dfx.sweep import load_spec

    spec = load_spec(
        None,
        {
            "models": ["gpt2-block"],
            "hardware": ["nvidia-h100-sxm", "groq-lpu"],
            "seq": [8],
            "batch": [1],
            "phase": [phase],
            "execution_model": ["eager"],
        },
    )
    run_sweep(spec, tmp_path / "e", workers=1)
    rows = {r["hardware"]: r for r in ResultsTable(tmp_path / "e").rows()}
    groq, h100 = rows["groq-lpu"], rows["nvidia-h100-sxm"]
    assert "'eager' on groq-lpu" in groq["error"] and math.isnan(groq["latency_s"])
    # the GPU's eager point is still evaluated, as dfx.analyze evaluates it
    lengths = {"phase": "decode", "kv_len": 8} if phase == "decode" else {"seq": 8}
    a = dfx.analyze("gpt2-block", hardware=["h100"], batch=1, dtype="bf16", execution_model="eager", **lengths)
    assert h100["error"] == "" and h100["latency_s"] == a.hardware[0].latency_s


def test_resnet_block_seq_is_the_image_side_and_each_seq_gets_its_own_graph(tmp_path):
    from dfx.sweep import graphs, load_spec

    # resnet-block's input is (B, 256, S, S): seq is the side S, at dims 2 and 3, which the symbolic
    # capture does not mark (dim 1 is the 256 channels). Seq 28's graph must not serve seq 56.
    spec = load_spec(
        None, {"models": ["resnet-block"], "hardware": ["nvidia-h100-sxm"], "batch": [1, 2, 3], "seq": [28, 56]}
    )
    graphs.reset()
    run_sweep(spec, tmp_path / "r", workers=1)
    rows = {r["point_id"]: r for r in ResultsTable(tmp_path / "r").rows()}
    # conv MACs per output pixel: 1x1 256->64 + 3x3 64->64 + 1x1 64->256 = 16384 + 36864 + 16384 = 69632;
    # 2 FLOPs per MAC; seq 28 has 28 * 28 = 784 pixels per image.
    conv_28 = 2 * 69632 * 28 * 28
    for batch in (1, 2, 3):
        r28 = rows[f"resnet-block|nvidia-h100-sxm|{batch}|28|bfloat16|forward|default"]
        r56 = rows[f"resnet-block|nvidia-h100-sxm|{batch}|56|bfloat16|forward|default"]
        # convs dominate; BatchNorm, ReLU and the residual add are a few FLOPs per element (< 2 %)
        assert batch * conv_28 <= r28["flops"] < 1.02 * batch * conv_28
        # every op but BatchNorm's few per-channel terms is per pixel: doubling the side quadruples the FLOPs
        assert r56["flops"] == pytest.approx(4 * r28["flops"], rel=1e-5)
        assert 4 * batch * conv_28 <= r56["flops"] < 1.02 * 4 * batch * conv_28
        # seq is the image side, not a token count: batch * seq / latency is no throughput, so no tokens/s
        assert math.isnan(r28["tokens_per_s"]) and math.isnan(r56["tokens_per_s"])
        a = dfx.analyze("resnet-block", hardware=["nvidia-h100-sxm"], batch=batch, seq=56, dtype="bf16")
        assert r56["latency_s"] == a.hardware[0].latency_s and r56["flops"] == a.to_dict()["totals"]["flops"]
    # batch 1: two concrete captures (its one symbolic export finds seq fixed); batch 2: per seq a
    # concrete capture and a batch-symbolic export; batch 3: substituted into that seq's export
    assert dict(graphs.CAPTURES) == {"concrete": 4, "symbolic": 3, "substituted": 2}
    # the summary has no tokens/s for it: empty in summary.csv, "-" in report.html's table
    from dfx.sweep.report import write_report

    write_report(list(rows.values()), tmp_path / "r", force=True)
    summary = (tmp_path / "r" / "summary.csv").read_text().splitlines()
    header, line = summary[0].split(","), summary[1].split(",")
    assert line[header.index("model")] == "resnet-block" and line[header.index("best_tokens_per_s")] == ""
    assert "<td>-</td>" in (tmp_path / "r" / "report.html").read_text()


def test_a_bucket_whose_check_point_disagrees_never_interpolates():
    from dfx.sweep import graphs

    class Cubic:  # a graph whose one integer is s**3: a quadratic through three seqs misses it
        def __init__(self, s):
            self.s = s

        def to_json(self):
            return f"[{self.s**3}]"

    class FakeCapture:
        batch_symbolic, seq_symbolic = False, True

        def graph_at(self, batch, seq):
            return Cubic(seq)

    graphs.reset()
    bucket = graphs._Bucket(FakeCapture(), 2, 8, Cubic(8))
    for s in (16, 24, 32, 40, 48):  # 16, 24: the grid; 32: the check (32**3 against the quadratic's guess)
        assert bucket.graph_at(2, s).s == s
    assert bucket.trusted is False and dict(graphs.CAPTURES) == {"substituted": 5}


def test_a_bucket_interpolates_after_its_check_point_agrees(monkeypatch):
    import dfx.ir.polytext
    from dfx.capture.symbolic import GuardFailure
    from dfx.sweep import graphs

    class Square:
        def __init__(self, s):
            self.s = s

        def to_json(self):
            return f'{{"s": [{self.s}, {self.s * self.s}]}}'

    class FakeCapture:
        batch_symbolic, seq_symbolic = False, True

        def graph_at(self, batch, seq):
            return Square(seq)

        def check_guards(self, batch, seq):
            if seq > 1000:  # as an export whose range ends at 1000
                raise GuardFailure("seq beyond the range")

    monkeypatch.setattr(dfx.ir.polytext, "graph_of_text", lambda text: text)  # the text itself, no Graph
    graphs.reset()
    bucket = graphs._Bucket(FakeCapture(), 2, 8, Square(8))
    for s in (16, 24, 32):  # the grid, then the check
        bucket.graph_at(2, s)
    assert bucket.trusted is True
    assert bucket.graph_at(2, 100) == '{"s": [100, 10000]}'
    assert dict(graphs.CAPTURES) == {"substituted": 3, "interpolated": 1}
    with pytest.raises(GuardFailure):  # an interpolated point is held to the export's guards too
        bucket.graph_at(2, 2000)


def test_an_hf_decoder_bucket_is_exported_cut_to_its_blocks_and_assembled_as_analyze_assembles_it():
    # dfx analyze captures hf:gpt2 as one block per layer kind, repeated (dfx.inference.blocks); the
    # bucket's symbolic export is of the same cut model, so its graphs align and assemble to the same
    # whole graph (before, the whole model's export never aligned with it: every point was concrete)
    pytest.importorskip("transformers")
    from dfx.capture_spec import capture_spec
    from dfx.sweep import graphs

    graphs.reset()
    sizes = [(2, 8), (2, 16), (2, 24), (3, 8), (3, 16), (3, 24), (3, 32), (4, 40)]
    got = {(b, s): graphs.forward_graph("hf:gpt2", b, s, "bfloat16", "auto") for b, s in sizes}
    # (2, 8) concrete and exported; the grid {2, 3} x {8, 16, 24} then (3, 32), the check, substituted;
    # (4, 40) interpolated
    assert dict(graphs.CAPTURES) == {"concrete": 1, "symbolic": 1, "substituted": 6, "interpolated": 1}
    for b, s in [(3, 16), (4, 40)]:
        expected, _ = capture_spec("hf:gpt2", batch=b, seq=s, dtype="bfloat16")
        assert got[(b, s)] == expected and got[(b, s)].to_json() == expected.to_json()
