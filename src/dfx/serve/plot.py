"""Pictures of a ``dfx.serving/1`` document (matplotlib, Agg backend): the timeline and the knee."""

from __future__ import annotations

import io
import math
from typing import Any

__all__ = ["rate_curve_png", "timeline_png"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    _plt().close(fig)
    return buf.getvalue()


def timeline_png(doc: dict[str, Any]) -> bytes:
    """Per machine: the batch and the requests waiting (left axis), the KV cache's occupancy (right)."""
    plt = _plt()
    machines = doc["machines"]
    fig, axes = plt.subplots(len(machines), 1, figsize=(9, 2.8 * len(machines)), squeeze=False)
    for ax, m in zip(axes[:, 0], machines):
        tl = m["timeline"]
        ax.step(tl["t_s"], tl["batch"], where="post", label="batch (sequences)")
        ax.step(tl["t_s"], tl["waiting"], where="post", label="waiting", alpha=0.7)
        ax.set(xlabel="time (s)", ylabel="requests", title=f"{m['profile']}: {m['scheduler']}")
        kv = [(t, v) for t, v in zip(tl["t_s"], tl["kv_occupancy"]) if v is not None]
        if kv:
            ax2 = ax.twinx()
            ax2.plot([t for t, _ in kv], [v for _, v in kv], color="tab:red", label="KV occupancy")
            ax2.set(ylabel="KV cache used", ylim=(0, 1.05))
            ax2.legend(loc="upper right")
        ax.legend(loc="upper left")
    return _png(fig)


def rate_curve_png(doc: dict[str, Any]) -> bytes:
    """p50 and p99 TTFT and TPOT against the request rate, per machine: where latency turns up is
    the rate the server saturates at (the knee)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    by_machine: dict[str, list] = {}
    for row in doc["curve"]:
        by_machine.setdefault(row["profile"], []).append(row)
    for name, rows in by_machine.items():
        rows = sorted(rows, key=lambda r: r["rate_per_s"])
        rates = [r["rate_per_s"] for r in rows]
        for ax, key in zip(axes, ("ttft_s", "tpot_s")):
            vals = [r[key] for r in rows]
            ax.plot(rates, [v["p50"] * 1e3 if v else math.nan for v in vals], marker="o", label=f"{name} p50")
            ax.plot(rates, [v["p99"] * 1e3 if v else math.nan for v in vals], marker="x", ls="--", label=f"{name} p99")
    axes[0].set(xlabel="request rate (requests/s)", ylabel="TTFT (ms)", yscale="log", title="time to first token")
    axes[1].set(xlabel="request rate (requests/s)", ylabel="TPOT (ms)", title="time per output token")
    for ax in axes:
        ax.legend(fontsize=7)
    return _png(fig)
