"""report.html of a whole model (hf:llama-2-7b) in headless Chromium: the summary comes before the
first picture, and no text runs out of its box (issue 18: a 1,165-node critical path opened it).

Skipped, with the reason, where Chromium is not installed.
"""

from __future__ import annotations

import json
import re

import pytest

from .test_viz_browser import CHROMIUM, _chromium

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (make system-deps installs it)"
)

# Appended to a copy of the report: measures the laid-out page and writes the facts into the DOM.
_PROBE = """<script>
window.addEventListener("load", function () {
  var top = function (el) { return el ? el.getBoundingClientRect().top + window.scrollY : -1; };
  var summary = document.querySelector(".dfx-report h2 + table");
  var picture = document.querySelector(".dfx-report svg, .dfx-report img");
  var over = [];
  document.querySelectorAll(".dfx-report p, .dfx-report td, .dfx-report th, .dfx-report summary").forEach(function (el) {
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === "visible") { over.push(el.textContent.slice(0, 60)); }
  });
  var page = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  document.body.setAttribute("data-probe", JSON.stringify(
    {summary: top(summary), picture: top(picture), overflowing: over, page_overflow_px: page}));
});
</script>"""


@pytest.fixture(scope="module")
def llama_report(tmp_path_factory):
    from dfx.analysis import analyze
    from dfx.viz import render_pictures

    doc = analyze("hf:llama-2-7b", seq=16, hardware=["nvidia-h100-sxm", "ibm-spyre"]).to_dict()
    html = render_pictures(doc).files["report.html"]
    path = tmp_path_factory.mktemp("llama") / "report.html"
    path.write_text(html.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    return doc, path


def test_summary_before_the_first_picture_and_nothing_overflows(tmp_path, llama_report):
    doc, path = llama_report
    assert len(doc["hardware"]["nvidia-h100-sxm"]["critical_path"]["nodes"]) > 100  # a long path to fold away
    result = _chromium(
        tmp_path, "--window-size=1280,900", "--virtual-time-budget=5000", "--dump-dom", path.as_uri(), timeout_s=180
    )
    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'data-probe="([^"]*)"', result.stdout)
    assert match, "the probe did not run"
    probe = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert 0 <= probe["summary"] < probe["picture"]
    # the first picture (the DAG) starts within the first screen and a half, not after the path
    assert probe["picture"] < 1.5 * 900
    assert probe["overflowing"] == []
    assert probe["page_overflow_px"] <= 0
