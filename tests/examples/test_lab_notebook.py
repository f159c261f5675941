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
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
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
    for expected in ("H100 ridge vs HBM", "move from memory- to compute-bound", "critical path",
                     "firing steps: (('a',), ('b', 'c', 'd'), ('e',), ('f',))",
                     "makespan on 2 processors: 7.0 s", "padded 896 tokens, 366 of them padding"):
        assert expected in text, expected
    pictures = [o for o in _outputs(nb) if "image/png" in o.get("data", {})]
    assert len(pictures) >= 2  # the DAG (where Graphviz is installed) and the roofline, inline
    html = [o["data"]["text/html"] for o in _outputs(nb) if "text/html" in o.get("data", {})]
    assert html and "max-width: 100%" in html[0]  # the report, its DAG scaled to the cell
