"""The summary and pictures of a sweep, drawn from its results table only.

Written into the sweep's folder: ``summary.csv`` (per model and machine: the fastest point and the
highest-throughput point), ``latency_vs_batch.png`` (one panel per model, a line per machine),
``pareto.png`` (every point's latency and tokens/s, the Pareto front drawn), ``tokens_per_s_vs_chips.png``
once the table has a chips column, and ``report.html`` with all of them.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
from typing import Any, Sequence

__all__ = ["REPORT_FILES", "pareto_front", "summary_rows", "write_report"]

REPORT_FILES = ("summary.csv", "latency_vs_batch.png", "pareto.png", "report.html")


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats: lower latency (x) and higher throughput (y).

    A point is on the front when no other point has ``x <= its x`` and ``y >= its y`` with one of
    them strict. Returned in increasing ``x``; NaNs are never on the front.

    Examples
    --------
    >>> pareto_front([(1.0, 10.0), (2.0, 30.0), (3.0, 20.0), (0.5, 1.0)])
    [3, 0, 1]
    """
    ok = [i for i, (x, y) in enumerate(points) if not (math.isnan(x) or math.isnan(y))]
    ok.sort(key=lambda i: (points[i][0], -points[i][1]))
    front, best_y = [], -math.inf
    for i in ok:
        if points[i][1] > best_y:
            front.append(i)
            best_y = points[i][1]
    return front


def _good(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if not r["error"] and not math.isnan(r["latency_s"])]


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, hardware): the fastest point and the highest-throughput point, and the point count."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in _good(rows):
        key = (r["model"], r["hardware"])
        s = out.setdefault(key, {"model": key[0], "hardware": key[1], "points": 0, "best_latency_s": math.inf,
                                 "at": "", "best_tokens_per_s": -math.inf, "tokens_at": ""})
        s["points"] += 1
        where = f"batch {r['batch']} seq {r['seq']} {r['dtype']} {r['phase']} {r['execution_model']}"
        if r["latency_s"] < s["best_latency_s"]:
            s["best_latency_s"], s["at"] = r["latency_s"], where
        if not math.isnan(r["tokens_per_s"]) and r["tokens_per_s"] > s["best_tokens_per_s"]:
            s["best_tokens_per_s"], s["tokens_at"] = r["tokens_per_s"], where
    return sorted(out.values(), key=lambda s: (s["model"], s["best_latency_s"]))


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _latency_vs_batch(rows: list[dict[str, Any]]) -> bytes:
    """One panel per model; per machine, latency against batch at the model's largest seq (first dtype, phase)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, max(1, len(models)), figsize=(4.2 * max(1, len(models)), 3.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        mine = [r for r in rows if r["model"] == model]
        seq = max(r["seq"] for r in mine)
        first = mine[0]
        mine = [r for r in mine if r["seq"] == seq and r["dtype"] == first["dtype"] and r["phase"] == first["phase"]
                and r["execution_model"] == first["execution_model"]]
        for hw in dict.fromkeys(r["hardware"] for r in mine):
            pts = sorted((r["batch"], r["latency_s"]) for r in mine if r["hardware"] == hw)
            ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o", label=hw)
        ax.set_title(f"{model}, seq {seq}, {first['dtype']}, {first['phase']}", fontsize=9)
        ax.set_xlabel("batch")
        ax.set_ylabel("latency (ms)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()  # panels' y labels clear of their neighbours
    return _png(fig)


def _pareto(rows: list[dict[str, Any]]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if not math.isnan(r["tokens_per_s"])]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for hw in dict.fromkeys(r["hardware"] for r in rows):
        mine = [r for r in rows if r["hardware"] == hw]
        ax.scatter([r["latency_s"] * 1e3 for r in mine], [r["tokens_per_s"] for r in mine], s=12, label=hw, alpha=0.7)
    front = [rows[i] for i in pareto_front([(r["latency_s"], r["tokens_per_s"]) for r in rows])]
    ax.plot([r["latency_s"] * 1e3 for r in front], [r["tokens_per_s"] for r in front], color="black", lw=1.2,
            drawstyle="steps-post", label="Pareto front")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("tokens/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _png(fig)


def _summary_csv(summary: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    cols = ["model", "hardware", "points", "best_latency_s", "at", "best_tokens_per_s", "tokens_at"]
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for s in summary:
        w.writerow({k: s[k] for k in cols})
    return buf.getvalue()


def _html(summary: list[dict[str, Any]], pictures: dict[str, bytes], n_rows: int, n_errors: int) -> str:
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in ("model", "hardware", "points", "best latency (ms)", "at",
                                                "best tokens/s", "at"))
    body = "".join(
        "<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in (
            s["model"], s["hardware"], s["points"], f"{s['best_latency_s'] * 1e3:.4g}", s["at"],
            f"{s['best_tokens_per_s']:,.0f}" if s["best_tokens_per_s"] > 0 else "-", s["tokens_at"])) + "</tr>"
        for s in summary
    )
    imgs = "".join(f'<h2>{e(name)}</h2><img src="data:image/png;base64,{base64.b64encode(data).decode()}">'
                   for name, data in pictures.items())
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>dfx sweep</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
            "img{max-width:100%}</style></head><body>"
            f"<h1>dfx sweep</h1><p>{n_rows} points, {n_errors} refused by dfx (see the table's error column). "
            "Latency is <code>HardwareResult.latency_s</code>; tokens/s as docs/sweeps.md defines it.</p>"
            f"<table><tr>{head}</tr>{body}</table>{imgs}</body></html>\n")


def write_report(rows: Sequence[dict[str, Any]], out: Any, *, force: bool = True) -> list[Any]:
    """Write the summary, the pictures and ``report.html`` for ``rows`` (a results table) into ``out``.

    Returns the paths written. ``force`` is passed to :func:`dfx.report.files.write_outputs`.
    """
    from dfx.report.files import write_outputs

    rows = list(rows)
    good = _good(rows)
    summary = summary_rows(good)
    pictures: dict[str, bytes] = {}
    if good:
        pictures["latency_vs_batch.png"] = _latency_vs_batch(good)
        pictures["pareto.png"] = _pareto(good)
    files: dict[str, str | bytes] = {"summary.csv": _summary_csv(summary), **pictures,
                                     "report.html": _html(summary, pictures, len(rows), len(rows) - len(good))}
    return write_outputs(out, files, force=force)
