"""report.html: self-contained and offline, every node hoverable, every node in the table."""

from __future__ import annotations

import json
import re


def test_no_external_url(mlp_pictures):
    html = mlp_pictures.files["report.html"]
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(?!data:|#)[a-z]+:""", html, re.I)
    assert "<link" not in html and "@import" not in html and "//cdn" not in html


def test_pictures_are_inlined(mlp_pictures):
    html = mlp_pictures.files["report.html"]
    assert "<svg" in html and 'src="data:image/png;base64,' in html


def test_every_node_has_facts_and_a_table_row(mlp_doc, mlp_pictures):
    html = mlp_pictures.files["report.html"]
    facts = json.loads(re.search(r'<script type="application/json" id="dfx-facts">(.*?)</script>', html, re.S).group(1))
    names = [n["name"] for n in mlp_doc["nodes"]]
    assert set(facts) == set(names)
    body = html.split('id="dfx-nodes"', 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr>") == 1 + len(names)  # header and one row per node


def test_summary_has_each_profile_and_its_path(mlp_doc, mlp_pictures):
    html = mlp_pictures.files["report.html"]
    for hw_id, hw in mlp_doc["hardware"].items():
        assert f"critical path on {hw_id}" in html
        assert " \u2192 ".join(hw["critical_path"]["nodes"]) in html


def test_an_analysis_displays_as_its_report_in_jupyter(mlp_analysis):
    html = mlp_analysis._repr_html_()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and 'id="dfx-facts"' in html
    # the report's styles are scoped to it, so a notebook around it keeps its own
    assert "\nbody {" not in html


def test_the_program_cell_says_its_cores_are_one_chips_when_split():
    # A Groq program of llama-2-70b decode: 3610 kernels (one per operator) compiled for one chip's
    # 20 superlanes, while the model runs on 599 chips; the cell read "3610 kernels on 20 cores"
    from dfx.schema.analysis import ProgramRecord
    from dfx.viz.html import _program_cell

    program = ProgramRecord.from_dict(
        {
            "target": "dataflow",
            "commitment": "static",
            "schedule_policy": "static",
            "cores": 20,
            "kernel_count": 3610,
            "tile_count": 3610,
            "flops": 1,
            "offchip_bytes": 0,
            "core_utilization": 1.0,
            "critical_path_kernels": [],
            "stages": [],
            "kernels": [],
        },
        "dfx.analysis/1",
    )
    assert _program_cell(program, 599) == "3610 kernels on 20 cores of 1 chip, static, 100% busy"
    assert _program_cell(program, 1) == _program_cell(program) == "3610 kernels on 20 cores, static, 100% busy"
