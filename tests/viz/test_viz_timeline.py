"""report.html's Timeline: a Gantt chart per policy read from a dfx.simulation/1 document.

The bars are parsed out of the inline SVG: one per scheduled node per policy, where the schedule
puts it, filled like the DAG. ``dfx simulate --out`` writes the report with it; ``dfx report
--simulation`` adds it to a saved analysis's report without torch.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from dfx.errors import DfxError
from dfx.schema.simulation import example_simulation
from dfx.viz import render_pictures, render_report
from dfx.viz.facts import BOUND_FILL

from ._docs import layered_doc
from .test_viz_cli import report as report_cli

HW = "nvidia-h100-sxm"


def charts(html: str) -> dict[str, ET.Element]:
    """Policy -> its Gantt chart, parsed (inline SVG in HTML has no namespace)."""
    return {
        svg.get("data-policy"): svg
        for svg in map(ET.fromstring, re.findall(r'<svg class="gantt".*?</svg>', html, re.S))
    }


def bars(svg: ET.Element) -> list[ET.Element]:
    return [r for r in svg.iter("rect") if r.get("class") == "bar"]


@pytest.fixture(scope="module")
def mlp_sim(mlp_doc) -> dict:
    """The MLP simulated on 2 PEs of the H100 profile, both policies, jittered."""
    from dfx.sim import simulate

    return simulate(copy.deepcopy(mlp_doc), hw=HW, pes=2, jitter_cv=0.2, runs=3, seed=1).to_dict()


@pytest.fixture(scope="module")
def mlp_report(mlp_doc, mlp_sim) -> str:
    return render_pictures(copy.deepcopy(mlp_doc), simulation=mlp_sim).files["report.html"]


def _sim_doc(schedule: dict[str, list[tuple[str, int, float, float]]], pes: int = 2) -> dict:
    """A hand-written dfx.simulation/1 document with the given run-0 schedules (no dfx.sim involved)."""
    return example_simulation(
        schedule,
        pes=pes,
        hardware="toy",
        model="layered",
        lower_bounds={"critical_path_s": 110e-9, "work_over_pes_s": 55e-9, "work_s": 110e-9},
    )


def test_one_bar_per_scheduled_node_per_policy(mlp_sim, mlp_report):
    drawn = charts(mlp_report)
    assert set(drawn) == set(mlp_sim["policies"]) == {"static", "dynamic"}
    for policy, svg in drawn.items():
        schedule = mlp_sim["policies"][policy]["schedule"]
        got = [
            (b.get("data-node"), int(b.get("data-pe")), float(b.get("data-start-s")), float(b.get("data-end-s")))
            for b in bars(svg)
        ]
        assert got == [(r["name"], r["pe"], r["start_s"], r["end_s"]) for r in schedule]
        assert {b.get("y") for b in bars(svg) if b.get("data-pe") == "1"} <= {"26.0"}  # row 1: 6 + 18 + 2


def test_each_bar_has_a_tooltip_and_the_dag_colour(mlp_doc, mlp_report):
    per_node = mlp_doc["hardware"][HW]["nodes"]
    # a compiled program's bar is a tile of a kernel (kernel#i, kernel:done): the DAG colours that
    # kernel's nodes by the kernel's bound
    kernels = {k["name"]: k["nodes"] for k in (mlp_doc["hardware"][HW].get("program") or {}).get("kernels", ())}
    for svg in charts(mlp_report).values():
        for bar in bars(svg):
            name, tip = bar.get("data-node"), bar.find("title").text
            assert tip.startswith(f"{name} \u00b7 PE {bar.get('data-pe')} \u00b7 start ") and " \u00b7 end " in tip
            node = name if name in per_node else kernels[name.split("#")[0].removesuffix(":done")][0]
            assert bar.get("fill") == BOUND_FILL[per_node[node]["bound"]]  # as the DAG and its legend colour it
    assert f"Bars coloured by bound on {HW}" in mlp_report


def test_makespans_beside_the_bounds_and_utilization(mlp_sim, mlp_report):
    section = mlp_report.split('id="dfx-timeline"', 1)[1].split("<h2>", 1)[0]
    lb = mlp_sim["lower_bounds"]
    assert "Lower bounds: critical path" in section and "Utilization per PE" in section
    bound = max(lb["critical_path_s"], lb["work_over_pes_s"])
    for policy in mlp_sim["policies"].values():
        assert f"{policy['makespan_s']['mean'] / bound:.3f}" in section  # the ÷ bound column
        assert f"{policy['mean_utilization']:.1%}" in section
    assert "static / dynamic mean makespan" in section


def test_bars_placed_by_hand():
    # layered_doc(1): x (0 s) -> linear_0 (100 ns) -> relu_0 (10 ns) -> output (0 s); PE 1 runs nothing.
    # Plot width 960 - 56 - 24 = 880 px over a 110 ns span: 8 px/ns from x = 56.
    sim = _sim_doc(
        {
            "dynamic": [
                ("x", 0, 0.0, 0.0),
                ("linear_0", 0, 0.0, 100e-9),
                ("relu_0", 0, 100e-9, 110e-9),
                ("output", 0, 110e-9, 110e-9),
            ]
        }
    )
    html = render_pictures(layered_doc(1), simulation=sim, graphviz=False).files["report.html"]
    placed = {
        b.get("data-node"): (float(b.get("x")), float(b.get("width")), b.get("fill"))
        for b in bars(charts(html)["dynamic"])
    }
    assert placed["linear_0"] == (56.0, 800.0, BOUND_FILL["compute"])  # 100 ns * 8 px/ns
    assert placed["relu_0"] == (856.0, 80.0, BOUND_FILL["memory"])
    assert placed["x"] == (56.0, 1.0, BOUND_FILL["none"])  # a zero-time node: a 1 px hairline, still hoverable
    ticks = [t.text for t in charts(html)["dynamic"].iter("text") if t.text and t.text[0].isdigit()]
    assert ticks == ["0", "20.0 ns", "40.0 ns", "60.0 ns", "80.0 ns", "100.0 ns"]


def test_no_external_url_with_a_timeline(mlp_report):
    assert "http://" not in mlp_report and "https://" not in mlp_report
    assert not re.search(r"""(src|href)\s*=\s*["']?(?!data:|#)[a-z]+:""", mlp_report, re.I)
    assert (
        "<link" not in mlp_report
        and "@import" not in mlp_report
        and "xmlns" not in mlp_report.split('id="dfx-timeline"')[1]
    )


def test_without_a_simulation_the_section_is_absent(mlp_pictures):
    html = mlp_pictures.files["report.html"]
    assert "Timeline" not in html and 'class="gantt"' not in html and "dfx-timeline" not in html


def test_render_report_is_the_report_alone(mlp_doc, mlp_sim, mlp_report):
    pictures = render_report(copy.deepcopy(mlp_doc), simulation=mlp_sim)
    assert list(pictures.files) == ["report.html"]
    assert charts(pictures.files["report.html"]).keys() == charts(mlp_report).keys()


def test_a_simulation_of_another_graph_or_schema_is_refused():
    sim = _sim_doc({"static": [("x", 0, 0.0, 0.0), ("attn", 1, 0.0, 1e-9)]})
    with pytest.raises(DfxError, match="attn"):
        render_pictures(layered_doc(1), simulation=sim, graphviz=False)
    with pytest.raises(DfxError, match="dfx.simulation/1"):
        render_pictures(layered_doc(1), simulation={"schema": "dfx.analysis/1"}, graphviz=False)


def test_report_cli_adds_the_timeline_without_torch(tmp_path, mlp_doc, mlp_sim):
    (tmp_path / "analysis.json").write_text(json.dumps(mlp_doc))
    (tmp_path / "simulation.json").write_text(json.dumps(mlp_sim))
    out = tmp_path / "pics"
    result = report_cli(
        str(tmp_path / "analysis.json"), "--simulation", str(tmp_path / "simulation.json"), "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert "TORCH_IMPORTED=False" in result.stderr
    assert set(charts((out / "report.html").read_text())) == {"static", "dynamic"}


def _simulate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", "simulate", *args], capture_output=True, text=True, timeout=300
    )


def test_simulate_out_writes_the_report_with_its_timeline(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "sim"
    first = _simulate("mlp", "--hw", "h100", "--pes", "2", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert {"simulation.json", "trace.json", "gantt.png", "analysis.json", "report.html"} <= {
        p.name for p in out.iterdir()
    }
    sim = json.loads((out / "simulation.json").read_text())
    analysis = json.loads((out / "analysis.json").read_text())
    assert analysis["schema"] == "dfx.analysis/1" and HW in analysis["hardware"]
    html = (out / "report.html").read_text()
    assert "<h2>Dataflow graph</h2>" in html and 'src="data:image/png;base64,' in html  # the DAG and the roofline
    drawn = charts(html)
    assert set(drawn) == {"static", "dynamic"}
    for policy, svg in drawn.items():
        assert len(bars(svg)) == len(sim["policies"][policy]["schedule"]) == sim["dag"]["nodes"]
    (out / "report.html").write_text("mine")
    refused = _simulate("mlp", "--hw", "h100", "--out", str(out))
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert (out / "report.html").read_text() == "mine"


def test_simulate_a_saved_analysis_into_its_own_folder(tmp_path, mlp_doc):
    # analysis.json is MODEL itself: it is not a target, so no --force is needed and it is left as it is.
    saved = tmp_path / "analysis.json"
    saved.write_text(json.dumps(mlp_doc))
    before = saved.read_bytes()
    result = _simulate(str(saved), "--hw", "h100", "--pes", "2", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert saved.read_bytes() == before
    assert set(charts((tmp_path / "report.html").read_text())) == {"static", "dynamic"}


def test_the_report_with_a_timeline_runs_in_a_browser(tmp_path, mlp_report):
    from .test_viz_browser import CHROMIUM, _chromium

    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (make system-deps installs it)")
    page = tmp_path / "report.html"
    page.write_text(mlp_report, encoding="utf-8")
    result = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'data-dfx-ready="1"' in result.stdout and 'class="gantt"' in result.stdout
    console_errors = [
        line for line in result.stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    assert not console_errors, console_errors
