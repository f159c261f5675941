"""A bar chart of waste per bucket, as SVG text (matplotlib, Agg backend), from a ``dfx.buckets/1`` document."""

from __future__ import annotations

import io
from typing import Any

__all__ = ["waste_svg"]


def waste_svg(doc: dict[str, Any]) -> str:
    """Padded vs useful tokens per bucket (and FLOP waste when the document has a model), as SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["per_bucket"]
    labels = [str(r["size"]) for r in rows]
    has_model = "padded_flops" in doc
    fig, axes = plt.subplots(1, 2 if has_model else 1, figsize=(10 if has_model else 6, 4), squeeze=False)
    ax = axes[0][0]
    ax.bar(labels, [r["tokens"] for r in rows], label="useful tokens")
    ax.bar(labels, [r["waste_tokens"] for r in rows], bottom=[r["tokens"] for r in rows], label="padding")
    ax.set(xlabel="bucket size", ylabel="tokens", title=f"token waste {doc['waste_fraction']:.1%}")
    ax.legend()
    if has_model:
        ax2 = axes[0][1]
        ax2.bar(labels, [r["useful_flops"] for r in rows], label="useful FLOPs")
        ax2.bar(labels, [r["waste_flops"] for r in rows], bottom=[r["useful_flops"] for r in rows], label="padding")
        ax2.set(xlabel="bucket size", ylabel="FLOPs", title=f"FLOP waste {doc['waste_flops_fraction']:.1%}")
        ax2.legend()
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()
