"""The summary and pictures of a sweep, drawn from its results table only.

Written into the sweep's folder: ``summary.csv`` (per model and machine: the fastest point and the
highest-throughput point), ``latency_vs_batch.png`` (one panel per model, a line per machine),
``pareto.png`` (every point's latency and tokens/s, the Pareto front drawn), ``tokens_per_s_vs_chips.png``
(one panel per model, a line per machine, when the sweep's ``parallel`` axis gives more than one chip
count), and ``report.html`` with all of them.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
from typing import Any, Sequence

__all__ = [
    "BUILTIN_SCOPES",
    "REPORT_FILES",
    "chips_curves",
    "model_scope",
    "pareto_front",
    "summary_rows",
    "tokens_cell",
    "write_report",
]

REPORT_FILES = ("summary.csv", "latency_vs_batch.png", "pareto.png", "tokens_per_s_vs_chips.png", "report.html")

# How much of its published model each built-in (dfx.models.PRESETS) is, to label its rates: one of
# a model's layers ("1 layer", as `dfx analyze --phase` counts a block's layers) or blocks, or the
# whole model. Kept here, torch-free, so a sweep on cached graphs never imports torch; a built-in
# added to the registry without an entry fails tests/sweep/test_sweep_command.py.
BUILTIN_SCOPES: dict[str, str] = {
    "gpt2-block": "1 layer",  # one of GPT-2 small's 12
    "llama-layer": "1 layer",  # one of Llama-2-7B's 32
    "llama3-8b-layer": "1 layer",  # one of Llama-3-8B's 32
    "bert-layer": "1 layer",  # one of BERT-base's 12
    "vit-block": "1 layer",  # one of ViT-B/16's 12
    "resnet-block": "1 block",  # one of ResNet-50's 16 bottlenecks
    "mlp": "whole model",  # PB-05's MNIST MLP
}


def model_scope(model: str) -> str:
    """How much of the model a sweep point of ``model`` is: ``"1 layer"``, ``"1 block"``, ``"whole model"``.

    An ``hf:`` config is built whole (every layer); a name dfx does not know gives ``""``.

    Examples
    --------
    >>> model_scope("gpt2-block"), model_scope("hf:llama-2-70b"), model_scope("mlp")
    ('1 layer', 'whole model', 'whole model')
    """
    if model.startswith("hf:"):
        return "whole model"
    return BUILTIN_SCOPES.get(model, "")


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
        s = out.setdefault(
            key,
            {
                "model": key[0],
                "hardware": key[1],
                "points": 0,
                "best_latency_s": math.inf,
                "at": "",
                "best_tokens_per_s": -math.inf,
                "tokens_at": "",
            },
        )
        s["points"] += 1
        where = f"batch {r['batch']} seq {r['seq']} {r['dtype']} {r['phase']} {r['execution_model']}"
        if r.get("chips") is not None and r.get("parallel", "auto") != "auto":
            where += f" {r['parallel']} ({r['chips']} chips)"
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
        mine = [
            r
            for r in mine
            if r["seq"] == seq
            and r["dtype"] == first["dtype"]
            and r["phase"] == first["phase"]
            and r["execution_model"] == first["execution_model"]
        ]
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


def chips_curves(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per model, per machine: (chips used, best tokens/s at that count), at the model's largest batch and seq.

    Points are those of the model's first dtype, phase and execution model; where several plans use
    the same number of chips (``tp=8`` and ``tp=4,pp=2``), the best tokens/s is kept. Empty when no
    model was swept at more than one chip count.

    Examples
    --------
    >>> r = dict(model="m", hardware="h", batch=1, seq=8, dtype="bfloat16", phase="forward",
    ...          execution_model="default", error="", latency_s=1.0)
    >>> chips_curves([{**r, "chips": 1, "tokens_per_s": 8.0}, {**r, "chips": 2, "tokens_per_s": 14.0},
    ...               {**r, "chips": 2, "tokens_per_s": 15.0}])
    {'m': {'h': [(1, 8.0), (2, 15.0)]}}
    """
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    good = [r for r in _good(rows) if r.get("chips") is not None and not math.isnan(r["tokens_per_s"])]
    for model in dict.fromkeys(r["model"] for r in good):
        mine = [r for r in good if r["model"] == model]
        first = mine[0]
        batch, seq = max(r["batch"] for r in mine), max(r["seq"] for r in mine)
        mine = [
            r
            for r in mine
            if (r["batch"], r["seq"], r["dtype"], r["phase"], r["execution_model"])
            == (batch, seq, first["dtype"], first["phase"], first["execution_model"])
        ]
        if len({r["chips"] for r in mine}) < 2:
            continue
        for hw in dict.fromkeys(r["hardware"] for r in mine):
            best: dict[int, float] = {}
            for r in mine:
                if r["hardware"] == hw:
                    best[r["chips"]] = max(best.get(r["chips"], -math.inf), r["tokens_per_s"])
            out.setdefault(model, {})[hw] = sorted(best.items())
    return out


def _tokens_vs_chips(curves: dict[str, dict[str, list[tuple[int, float]]]], rows: list[dict[str, Any]]) -> bytes:
    """One panel per model: tokens/s against chips used, a line per machine (:func:`chips_curves`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 3.6), squeeze=False)
    for ax, (model, by_hw) in zip(axes[0], curves.items()):
        for hw, pts in by_hw.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=hw)
        mine = [r for r in rows if r["model"] == model]
        ax.set_title(f"{model}, batch {max(r['batch'] for r in mine)}, seq {max(r['seq'] for r in mine)}", fontsize=9)
        ax.set_xlabel("chips")
        ax.set_ylabel("tokens/s")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _pareto(rows: list[dict[str, Any]]) -> bytes:
    return _png(pareto_figure(rows))


def pareto_figure(rows: list[dict[str, Any]]):
    """``pareto.png``'s figure: every point's latency and tokens/s per machine, the Pareto front, a title,
    and tick labels thinned until none collide (:func:`dfx.viz.labels.thin_tick_labels`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dfx.viz.labels import thin_tick_labels

    rows = [r for r in rows if not math.isnan(r["tokens_per_s"])]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    if not rows:  # every model's seq is an image size, not tokens (resnet-block, mlp): no tokens/s to plot
        ax.text(0.5, 0.5, "no point has a tokens/s\n(seq is not tokens for these models)", ha="center", va="center")
        ax.set_axis_off()
        return fig
    for hw in dict.fromkeys(r["hardware"] for r in rows):
        mine = [r for r in rows if r["hardware"] == hw]
        ax.scatter([r["latency_s"] * 1e3 for r in mine], [r["tokens_per_s"] for r in mine], s=12, label=hw, alpha=0.7)
    front = [rows[i] for i in pareto_front([(r["latency_s"], r["tokens_per_s"]) for r in rows])]
    ax.plot(
        [r["latency_s"] * 1e3 for r in front],
        [r["tokens_per_s"] for r in front],
        color="black",
        lw=1.2,
        drawstyle="steps-post",
        label="Pareto front",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("tokens/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    models = list(dict.fromkeys(r["model"] for r in rows))
    what = models[0] if len(models) == 1 else f"{len(models)} models"
    ax.set_title(f"Pareto front: latency vs tokens/s ({what}, {len(rows)} points)", fontsize=9)
    fig.tight_layout()
    thin_tick_labels(ax)
    return fig


def tokens_cell(tokens_per_s: float, scope: str = "") -> str:
    """Best tokens/s as the summary shows it, with what the model is (``scope``) when known.

    A built-in of one layer gives one layer's rate, not the model's: the label says so, as
    ``dfx analyze --phase`` counts its layers ("1 layer x 12 KV heads").

    Examples
    --------
    >>> tokens_cell(15725571.4, "1 layer"), tokens_cell(1234.0, "whole model"), tokens_cell(-1.0, "1 layer")
    ('15,725,571 (1 layer)', '1,234 (whole model)', '-')
    """
    if not tokens_per_s > 0:
        return "-"
    return f"{tokens_per_s:,.0f}" + (f" ({scope})" if scope else "")


def _summary_csv(summary: list[dict[str, Any]], scopes: dict[str, str]) -> str:
    buf = io.StringIO()
    cols = ["model", "hardware", "points", "best_latency_s", "at", "best_tokens_per_s", "tokens_at"]
    w = csv.DictWriter(buf, fieldnames=[*cols, "model_scope"], lineterminator="\n")
    w.writeheader()
    for s in summary:
        row = {**{k: s[k] for k in cols}, "model_scope": scopes.get(s["model"], "")}
        if not s["best_tokens_per_s"] > 0:  # no point with a tokens/s (seq is not tokens): empty, not -inf
            row["best_tokens_per_s"] = ""
        w.writerow(row)
    return buf.getvalue()


def _html(
    summary: list[dict[str, Any]], pictures: dict[str, bytes], n_rows: int, n_errors: int, scopes: dict[str, str]
) -> str:
    e = html.escape
    head = "".join(
        f"<th>{e(c)}</th>" for c in ("model", "hardware", "points", "best latency (ms)", "at", "best tokens/s", "at")
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{e(str(v))}</td>"
            for v in (
                s["model"],
                s["hardware"],
                s["points"],
                f"{s['best_latency_s'] * 1e3:.4g}",
                s["at"],
                tokens_cell(s["best_tokens_per_s"], scopes.get(s["model"], "")),
                s["tokens_at"],
            )
        )
        + "</tr>"
        for s in summary
    )
    imgs = "".join(
        f'<h2>{e(name)}</h2><img src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        for name, data in pictures.items()
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>dfx sweep</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
        "img{max-width:100%}</style></head><body>"
        f"<h1>dfx sweep</h1><p>{n_rows} points, {n_errors} refused by dfx (see the table's error column). "
        "Latency is <code>HardwareResult.latency_s</code>; tokens/s as docs/sweeps.md defines it.</p>"
        f"<table><tr>{head}</tr>{body}</table>{imgs}</body></html>\n"
    )


def write_report(
    rows: Sequence[dict[str, Any]], out: Any, *, force: bool = True, scopes: dict[str, str] | None = None
) -> list[Any]:
    """Write the summary, the pictures and ``report.html`` for ``rows`` (a results table) into ``out``.

    ``scopes`` maps a model to how much of it the rows cover (default :func:`model_scope` of each):
    the label beside its best tokens/s, and ``summary.csv``'s ``model_scope``. Returns the paths
    written. ``force`` is passed to :func:`dfx.report.files.write_outputs`.
    """
    from dfx.report.files import write_outputs

    rows = list(rows)
    if scopes is None:
        scopes = {m: model_scope(m) for m in dict.fromkeys(r["model"] for r in rows)}
    good = _good(rows)
    summary = summary_rows(good)
    pictures: dict[str, bytes] = {}
    if good:
        pictures["latency_vs_batch.png"] = _latency_vs_batch(good)
        pictures["pareto.png"] = _pareto(good)
        curves = chips_curves(good)
        if curves:
            pictures["tokens_per_s_vs_chips.png"] = _tokens_vs_chips(curves, good)
    files: dict[str, str | bytes] = {
        "summary.csv": _summary_csv(summary, scopes),
        **pictures,
        "report.html": _html(summary, pictures, len(rows), len(rows) - len(good), scopes),
    }
    return write_outputs(out, files, force=force)
