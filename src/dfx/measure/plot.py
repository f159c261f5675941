"""The predicted-versus-measured scatter of ``dfx validate --out``: log-log, one point per node.

Reads only the ``dfx.validation/1`` document. Points on the diagonal are exact; the shaded band is
the ±25% per-node goal of ``docs/validation.md``.
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["scatter_png"]

_COLOURS = {"matmul": "tab:blue", "elementwise": "tab:orange", "normalization": "tab:green",
            "memory": "tab:red", "view": "tab:gray", "none": "tab:gray"}  # fmt: skip
_BAND = 0.25  # the per-node goal: within 25%


def scatter_png(doc: dict[str, Any]) -> bytes:
    """PNG bytes of predicted (x) against measured (y) seconds for every counted node, coloured by category."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = [n for n in doc["nodes"] if n["counted"]]
    fig, ax = plt.subplots(figsize=(6, 5), dpi=110)
    try:
        for cat in sorted({n["category"] for n in nodes}):
            pts = [n for n in nodes if n["category"] == cat]
            ax.scatter([n["predicted_s"] for n in pts], [n["measured_s"] for n in pts], label=f"{cat} ({len(pts)})",
                       color=_COLOURS.get(cat, "black"), s=28, alpha=0.85)  # fmt: skip
        values = [v for n in nodes for v in (n["predicted_s"], n["measured_s"])] or [1e-6, 1e-3]
        lo, hi = min(values) / 2, max(values) * 2
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, label="measured = predicted")
        ax.fill_between([lo, hi], [lo / (1 + _BAND), hi / (1 + _BAND)], [lo / (1 - _BAND), hi / (1 - _BAND)],
                        color="black", alpha=0.08, label="within 25%")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(f"predicted time per node (s), {doc['prediction']}")
        ax.set_ylabel("measured time per node (s), median")
        name = doc.get("model", {}).get("name", "model")
        e2e = doc["end_to_end"]["error"]
        ax.set_title(f"{name} on {doc['hardware']}: median |err| {doc['median_abs_error']:.0%}, end-to-end {e2e:+.0%}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(True, which="both", alpha=0.2)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()
    finally:
        plt.close(fig)
