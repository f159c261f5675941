"""report.html's "Predicted vs measured": the scatter and figures of a dfx.validation/1 document.

The document is written by hand on ``layered_doc(2)`` (x -> linear_0 -> relu_0 -> linear_1 ->
relu_1 -> output), its figures worked out below; the scatter's points are parsed out of the inline
SVG. ``dfx report --validation`` adds the section to a saved analysis's report without torch.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from dfx.errors import DfxError
from dfx.viz import render_pictures, render_report

from ._docs import layered_doc
from .test_viz_cli import report as report_cli

US = 1e-6
# name: (category, predicted s, measured s); relu_1 is given no work (predicted 0 s): not counted.
TIMES = {
    "linear_0": ("matmul", 20 * US, 10 * US),
    "relu_0": ("elementwise", 6 * US, 4 * US),
    "linear_1": ("matmul", 30 * US, 50 * US),
    "relu_1": ("elementwise", 0.0, 2 * US),
}
# |p - m| / m over the counted nodes: linear_0 10/10 = 1.0, relu_0 2/4 = 0.5, linear_1 20/50 = 0.4
# median of (0.4, 0.5, 1.0) = 0.5; p90 at rank 0.9 * 2 = 1.8: 0.5 + 0.8 * (1.0 - 0.5) = 0.9
MEDIAN, P90 = 0.5, 0.9
# end to end: predicted 20 + 6 + 30 + 0 = 56 us against a whole-graph run of 64 us: (56 - 64) / 64 = -0.125
E2E_PREDICTED, E2E_MEASURED, E2E_ERROR = 56 * US, 64 * US, -0.125


def validation_doc(times: dict[str, tuple[str, float, float]] = TIMES) -> dict:
    """A hand-written dfx.validation/1 document (no dfx.measure code involved) with the figures above."""
    nodes = [
        {
            "name": name,
            "category": cat,
            "predicted_s": p,
            "measured_s": m,
            "ratio": p / m,
            "abs_error": abs(p - m) / m,
            "roofline_s": p,
            "counted": p > 0,
        }
        for name, (cat, p, m) in times.items()
    ]
    return {
        "schema": "dfx.validation/1",
        "hardware": "host-cpu",
        "prediction": "roofline",
        "model": {"name": "layered", "batch": 1, "seq": None, "dtype": "float32"},
        "run": {"device": "cpu", "threads": 2, "repeat": 10, "warmup": 3},
        "nodes": nodes,
        "median_abs_error": MEDIAN,
        "p90_abs_error": P90,
        "end_to_end": {"predicted_s": E2E_PREDICTED, "measured_s": E2E_MEASURED, "error": E2E_ERROR},
        "roofline": {
            "median_abs_error": MEDIAN,
            "p90_abs_error": P90,
            "end_to_end_predicted_s": E2E_PREDICTED,
            "end_to_end_error": E2E_ERROR,
        },
        # matmul ratios 2.0 and 0.6: median 1.3; elementwise (counted) relu_0 alone: 6 / 4 = 1.5
        "categories": [
            {
                "category": "elementwise",
                "nodes": 1,
                "median_ratio": 1.5,
                "predicted_s": 6 * US,
                "measured_s": 4 * US,
                "why": "dfx too slow: the working set sits in cache",
            },
            {
                "category": "matmul",
                "nodes": 2,
                "median_ratio": 1.3,
                "predicted_s": 50 * US,
                "measured_s": 60 * US,
                "why": "",
            },
        ],
        "uncounted": {"nodes": 1, "measured_s": 2 * US},
    }


def section(html: str) -> str:
    return html.split('id="dfx-validation"', 1)[1].split("<h2>", 1)[0]


def scatter(html: str) -> ET.Element:
    """The section's inline SVG, parsed (HTML needs no namespace declarations; XML does)."""
    svg = re.search(r"<svg.*?</svg>", section(html), re.S).group(0)
    return ET.fromstring(svg.replace("<svg", '<svg xmlns:xlink="http://www.w3.org/1999/xlink"', 1))


def points(svg: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-node"): g for g in svg.iter("g") if g.get("class") == "point"}


def headline(html: str) -> dict[str, str]:
    table = section(html).split('class="headline"', 1)[1].split("</table>", 1)[0]
    return dict(re.findall(r'<td class="l">(.*?)</td><td>(.*?)</td>', table))


@pytest.fixture(scope="module")
def report_html() -> str:
    return render_pictures(layered_doc(2), validation=validation_doc(), graphviz=False).files["report.html"]


def test_one_point_per_counted_node_named_in_its_tooltip(report_html):
    drawn = points(scatter(report_html))
    assert set(drawn) == {"linear_0", "relu_0", "linear_1"}  # relu_1 predicts no work: not a point
    for name, g in drawn.items():
        cat, p, m = TIMES[name]
        assert float(g.get("data-predicted-s")) == p and float(g.get("data-measured-s")) == m
        assert g.find("title").text.startswith(f"{name} ({cat}): predicted ")
    # 20 us predicted against 10 us measured: ratio 2
    assert drawn["linear_0"].find("title").text == "linear_0 (matmul): predicted 20.0 us, measured 10.0 us, ratio 2.00"
    assert "3 of 4 timed" in headline(report_html)["counted nodes (points)"]


def test_headline_figures_by_hand(report_html):
    shown = headline(report_html)
    assert shown["hardware"] == "host-cpu" and shown["prediction"] == "roofline"
    assert shown["median |error| per node"] == "50.0%" and shown["p90 |error| per node"] == "90.0%"
    assert shown["end to end: predicted"] == "56.0 us" and shown["end to end: measured"] == "64.0 us"
    assert shown["end to end: error"] == "-12.5%"
    assert "1 node(s) dfx gives no work" in section(report_html)  # relu_1, 2 us
    assert "mismatch" not in section(report_html)  # every timed name is a node of layered_doc(2)


def test_category_table(report_html):
    rows = re.findall(r"<tr>(.*?)</tr>", section(report_html).split('class="categories"', 1)[1], re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows[1:]]
    assert cells == [
        ["elementwise", "1", "1.50", "dfx too slow: the working set sits in cache"],
        ["matmul", "2", "1.30", "-"],
    ]


def test_figures_of_the_real_writer_by_hand():
    # The same timings through dfx.measure.comparison (pure arithmetic, no torch): the report shows
    # the hand-derived median, p90 and end-to-end error of the module-level constants above.
    from dfx.measure.comparison import compare

    doc = compare(
        {k: p for k, (_, p, _) in TIMES.items()},
        {k: m for k, (_, _, m) in TIMES.items()},
        E2E_MEASURED,
        categories={k: c for k, (c, _, _) in TIMES.items()},
        hardware="host-cpu",
        model={"name": "layered", "batch": 1, "dtype": "float32"},
    ).to_dict()
    html = render_report(layered_doc(2), validation=doc, graphviz=False).files["report.html"]
    shown = headline(html)
    assert (shown["median |error| per node"], shown["p90 |error| per node"]) == ("50.0%", "90.0%")
    assert shown["end to end: error"] == "-12.5%"
    assert set(points(scatter(html))) == {"linear_0", "relu_0", "linear_1"}


def test_a_validation_of_another_model_or_size_is_refused():
    other = validation_doc()
    other["model"] = {**other["model"], "name": "mlp"}
    with pytest.raises(DfxError, match="measured mlp, the analysis is of layered"):
        render_pictures(layered_doc(2), validation=other, graphviz=False)
    analysis = layered_doc(2)
    analysis["model"] = {**analysis["model"], "dtype": "float32"}
    bf16 = validation_doc()
    bf16["model"] = {**bf16["model"], "dtype": "bfloat16"}
    with pytest.raises(
        DfxError, match=r"at dtype bfloat16, the analysis is at dtype float32; run `dfx analyze layered"
    ):
        render_pictures(analysis, validation=bf16, graphviz=False)
    anonymous = validation_doc() | {"model": {}}
    with pytest.raises(DfxError, match="does not say which model"):
        render_pictures(layered_doc(2), validation=anonymous, graphviz=False)
    unnamed = {k: v for k, v in validation_doc().items() if k != "model"}  # no model key: the reader refuses it
    with pytest.raises(DfxError, match="dfx.validation/1: model is missing"):
        render_pictures(layered_doc(2), validation=unnamed, graphviz=False)


def test_names_that_do_not_match_are_noted_not_refused():
    times = {k: v for k, v in TIMES.items() if k != "linear_1"}  # the real run lacks linear_1 ...
    times["contiguous"] = ("memory", 1 * US, 2 * US)  # ... and has a node the analysis lacks
    html = render_pictures(layered_doc(2), validation=validation_doc(times), graphviz=False).files["report.html"]
    note = re.search(r'<p class="note mismatch">(.*?)</p>', section(html)).group(1)
    assert note.startswith("2 nodes did not match")
    assert "1 timed node is not in the analysis (contiguous)" in note
    assert "1 node of the analysis was not timed (linear_1)" in note
    assert set(points(scatter(html))) == {"linear_0", "relu_0", "contiguous"}  # the section is drawn anyway


def test_no_external_url_and_absent_without_a_validation(report_html):
    assert "http://" not in report_html and "https://" not in report_html and "xmlns" not in report_html
    assert not re.search(r"""(src|href)\s*=\s*["']?(?!data:|#)[a-z]+:""", report_html, re.I)
    plain = render_pictures(layered_doc(2), graphviz=False).files["report.html"]
    assert "dfx-validation" not in plain and "Predicted vs measured" not in plain


def test_wrong_schema_is_refused():
    with pytest.raises(DfxError, match="dfx.validation/1"):
        render_pictures(layered_doc(2), validation={"schema": "dfx.simulation/1"}, graphviz=False)
    broken = validation_doc()
    del broken["end_to_end"]
    with pytest.raises(DfxError, match="end_to_end"):
        render_pictures(layered_doc(2), validation=broken, graphviz=False)


def test_report_cli_adds_the_section_without_torch(tmp_path):
    (tmp_path / "analysis.json").write_text(json.dumps(layered_doc(2)))
    (tmp_path / "validation.json").write_text(json.dumps(validation_doc()))
    out = tmp_path / "pics"
    result = report_cli(
        str(tmp_path / "analysis.json"), "--validation", str(tmp_path / "validation.json"), "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert "TORCH_IMPORTED=False" in result.stderr
    assert set(points(scatter((out / "report.html").read_text()))) == {"linear_0", "relu_0", "linear_1"}


def test_report_cli_refuses_another_schema_in_one_line(tmp_path):
    (tmp_path / "analysis.json").write_text(json.dumps(layered_doc(2)))
    bad = tmp_path / "val.json"
    bad.write_text(json.dumps(validation_doc() | {"schema": "dfx.validation/0"}))
    out = tmp_path / "pics"
    result = report_cli(str(tmp_path / "analysis.json"), "--validation", str(bad), "--out", str(out))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("TORCH_IMPORTED")]
    assert len(lines) == 1 and str(bad) in lines[0] and "not dfx.validation/1" in lines[0], result.stderr
    assert "Traceback" not in result.stderr and not out.exists()  # refused before anything is written


def test_the_report_with_a_scatter_runs_in_a_browser(tmp_path, report_html):
    from .test_viz_browser import CHROMIUM, _chromium

    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (make system-deps installs it)")
    page = tmp_path / "report.html"
    page.write_text(report_html, encoding="utf-8")
    result = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'data-dfx-ready="1"' in result.stdout and result.stdout.count('class="point"') == 3
    console_errors = [
        line for line in result.stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    assert not console_errors, console_errors


def test_the_machines_drift_since_calibration_is_noted():
    doc = validation_doc()
    doc["run"] = {**doc.get("run", {}), "drift": -0.3, "overhead_drift": 0.05}  # 30% slower GEMMs; tiny ops within 10%
    html = render_pictures(layered_doc(2), validation=doc, graphviz=False).files["report.html"]
    assert "a reference GEMM runs 30% slower than at calibration" in section(html)
    assert "tiny ops take" not in section(html)
