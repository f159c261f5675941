"""examples/lab.ipynb runs top to bottom (issue 18), as a learner runs it, on the built-in default.

The Colab install cell (tag ``colab-install``) is skipped: here dfx is already installed. The
notebook runs in a temporary folder, so nothing it might write lands in the repository.
"""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the dev extra's nbformat, nbclient and ipykernel run the notebook")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "lab.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert any("colab-install" in c.metadata.get("tags", []) for c in nb.cells)  # the install cell is there
    nb.cells = [c for c in nb.cells if "colab-install" not in c.metadata.get("tags", [])]
    cwd = tmp_path_factory.mktemp("lab")
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return nb, cwd


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def test_runs_without_error_and_writes_nothing(executed):
    nb, cwd = executed
    assert not [o for o in _outputs(nb) if o.output_type == "error"]
    assert list(cwd.iterdir()) == []


def test_every_step_shows_its_output(executed):
    nb, _ = executed
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    for expected in (
        "H100 ridge vs HBM",
        "move from memory- to compute-bound",
        "critical path",
        "firing steps: (('a',), ('b', 'c', 'd'), ('e',), ('f',))",
        "makespan on 2 processors: 7.0 s",
        "padded 896 tokens, 366 of them padding",
    ):
        assert expected in text, expected
    pictures = [o for o in _outputs(nb) if "image/png" in o.get("data", {})]
    assert len(pictures) >= 2  # the DAG (where Graphviz is installed) and the roofline, inline
    html = [o["data"]["text/html"] for o in _outputs(nb) if "text/html" in o.get("data", {})]
    assert html and "max-width: 100%" in html[0]  # the report, its DAG scaled to the cell


_CELL_PX = 900  # a notebook cell's width
_PROBE = """<script>
window.addEventListener("load", function () {
  var cell = document.getElementById("cell"), svg = document.querySelector("#dfx-dag svg");
  document.body.setAttribute("data-probe", JSON.stringify({
    cell: cell.getBoundingClientRect().width, dag: svg ? svg.getBoundingClientRect().width : -1,
    overflow: cell.scrollWidth - cell.clientWidth, ready: document.body.getAttribute("data-dfx-ready")}));
});
</script>"""


def test_the_report_in_a_cell_is_scaled_to_it(executed, tmp_path):
    """The notebook's rendered report, in a cell-wide box in headless Chromium: the DAG fits the cell."""
    import json
    import re
    import shutil
    import subprocess

    chromium = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if chromium is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    nb, _ = executed
    report = next(
        o["data"]["text/html"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/html" in o.get("data", {})
    )
    inner = report.split("<body>", 1)[1].rsplit("</body>", 1)[0] if "<body>" in report else report
    style = re.search(r"<style>.*?</style>", report, re.S).group(0)
    page = tmp_path / "cell.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>{style}</head><body>"
        f"<div id='cell' style='width:{_CELL_PX}px'>{inner}</div>{_PROBE}</body></html>",
        encoding="utf-8",
    )
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,900",
        "--virtual-time-budget=3000",
        "--dump-dom",
    ]
    result = subprocess.run([chromium, *flags, page.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'data-probe="([^"]*)"', result.stdout)
    assert match, "the probe did not run"
    probe = json.loads(match.group(1).replace("&quot;", '"'))
    assert probe["ready"] == "1"  # the report's own script ran inside the cell
    assert 0 < probe["dag"] <= probe["cell"] == _CELL_PX
    assert probe["overflow"] <= 0
