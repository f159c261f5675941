"""The compiled program as simulator tasks: kernels split into tiles or core shares, one PE per core."""

import json

import pytest

from dfx.sim import simulate
from dfx.sim.program import dag_from_program, task_count


def _doc(kernels, cores=32):
    from dfx.schema.analysis import example_analysis, example_hardware, example_program

    nodes = [{"name": n, "outputs": [{"shape": [4, 4], "dtype": "float32"}]} for k in kernels for n in k["nodes"]]
    program = example_program(kernels, cores=cores)
    return example_analysis("hand", nodes, hardware={"hw": example_hardware(program=program)})


def _kernel(name, cores, time_s, deps=(), tiles=1):
    return {
        "name": name,
        "kind": "gemm",
        "nodes": [name],
        "cores": cores,
        "tiles": tiles,
        "time_s": time_s,
        "deps": list(deps),
    }


def test_a_kernel_on_every_core_becomes_one_task_per_core_behind_a_join():
    # a (32 cores, 2 s) -> b (32 cores, 1 s) on 4 PEs: 32 tasks each (<= 8 per PE), each taking the
    # kernel's own time (32 * t / 32); b's tasks wait for a's join.
    g = dag_from_program(_doc([_kernel("a", 32, 2.0), _kernel("b", 32, 1.0, deps=("a",))]), "hw", pes=4)
    a_tasks = [n for n in g if n.startswith("a#")]
    assert len(a_tasks) == 32 and all(g.nodes[n]["duration_s"] == 2.0 for n in a_tasks)
    assert g.nodes["a:done"]["duration_s"] == 0.0
    assert all(list(g.predecessors(n)) == ["a:done"] for n in g if n.startswith("b#"))
    # 32 tasks of 2 s on 4 PEs: 8 rounds = 16 s, then 8 rounds of 1 s: 24 s on either policy
    r = simulate(_doc([_kernel("a", 32, 2.0), _kernel("b", 32, 1.0, deps=("a",))]), hw="hw", pes=4)
    assert r.static.makespan.mean_s == pytest.approx(24.0) and r.dynamic.makespan.mean_s == pytest.approx(24.0)
    assert r.to_dict()["dag"]["tasks_from"] == "program" and r.to_dict()["dag"]["kernels"] == 2


def test_task_counts_and_durations_keep_the_core_seconds():
    # 132 cores x 1 s = 132 core-seconds; on 4 PEs at most 8 * 4 = 32 tasks of 132 / 32 = 4.125 s
    g = dag_from_program(_doc([_kernel("k", 132, 1.0, tiles=256)], cores=132), "hw", pes=4)
    tasks = [n for n in g if n.startswith("k#")]
    assert len(tasks) == 32 and g.nodes[tasks[0]]["duration_s"] == pytest.approx(4.125)
    assert task_count(4, 4, 4) == 4  # a 4-tile kernel on 4 SMs: its 4 tiles
    assert task_count(0, 1, 4) == 1  # a collective: one task


@pytest.fixture(scope="module")
def spyre_gpt2():
    pytest.importorskip("torch")
    from dfx.analysis import analyze

    return analyze("gpt2-block", hardware=["ibm-spyre"], execution_model="compiled").to_dict()


def test_spyre_divides_each_kernel_over_its_pes(spyre_gpt2):
    r = simulate(spyre_gpt2, hw="ibm-spyre", pes=4).to_dict()
    for policy in r["policies"].values():
        busy = [u for u in policy["utilization"] if u > 0]
        assert len(busy) == 4  # every PE works, not PE 0 alone


def test_without_jitter_static_is_never_slower(spyre_gpt2):
    # The compiler knows the durations: its plan is at least as good as the run-time ready list.
    for pes in (1, 3, 4, 5):
        r = simulate(spyre_gpt2, hw="ibm-spyre", pes=pes)
        assert r.static.makespan.mean_s <= r.dynamic.makespan.mean_s * (1 + 1e-12), pes


def test_under_jitter_the_fixed_work_division_waits_for_its_slowest_pe(spyre_gpt2):
    # Each kernel's 32 core shares on 4 PEs: static fixes 8 per PE, so every join waits for the PE
    # whose 8 draws summed highest; the ready list hands the next share to whichever PE frees first.
    r = simulate(spyre_gpt2, hw="ibm-spyre", pes=4, jitter_cv=0.3, runs=30, seed=1)
    assert r.static.makespan.mean_s > r.dynamic.makespan.mean_s
    assert r.to_dict()["comparison"]["static_slower_runs"] > r.to_dict()["comparison"]["dynamic_slower_runs"]


def test_the_cli_simulates_the_compiled_program():
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from dfx.cli import app

    result = CliRunner().invoke(
        app, ["simulate", "gpt2-block", "--hw", "ibm-spyre", "--pes", "4", "--seq", "64", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["dag"]["tasks_from"] == "program"
    assert sum(u > 0 for u in doc["policies"]["dynamic"]["utilization"]) > 1


def test_an_analysis_record_is_simulated_as_its_document():
    # simulate() tells its inputs apart by type: the record of an analysis runs its compiled program
    # exactly as the document does (a record once fell through to the plain-DAG path)
    from dfx.schema.analysis import read_analysis

    doc = _doc([_kernel("a", 32, 2.0), _kernel("b", 32, 1.0, deps=("a",))])
    by_doc, by_record = simulate(doc, hw="hw", pes=4), simulate(read_analysis(doc), hw="hw", pes=4)
    assert by_record.to_dict() == by_doc.to_dict()
    assert by_record.to_dict()["dag"]["tasks_from"] == "program"  # 24 s, as above
    assert by_record.static.makespan.mean_s == pytest.approx(24.0)
