"""The busy-machine verdict on injected load probes (no timing), and calibrate's re-measuring of contradicting figures."""

import pytest

from dfx.measure.busy import LoadProbe, probe_load, verdict

QUIET = LoadProbe(load_1min=0.2, cpu_share=0.99, spin_per_s=1000.0)


def test_a_quiet_machine_is_trusted():
    v = verdict(QUIET, LoadProbe(1.8, 0.97, 950.0), cpus=2, threads=2)  # our own two threads raise the load after
    assert not v.busy and v.reasons == ()
    assert v.line.startswith("verdict: quiet: figures can be trusted")
    assert "spin rate -5%" in v.line  # 950 / 1000 - 1


WAITED = LoadProbe(0.3, 0.6, 1000.0)  # a spinning thread got 60% of a CPU: it waited for one


def test_load_from_others_before_measuring_is_the_first_reason_of_a_busy_verdict():
    # 2 CPUs, 2 threads: our threads leave 0 CPUs free; 0 + 0.5 slack = 0.5 < 1.2
    v = verdict(LoadProbe(1.2, 0.99, 1000.0), WAITED, cpus=2, threads=2)
    assert v.busy and "load average 1.20 before measuring, over the 0.5" in v.reasons[0]
    assert "got 60% of a CPU after" in v.reasons[1]
    # 8 CPUs, 2 threads leave 6 free: 6 + 0.5 = 6.5 > 1.2, not a reason
    assert len(verdict(LoadProbe(1.2, 0.99, 1000.0), WAITED, cpus=8, threads=2).reasons) == 1
    # our own recent work (a capture, a calibration: the probe's own_load) is not another process's
    assert len(verdict(LoadProbe(1.2, 0.99, 1000.0), WAITED, cpus=2, threads=2, own_load=1.0).reasons) == 1
    assert len(verdict(LoadProbe(1.2, 0.99, 1000.0, own_load=1.0), WAITED, cpus=2, threads=2).reasons) == 1
    # 1.2 - 0.5 ours = 0.7 > 0.5: still others
    assert (
        "load average 1.20 (0.50 of it ours)"
        in verdict(LoadProbe(1.2, 0.99, 1000.0, own_load=0.5), WAITED, cpus=2, threads=2).reasons[0]
    )


def test_a_load_average_alone_is_a_note_when_the_threads_got_their_cpus():
    # Measured here: a minute after a test run ended, the 1-minute average still read 1.52 on 2 CPUs
    # while both spins got 97% and 100% of a CPU. The average lags; the spins measure the run.
    v = verdict(LoadProbe(1.52, 0.97, 1000.0), LoadProbe(1.6, 1.0, 1000.0), cpus=2, threads=2)
    assert not v.busy and v.reasons == ()
    assert v.line.startswith("verdict: quiet: figures can be trusted (load 1.52 before")
    assert v.line.endswith(
        "the load average of 1.52 is others' work of the last minute, but our threads got their CPUs"
    )


def test_a_thread_that_waited_for_a_cpu_is_busy():
    v = verdict(QUIET, LoadProbe(0.3, 0.6, 1000.0), cpus=2, threads=2)
    assert v.busy and v.reasons == ("a spinning thread got 60% of a CPU after (under 80%): it waited for one",)
    assert v.line.startswith("verdict: TOO BUSY to trust these figures: a spinning thread got 60%")
    assert v.line.endswith("measure again on a quiet machine")


def test_a_machine_whose_speed_moved_is_busy():
    # 700 / 1000 - 1 = -30%, beyond 25%; 800 / 1000 - 1 = -20% is within it
    assert verdict(QUIET, LoadProbe(0.2, 0.99, 700.0), cpus=2, threads=2).reasons == (
        "the spin ran 30% slower after than before: the machine's speed moved while measuring",
    )
    assert not verdict(QUIET, LoadProbe(0.2, 0.99, 800.0), cpus=2, threads=2).busy
    # 1300 / 1000 - 1 = +30%
    assert verdict(QUIET, LoadProbe(0.2, 0.99, 1300.0), cpus=2, threads=2).reasons == (
        "the spin ran 30% faster after than before: the machine's speed moved while measuring",
    )


def test_the_spins_decide_only_where_no_family_share_was_taken():
    # this machine, quiet, in 10 bench_calibrate runs: spin +64%, +40%, -46% while every benchmark family
    # left our threads at least 98% of a CPU: the short spin's own noise, not other load
    shares = {"the bandwidths": 0.98, "the GEMMs": 0.99}
    for after in (1640.0, 540.0):  # 1640 / 1000 - 1 = +64%, 540 / 1000 - 1 = -46%
        v = verdict(QUIET, LoadProbe(1.4, 0.99, after), cpus=2, threads=2, family_shares=shares)
        assert not v.busy and f"spin rate {after / 1000 - 1:+.0%}" in v.line
    # a family that lost its CPUs makes the spin's move a reason as well
    v = verdict(QUIET, LoadProbe(1.4, 0.99, 1640.0), cpus=2, threads=2, family_shares={"the GEMMs": 0.5})
    assert v.busy and any("64% faster" in r for r in v.reasons)


def test_contradictions_left_after_measuring_again_are_busy_and_listed_last():
    v = verdict(LoadProbe(3.0, 0.99, 1000.0), QUIET, cpus=2, threads=2, contradictions=["a tiny add took 900 us"])
    assert v.busy and len(v.reasons) == 2 and v.reasons[-1] == "a tiny add took 900 us"
    doc = v.to_dict()
    assert doc["busy"] is True and doc["before"] == {
        "load_1min": 3.0,
        "cpu_share": 0.99,
        "spin_per_s": 1000.0,
        "own_load": 0.0,
    }


def test_without_probes_only_contradictions_count():
    assert not verdict(None, None, cpus=2, threads=2).busy
    assert verdict(None, None, cpus=2, threads=2, contradictions=["x"]).busy


def test_a_probe_reads_its_share_from_injected_clocks():
    # wall clock 0 at the start, then 0.01 per reading: checks at 0.01 .. 0.05 (4 spins), 0.06 at the end;
    # CPU clock 0 then 0.06 s for the process on 2 threads: share = 0.06 / (0.06 * 2) = 0.5; 4 spins / 0.06 s
    wall, cpu = iter(i * 0.01 for i in range(100)), iter([0.0, 0.06])
    p = probe_load(2, seconds=0.05, clock=lambda: next(wall), cpu_clock=lambda: next(cpu))
    assert p.cpu_share == pytest.approx(0.5) and p.spin_per_s == pytest.approx(4 / 0.06)


def _calibration(busy: bool):
    from dfx.measure.calibration import Calibration
    from dfx.measure.microbench import Sample

    s = Sample(1e11, 1e-3, 5, "made up")
    probe = LoadProbe(3.0, 0.5, 1000.0) if busy else LoadProbe(0.1, 0.99, 1000.0)
    return Calibration(
        device="cpu",
        device_name="test",
        torch_version="0",
        threads=2,
        date="2026-12-01 15:00 UTC",
        peak_flop_per_s={"float32": s},
        bandwidth={"DRAM": Sample(2e10, 1e-3, 5, "made up")},
        capacities={},
        overhead=Sample(5e-6, 5e-6, 5, "made up"),
        verdict=verdict(probe, QUIET, cpus=2, threads=2),
    )


@pytest.mark.parametrize("busy", [True, False])
def test_calibrate_refuses_a_busy_verdict_unless_allowed(monkeypatch, tmp_path, busy):
    from typer.testing import CliRunner

    import dfx.measure.calibration as calibration
    from dfx.cli import app

    monkeypatch.setattr(calibration, "calibrate", lambda **kw: _calibration(busy))
    refused = CliRunner().invoke(app, ["calibrate", "--out", str(tmp_path / "a.yaml")])
    allowed = CliRunner().invoke(app, ["calibrate", "--out", str(tmp_path / "b.yaml"), "--allow-busy"])
    assert allowed.exit_code == 0 and (tmp_path / "b.yaml").exists()
    if busy:
        assert refused.exit_code != 0 and not (tmp_path / "a.yaml").exists()
        message = refused.output + str(refused.exception or "")  # the dfx entry point prints a DfxError as one line
        assert "calibrate refused: TOO BUSY to trust these figures: load average 3.00" in message
        assert "--allow-busy" in message
    else:
        assert refused.exit_code == 0 and "verdict: quiet" in refused.output


@pytest.mark.parametrize("busy", [True, False])
def test_json_out_is_written_only_when_calibrate_succeeds(monkeypatch, tmp_path, busy):
    # `--json > FILE` leaves an empty FILE when calibrate refuses (the shell opens it first); --json-out
    # writes the document only after the figures are kept, and never over a file that is there
    import json

    from typer.testing import CliRunner

    import dfx.measure.calibration as calibration
    from dfx.cli import app

    monkeypatch.setattr(calibration, "calibrate", lambda **kw: _calibration(busy))
    target = tmp_path / "cal.json"
    result = CliRunner().invoke(app, ["calibrate", "--out", str(tmp_path / "p.yaml"), "--json-out", str(target)])
    if busy:
        assert result.exit_code != 0 and not target.exists()
        return
    assert result.exit_code == 0
    assert json.loads(target.read_text())["schema"] == "dfx.calibration/1"
    again = CliRunner().invoke(app, ["calibrate", "--json-out", str(target)])
    assert again.exit_code != 0 and "already exists" in again.output + str(again.exception or "")


def _quiet_clocks():
    """Readings 1 s apart in which the machine's busy seconds are exactly ours: nobody else ran."""
    from dfx.measure.busy import CpuClocks

    t = iter(range(10_000))
    return lambda: (lambda i: CpuClocks(float(i), 2.0 * i, 2.0 * i))(next(t))


def _fake_benchmarks(monkeypatch, overheads):
    """calibrate with every benchmark replaced by a figure from this test; ``overheads`` yields each op_overhead_s result."""
    import dfx.measure.calibration as calibration
    from dfx.measure.microbench import Sample

    s = Sample(1e11, 1e-3, 5, "fake")
    calls = {"overhead": 0}

    def op_overhead_s(*args):
        calls["overhead"] += 1
        by_kind = next(overheads)
        return Sample(3e-6, 3e-6, 5, "fake"), by_kind

    fakes = {
        "_plan": lambda device: ({}, {"DRAM": 2**26}, "fake cpu", None),
        "op_overhead_s": op_overhead_s,
        "overhead_curves": lambda *a: (((1e-5, 3e-6),), {}, {}),
        "mixed_overheads": lambda *a: {"add": 4e-6},
        "gemm_flop_per_s": lambda *a: s,
        "stream_bytes_per_s": lambda *a, **k: Sample(2e10, 1e-3, 5, "fake"),
        "gemm_table": lambda *a, **k: (),
        "gemm_cold_points": lambda *a: (),
        "gemm_bias_points": lambda *a: (),
        "after_gemm_points": lambda *a: (),
        "after_gemm_chain_points": lambda *a: (),
        "cold_write_points": lambda *a: (),
        "attention_rates": lambda *a: (),
        "conv_points": lambda *a, **k: (),
        "layout_copy_points": lambda *a: (),
        "vector_rates": lambda *a: {"gelu": Sample(2e9, 1e-3, 5, "fake"), "softmax": Sample(3e9, 1e-3, 5, "fake")},
        "reference_flop_per_s": lambda *a: 5e10,
        "probe_load": lambda threads: LoadProbe(0.0, 0.99, 1000.0),
        "read_cpu_clocks": _quiet_clocks(),
    }
    for name, fake in fakes.items():
        monkeypatch.setattr(calibration, name, fake)
    monkeypatch.setattr(calibration.os, "cpu_count", lambda: 64)  # our threads leave CPUs free: no load verdict
    return calls


NORMAL = {"add": 3e-6, "relu": 3e-6, "gelu": 4e-6}
STALLED = {
    "add": 3e-3,
    "relu": 3e-6,
    "gelu": 4e-6,
}  # 3 ms over the median kind (gelu, 4 us) = 750 x, over the 20 x bound


def test_a_stalled_tiny_op_is_measured_again_and_kept_when_it_recovers(monkeypatch):
    from dfx.measure.calibration import calibrate

    calls = _fake_benchmarks(monkeypatch, iter([STALLED, NORMAL]))
    cal = calibrate(budget_s=1.0)
    assert calls["overhead"] == 2 and dict(cal.overhead_by_kind) == NORMAL
    # the only warning: a 1 s budget cannot hold Inductor's compiles, LAYOUT_MIN_S 4 s / their 10% share = 40 s
    assert cal.warnings == (
        "--budget-s 1 cannot hold Inductor's compiles (at least 40 s): layout_copy and compiled_overhead are not "
        "measured, so validate --compiled and channels-last convolutions are predicted without them",
    )
    assert not cal.verdict.busy


def test_a_contradiction_that_survives_is_a_busy_verdict(monkeypatch):
    from dfx.measure.calibration import calibrate

    calls = _fake_benchmarks(monkeypatch, iter([STALLED] * 3))
    cal = calibrate(budget_s=1.0)
    assert calls["overhead"] == 3  # the first try and two more
    assert cal.verdict.busy and "a tiny add took 3,000 us, 750 x the median op kind" in cal.verdict.reasons[0]
    assert cal.verdict.line.startswith("verdict: TOO BUSY to trust these figures: a tiny add took 3,000 us")


def test_a_family_share_is_what_other_processes_left_our_threads():
    from dfx.measure.busy import CpuClocks, left_share

    start = CpuClocks(10.0, 1.0, 500.0)
    # 4 s, 2 CPUs, 2 threads: the machine busy 7.2 s, ours 4.0 s: others 3.2 / 4 = 0.8 CPU; (2 - 0.8) / 2 = 0.6
    assert left_share(start, CpuClocks(14.0, 5.0, 507.2), cpus=2, threads=2) == pytest.approx(0.6)
    # 8 CPUs: (8 - 0.8) / 2 = 3.6, at most 1
    assert left_share(start, CpuClocks(14.0, 5.0, 507.2), cpus=8, threads=2) == 1.0
    assert left_share(CpuClocks(0.0, 0.0, None), CpuClocks(1.0, 1.0, None), cpus=2, threads=2) is None


def test_a_family_left_too_little_cpu_is_a_busy_verdict_that_names_it():
    # 0.6 is under the 0.8 of SHARE_MIN; 0.85 is not
    v = verdict(QUIET, QUIET, cpus=2, threads=2, family_shares={"vector": 0.6, "table": 0.85})
    assert v.busy and v.reasons == (
        "other processes left our threads 60% of a CPU while the vector benchmarks ran (under 80%)",
    )
    q = verdict(QUIET, QUIET, cpus=2, threads=2, family_shares={"vector": 0.9, "table": 0.85})
    assert not q.busy and "at least 85% of a CPU left per thread in every benchmark family" in q.line


def _clocks_busy_during(busy_calls):
    """Readings 1 s apart; between reading ``i`` and ``i + 1`` for ``i`` in ``busy_calls`` another process
    used 1 CPU (on 2 CPUs with 2 threads: (2 - 1) / 2 = 50% left per thread), else nothing."""
    from dfx.measure.busy import CpuClocks

    state = {"i": 0, "own": 0.0, "busy": 0.0}

    def read():
        i = state["i"]
        reading = CpuClocks(float(i), state["own"], state["busy"])
        state["own"] += 1.0
        state["busy"] += 1.0 + (1.0 if i in busy_calls else 0.0)
        state["i"] += 1
        return reading

    return read


@pytest.mark.parametrize("busy_again", [False, True])
def test_a_family_measured_while_another_process_ran_is_measured_again(monkeypatch, busy_again):
    import dfx.measure.calibration as calibration

    calls = _fake_benchmarks(monkeypatch, iter([NORMAL] * 3))
    # readings come in pairs, one pair per family: the first family (per-op overhead) is readings 0 and 1.
    # 15 families with the fake _plan (no cache level: no residency, no cold GEMM; no compiled layout
    # copy at a 1 s budget), and the bandwidths' own watch for other load (busy.watch_load) reads the
    # clocks twice more, so its second try is readings 32 and 33.
    busy = {0, 32} if busy_again else {0}
    monkeypatch.setattr(calibration, "read_cpu_clocks", _clocks_busy_during(busy))
    monkeypatch.setattr(calibration.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(calibration, "probe_load", lambda threads: LoadProbe(0.0, 0.99, 1000.0))
    monkeypatch.setattr(calibration.torch, "get_num_threads", lambda: 2)
    monkeypatch.setattr(calibration.torch, "set_num_threads", lambda n: None)
    cal = calibration.calibrate(budget_s=1.0)
    assert calls["overhead"] == 2  # the first try and one more
    assert cal.verdict.busy is busy_again
    if busy_again:
        assert cal.verdict.reasons == (
            "other processes left our threads 50% of a CPU while the overhead benchmarks ran (under 80%)",
        )


# A 4096 x 4096 fp32 weight (67,108,864 B) read at the fake DRAM's 2e10 B/s takes 3.355 ms; refused over
# 1.5 x that, 5.03 ms over the hot time.
_COLD_OK = (64, 4096, 4096, 9e-3, 10e-3)  # 1 ms exposed
_COLD_STALLED = (64, 4096, 4096, 9e-3, 15e-3)  # 6 ms exposed: more than the weight's whole read


def _with_cold_points(monkeypatch, answers):
    """:func:`_fake_benchmarks` with an L3, so that ``gemm_cold`` runs; it answers ``answers`` in turn."""
    import dfx.measure.calibration as calibration
    from dfx.measure.calibration import CacheLevel

    calls = _fake_benchmarks(monkeypatch, iter([NORMAL] * 3))
    monkeypatch.setattr(
        calibration,
        "_plan",
        lambda device: ({"L3": CacheLevel("L3", 2**25, 1)}, {"L3": 2**23, "DRAM": 2**26}, "fake", None),
    )
    monkeypatch.setattr(calibration, "resident_bytes", lambda *a: calibration.Sample(2**24, 1e-3, 5, "fake"))
    cold = iter(answers)
    calls["cold"] = 0

    def gemm_cold_points(*args):
        calls["cold"] += 1
        return (next(cold),)

    monkeypatch.setattr(calibration, "gemm_cold_points", gemm_cold_points)
    return calls


def test_a_cold_gemm_slower_than_its_weight_read_is_measured_again_and_kept_when_it_recovers(monkeypatch):
    from dfx.measure.calibration import calibrate

    calls = _with_cold_points(monkeypatch, [_COLD_STALLED, _COLD_OK])
    cal = calibrate(budget_s=1.0)
    assert calls["cold"] == 2
    assert [(p.hot_s, p.cold_s) for p in cal.gemm_cold] == [(9e-3, 10e-3)]
    assert [w for w in cal.warnings if "cannot hold Inductor's compiles" not in w] == []  # no cold-GEMM warning


def test_a_cold_gemm_that_stays_too_slow_is_capped_at_its_weight_read_with_a_warning(monkeypatch):
    from dfx.measure.calibration import calibrate

    calls = _with_cold_points(monkeypatch, [_COLD_STALLED] * 3)
    cal = calibrate(budget_s=1.0)
    assert calls["cold"] == 3  # the first try and two more
    (point,) = cal.gemm_cold
    assert point.cold_s == pytest.approx(9e-3 + 67_108_864 / 2e10)  # hot + the whole read: 12.355 ms
    assert any("with its weight from DRAM took 15 ms, 6 ms over its hot time" in w for w in cal.warnings)
