"""report.html in a real browser: headless Chromium opens it from disk, offline.

Skipped, with the reason, only where no Chromium is installed (``make`` installs the Debian
package ``chromium`` where it can).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import pytest

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (make system-deps installs it)"
)


def _chromium(tmp_path, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    """Headless Chromium, offline, with a profile under ``tmp_path``, run on ``args`` (flags, then a page)."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture(scope="module")
def report_file(tmp_path_factory, mlp_pictures):
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(mlp_pictures.files["report.html"], encoding="utf-8")
    return path


def test_scripts_run_and_every_node_is_a_hover_target(tmp_path, report_file, mlp_doc):
    result = _chromium(tmp_path, "--dump-dom", report_file.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert 'data-dfx-ready="1"' in dom  # the inline script ran to its end
    hovered = set(re.findall(r'data-dfx-hover="([^"]+)"', dom))
    assert hovered == {n["name"] for n in mlp_doc["nodes"]}
    console_errors = [
        line for line in result.stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    assert not console_errors, console_errors


def test_screenshot_is_not_blank(tmp_path, report_file):
    from PIL import Image

    shot = tmp_path / "shot.png"
    result = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,1000", report_file.as_uri())
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    img = Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")
    assert img.size == (1400, 1000)
    colours = img.getcolors(maxcolors=1 << 24)
    assert len(colours) > 20  # text, tables and the drawn graph, not one flat colour
    # the bound colours of the DAG are on screen
    assert any(c[1] == (0x5F, 0xA8, 0xD3) or c[1] == (0xF4, 0xA2, 0x61) for c in colours)


def test_without_dot_the_dag_is_svg_and_searchable(tmp_path, mlp_doc, monkeypatch):
    """dfx's own layout in a real browser: every node a hover target, and the search finds `linear_1`."""
    from dfx.viz import render_pictures

    monkeypatch.setattr("dfx.viz.dot.shutil.which", lambda name: None)
    html = render_pictures(mlp_doc).files["report.html"]
    # type into the search box once the page's script has run, then dump the DOM
    probe = (
        '<script>window.addEventListener("load", function () {'
        ' var f = document.getElementById("dfx-find"); f.value = "linear_1";'
        ' f.dispatchEvent(new Event("input")); });</script></body>'
    )
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", probe, 1), encoding="utf-8")
    result = _chromium(tmp_path, "--dump-dom", "--virtual-time-budget=2000", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert 'data-dfx-ready="1"' in dom
    assert set(re.findall(r'data-dfx-hover="([^"]+)"', dom)) == {n["name"] for n in mlp_doc["nodes"]}
    hit = re.search(r'class="node[^"]*dfx-hit[^"]*"[^>]*>\s*<title>([^<]+)</title>', dom)
    assert hit and hit.group(1) == "linear_1", "the search marked no node"
