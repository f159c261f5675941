"""Live bytes, Chrome trace, Gantt chart, jitter draws, the analysis adapter and the export layout."""

import json
import math
import random
import statistics

import networkx as nx
import pytest

from dfx.sim import (
    SimulationError,
    chrome_trace,
    dag_from_analysis,
    from_networkx,
    lognormal_params,
    render_gantt,
    simulate,
)


def _graph(nodes, edges):
    """nodes: name -> (duration_s, output_bytes[, aliases_inputs])."""
    g = nx.DiGraph()
    for name, spec in nodes.items():
        g.add_node(name, duration_s=spec[0], output_bytes=spec[1], aliases_inputs=len(spec) > 2 and spec[2])
    g.add_edges_from(edges)
    return g


def test_live_bytes_chain():
    # a -> b -> c, 1 s each on 1 PE, outputs 10, 20, 30 B. a's output lives [0, 2) (b ends at 2),
    # b's [1, 3), c's (a graph output) [2, 3). Live: 10 on [0,1), 30 on [1,2), 50 on [2,3).
    r = simulate(_graph({"a": (1.0, 10), "b": (1.0, 20), "c": (1.0, 30)}, [("a", "b"), ("b", "c")]), policy="dynamic")
    mem = r.dynamic.memory
    assert mem.time_s == (0.0, 1.0, 2.0, 3.0)
    assert mem.live_bytes == (10.0, 30.0, 50.0, 0.0)
    assert (mem.peak_bytes, mem.peak_time_s) == (50.0, 2.0)
    assert mem.capacity_bytes is None and mem.fits is None


def test_live_bytes_fork_on_two_pes():
    # s(1 s, 100 B) -> a(1 s, 10 B), b(1 s, 10 B) on 2 PEs: s[0,1], a and b [1,2].
    # s lives [0, 2), a and b (graph outputs) [1, 2): peak 100 + 10 + 10 = 120 at t = 1.
    r = simulate(_graph({"s": (1.0, 100), "a": (1.0, 10), "b": (1.0, 10)}, [("s", "a"), ("s", "b")]), pes=2)
    assert (r.static.memory.peak_bytes, r.static.memory.peak_time_s) == (120.0, 1.0)
    assert (r.dynamic.memory.peak_bytes, r.dynamic.memory.peak_time_s) == (120.0, 1.0)


def test_a_view_keeps_its_input_alive_and_capacity():
    # x(1 s, 40 B) -> v (a view: 0 s, 0 B of its own) -> y(2 s, 8 B), one PE: x[0,1], v[1,1], y[1,3].
    # v aliases x, so x lives until y (v's consumer) ends at 3, not until v ends at 1.
    # Live: 40 on [0,1), 40 + 8 = 48 on [1,3). Against 45 B: over capacity for 3 - 1 = 2 s.
    g = _graph({"x": (1.0, 40), "v": (0.0, 0, True), "y": (2.0, 8)}, [("x", "v"), ("v", "y")])
    mem = simulate(g, policy="dynamic", capacity_bytes=45).dynamic.memory
    assert mem.live_bytes == (40.0, 48.0, 0.0)
    assert mem.peak_bytes == 48.0 and mem.fits is False and mem.over_capacity_s == 2.0
    # Without the alias x would die when v ends: 40 on [0,1), then only y's 8.
    g.nodes["v"]["aliases_inputs"] = False
    assert simulate(g, policy="dynamic").dynamic.memory.live_bytes == (40.0, 8.0, 0.0)


def test_output_bytes_default_to_the_largest_out_edge():
    g = nx.DiGraph()
    g.add_nodes_from(["s", "a", "b"], duration_s=1.0)
    g.add_edge("s", "a", bytes=64)
    g.add_edge("s", "b", bytes=16)
    assert from_networkx(g).output_bytes == (64, 0, 0)


def test_chrome_trace_is_valid_json_with_one_event_per_node():
    dag = ({"s": 1.0, "a": 4.0, "b": 3.0, "j": 1.0}, [("s", "a"), ("s", "b"), ("a", "j"), ("b", "j")])
    r = simulate(dag, pes=2)
    trace = json.loads(json.dumps(chrome_trace(r)))
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    for pid in (1, 2):  # static, dynamic
        events = [e for e in complete if e["pid"] == pid]
        assert sorted(e["name"] for e in events) == ["a", "b", "j", "s"]
    # dynamic: s[0,1]@0, a[1,5]@0, b[1,4]@1, j[5,6]@0 -> microseconds
    a = next(e for e in complete if e["pid"] == 2 and e["name"] == "a")
    assert (a["ts"], a["dur"], a["tid"]) == (1e6, 4e6, 0)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {(1, 0): "PE 0", (1, 1): "PE 1", (2, 0): "PE 0", (2, 1): "PE 1"}


def test_gantt_png_and_svg():
    pytest.importorskip("matplotlib")
    r = simulate(({"a": 1.0, "b": 2.0}, [("a", "b")]), pes=2)
    assert render_gantt(r, "png").startswith(b"\x89PNG")
    assert b"<svg" in render_gantt(r, "svg")[:500]
    with pytest.raises(SimulationError, match="png or svg"):
        render_gantt(r, "jpg")


def test_lognormal_factor_has_mean_one_and_the_asked_cv():
    # sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2: E = exp(mu + sigma^2/2) = 1, CV = sqrt(exp(sigma^2) - 1).
    mu, sigma = lognormal_params(0.5)
    assert mu == pytest.approx(-math.log(1.25) / 2) and sigma == pytest.approx(math.sqrt(math.log(1.25)))
    rng = random.Random(0)
    xs = [rng.lognormvariate(mu, sigma) for _ in range(40_000)]
    assert statistics.fmean(xs) == pytest.approx(1.0, abs=0.01)
    assert statistics.pstdev(xs) == pytest.approx(0.5, abs=0.02)


def _doc():
    """A hand-made analysis document: x, w -> mm -> t (a view) -> out."""
    f32 = "float32"
    from dfx.schema.analysis import example_analysis, example_hardware

    doc = example_analysis(
        "tiny",
        [
            {
                "name": "x",
                "op": "placeholder",
                "category": "none",
                "bytes_written": 0,
                "outputs": [{"shape": [2, 4], "dtype": f32}],
                "inputs": [],
            },
            {
                "name": "w",
                "op": "placeholder",
                "category": "none",
                "bytes_written": 0,
                "outputs": [{"shape": [4, 4], "dtype": f32}],
                "inputs": [],
            },
            {
                "name": "mm",
                "op": "call_function",
                "category": "matmul",
                "bytes_written": 32,
                "outputs": [{"shape": [2, 4], "dtype": f32}],
                "inputs": ["x", "w"],
            },
            {
                "name": "t",
                "op": "call_function",
                "category": "view",
                "bytes_written": 0,
                "outputs": [{"shape": [4, 2], "dtype": f32}],
                "inputs": ["mm"],
            },
            {"name": "out", "op": "output", "category": "none", "bytes_written": 0, "outputs": [], "inputs": ["t"]},
        ],
        hardware={
            "my-chip": example_hardware(
                {"x": {"time_s": 0.0}, "w": {"time_s": 0.0}, "mm": {"time_s": 2e-6}, "t": {"time_s": 0.0}}
            )
        },
    )
    doc["edges"] = [
        {"src": "x", "dst": "mm", "bytes": 32},
        {"src": "w", "dst": "mm", "bytes": 64},
        {"src": "mm", "dst": "t", "bytes": 32},
        {"src": "t", "dst": "out", "bytes": 32},
    ]
    return doc


def test_dag_from_analysis():
    g = dag_from_analysis(_doc(), "my-chip")
    assert g.nodes["mm"]["duration_s"] == 2e-6
    # outputs: x 2*4*4 = 32 B, w 4*4*4 = 64 B, mm 32 B; the view and the output node own none.
    assert {n: g.nodes[n]["output_bytes"] for n in g} == {"x": 32, "w": 64, "mm": 32, "t": 0, "out": 0}
    assert {n for n in g if g.nodes[n]["aliases_inputs"]} == {"t", "out"}
    assert g.graph["untimed"] == ["out"] and g.graph["model"] == "tiny"
    assert g.edges["w", "mm"]["bytes"] == 64
    with pytest.raises(SimulationError, match="no timings for 'other'"):
        dag_from_analysis(_doc(), "other")
    with pytest.raises(SimulationError, match="schema"):
        dag_from_analysis({"schema": "dfx.graph/1"}, "my-chip")


def test_simulate_an_analysis_document():
    # One profile in the document, so hw may be omitted; it is no shipped profile: no capacity.
    r = simulate(_doc(), pes=2)
    d = r.to_dict()
    assert (d["hardware"], d["model"], d["dag"]["untimed"]) == ("my-chip", "tiny", ["out"])
    assert d["policies"]["dynamic"]["makespan_s"]["mean"] == 2e-6
    # x and w live from 0 until out ends at 2e-6 (through the view t); mm's 32 B from 0 too:
    # 32 + 64 + 32 = 128 B.
    assert d["policies"]["dynamic"]["memory"]["peak_bytes"] == 128.0
    assert d["policies"]["dynamic"]["memory"]["capacity_bytes"] is None


def test_capacity_comes_from_the_profile():
    from dfx.hardware import load_profile

    level = load_profile("ibm-spyre").on_chip_level()
    r = simulate(({"a": 1.0}, []), hw="ibm-spyre")
    assert r.hardware == "ibm-spyre"
    assert r.dynamic.memory.capacity_bytes == level.capacity_bytes


def test_export_layout():
    d = simulate(({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("a", "c")]), pes=2, runs=3).to_dict()
    assert d["schema"] == "dfx.simulation/1" and d["pes"] == 2
    assert d["lower_bounds"] == {"critical_path_s": 4.0, "work_over_pes_s": 3.0, "work_s": 6.0}
    for name in ("static", "dynamic"):
        pol = d["policies"][name]
        assert set(pol["makespan_s"]) >= {"mean", "p50", "p95"}
        # a[0,1]@0, c[1,4]@0, b[1,3]@1: PE 0 busy 4 of 4, PE 1 busy 2 of 4.
        assert pol["makespan_s"]["mean"] == 4.0 and pol["utilization"] == [1.0, 0.5]
        assert pol["makespans_s"] == [4.0, 4.0, 4.0]
        assert [s["name"] for s in pol["schedule"]] == ["a", "b", "c"]
    assert d["comparison"]["static_over_dynamic"] == 1.0
    json.dumps(d)  # plain JSON types only


def test_a_cycle_exact_machine_has_no_run_time_variation():
    # The Groq TSP runs its compile-time schedule cycle by cycle: jitter asked for is not applied,
    # so every run's makespan is the predicted one (1 + 2 + 1 = 4 s on one PE); a GPU profile varies.
    from dfx.sim import simulate

    dag = ({"a": 1.0, "b": 2.0, "c": 1.0}, [("a", "b"), ("b", "c")])
    groq = simulate(dag, hw="groq-lpu", jitter_cv=0.3, runs=5, seed=1)
    assert groq.to_dict()["jitter_cv"] == 0.0 and groq.to_dict()["jitter_cv_requested"] == 0.3
    assert set(groq.to_dict()["policies"]["dynamic"]["makespans_s"]) == {4.0}
    gpu = simulate(dag, hw="nvidia-h100-sxm", jitter_cv=0.3, runs=5, seed=1)
    assert len(set(gpu.to_dict()["policies"]["dynamic"]["makespans_s"])) > 1
