"""The DAG as Graphviz DOT text, and its layout to SVG/PNG by the ``dot`` binary when present.

Boxes are filled by their bound on one profile (``color_by``), the critical path is drawn bold
(class ``critical`` in the SVG), faded boxes are views and parameters, and boxes are clustered by
module path. Every box carries a tooltip with all its numbers.
"""

from __future__ import annotations

import shutil
import subprocess

from dfx.viz.document import Doc
from dfx.viz.facts import BOUND_FILL, BOUND_LABEL, box_facts, box_label_lines
from dfx.viz.graph import Box, DisplayGraph, Kind, Level

__all__ = ["graphviz_available", "render_dot", "to_dot"]

_FADED = {"fillcolor": "#fafafa", "color": "#bbbbbb", "fontcolor": "#888888", "fontsize": "8"}
_CRITICAL_EDGE = {"penwidth": "3", "color": "#c0392b", "class": "critical"}


def _q(text: str) -> str:
    """A DOT double-quoted string; ``\\n`` in ``text`` stays a DOT line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k}={_q(v)}" for k, v in attrs.items()) + "]"


def _box_attrs(box: Box, hw_id: str | None) -> dict[str, str]:
    h = box.hw.get(hw_id) if hw_id else None
    attrs = {
        "label": "\n".join(box_label_lines(box, hw_id)),
        "tooltip": "\n".join(f"{k}: {v}" for k, v in box_facts(box)),
        "class": f"dfx-node bound-{h.bound if h else 'none'}" + (" critical" if h and h.critical else ""),
        "fillcolor": BOUND_FILL[h.bound if h else "none"],
    }
    if box.kind in (Kind.VIEW, Kind.PARAM):
        attrs.update(_FADED)
        attrs["style"] = "rounded,filled,dashed"
    if h and h.critical:
        attrs["penwidth"] = "2.5"
    return attrs


def _cluster_key(box: Box, graph: DisplayGraph, parents: set[str]) -> str:
    """The module path a box is clustered under."""
    if graph.level is Level.OP or box.module in parents:
        return box.module
    return box.module.rpartition(".")[0]


def _cluster_labels(graph: DisplayGraph) -> dict[str, str]:
    return {f.path: f.label for f in graph.folds}


def _emit_clusters(
    keys: dict[str, list[Box]], lines: list[str], hw_id: str | None, labels: dict[str, str], total: int
) -> None:
    """Nested ``subgraph cluster_*`` blocks, one per module path holding two or more boxes."""
    paths = sorted(keys)

    def under(p: str) -> list[str]:
        return [k for k in paths if k == p or k.startswith(p + ".")]

    def count(p: str) -> int:
        return sum(len(keys[k]) for k in under(p))

    def children(p: str) -> list[str]:
        """The next module paths below ``p`` that hold boxes (direct or deeper)."""
        seen: list[str] = []
        for k in paths:
            if k != p and (p == "" or k.startswith(p + ".")):
                rest = k[len(p) + 1 :] if p else k
                child = (p + "." if p else "") + rest.split(".")[0]
                if child not in seen:
                    seen.append(child)
        return seen

    def emit(p: str, depth: int) -> None:
        open_cluster = p != "" and count(p) >= 2 and count(p) < total
        if open_cluster:
            lines.append(f"{'  ' * depth}subgraph {_q('cluster_' + p)} {{")
            lines.append(
                f'{"  " * depth}  label={_q(labels.get(p, p))}; style="rounded"; color="#999999"; fontsize="10";'
            )
        for box in keys.get(p, []):
            lines.append(f"{'  ' * (depth + 1)}{_q(box.id)} {_attrs(_box_attrs(box, hw_id))};")
        for c in children(p):
            emit(c, depth + (1 if open_cluster else 0))
        if open_cluster:
            lines.append(f"{'  ' * depth}}}")

    emit("", 0)


def _legend(lines: list[str]) -> None:
    lines.append('  subgraph "cluster_legend" {')
    lines.append('    label="legend"; style="rounded"; color="#cccccc"; fontsize="10";')
    for bound, fill in BOUND_FILL.items():
        lines.append(
            f"    {_q('legend_' + bound)} {_attrs({'label': BOUND_LABEL[bound], 'fillcolor': fill, 'class': 'legend'})};"
        )
    lines.append(
        f'    "legend_critical" {_attrs({"label": "critical path", "penwidth": "2.5", "fillcolor": "#ffffff", "class": "legend"})};'
    )
    lines.append("  }")


def to_dot(doc: Doc, graph: DisplayGraph, color_by: str | None) -> str:
    """DOT text for ``graph``, coloured by each box's bound on profile ``color_by``."""
    title = f"{doc.model_name}: {len(doc.nodes)} nodes" + (f", coloured by bound on {color_by}" if color_by else "")
    if graph.folds:
        title += "; repeated layers drawn once: " + ", ".join(f.label for f in graph.folds)
    lines = [
        "digraph dfx {",
        f'  graph [rankdir=TB, label={_q(title)}, labelloc=t, fontname="Helvetica", fontsize=12, nodesep=0.25, ranksep=0.35];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=9, margin="0.08,0.03"];',
        '  edge [color="#888888", arrowsize=0.6];',
    ]
    _legend(lines)
    parents = {b.module.rpartition(".")[0] for b in graph.boxes}
    keys: dict[str, list[Box]] = {}
    for box in graph.boxes:
        keys.setdefault(_cluster_key(box, graph, parents), []).append(box)
    _emit_clusters(keys, lines, color_by, _cluster_labels(graph), len(graph.boxes))
    for link in graph.links:
        crit = bool(color_by and link.critical.get(color_by))
        lines.append(f"  {_q(link.src)} -> {_q(link.dst)} {_attrs(_CRITICAL_EDGE if crit else {})};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


# Graphviz lays out a few thousand boxes in seconds; a layout still running after this long is
# stopped (a huge graph, or a broken `dot`) and dfx lays the DAG out itself (dfx.viz.layout).
# DFX_DOT_TIMEOUT_S overrides it.
DOT_TIMEOUT_S = 20.0


class GraphvizTimeout(Exception):
    """``dot`` did not finish within its budget; the message is the note to print."""


def dot_timeout_s() -> float:
    """The layout budget in seconds: ``DFX_DOT_TIMEOUT_S`` if set to a positive number, else :data:`DOT_TIMEOUT_S`."""
    import os

    try:
        value = float(os.environ.get("DFX_DOT_TIMEOUT_S", DOT_TIMEOUT_S))
    except ValueError:
        return DOT_TIMEOUT_S
    return value if value > 0 else DOT_TIMEOUT_S


def render_dot(dot_text: str, fmt: str, timeout_s: float | None = None) -> bytes | None:
    """Lay out ``dot_text`` with Graphviz into ``fmt`` (``svg``, ``png``); ``None`` without Graphviz.

    Raises
    ------
    GraphvizTimeout
        When ``dot`` runs past ``timeout_s`` (default :func:`dot_timeout_s`); it is killed first.
    DfxError
        When ``dot`` fails.
    """
    exe = shutil.which("dot")
    if exe is None:
        return None
    budget = dot_timeout_s() if timeout_s is None else timeout_s
    args = [exe, f"-T{fmt}"] + (["-Gdpi=110"] if fmt == "png" else [])
    # its own process group, so a `dot` wrapper's children die with it and release the pipes
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(dot_text.encode("utf-8"), timeout=budget)
    except subprocess.TimeoutExpired:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise GraphvizTimeout(
            f"Graphviz dot -T{fmt} did not finish in {budget:g} s and was stopped: dfx laid out "
            "dag.svg and dag.png itself (set DFX_DOT_TIMEOUT_S to give dot longer, or draw --level module)"
        ) from None
    if proc.returncode != 0:
        from dfx.errors import DfxError

        raise DfxError(f"Graphviz dot -T{fmt} failed: {stderr.decode(errors='replace').strip()[:300]}")
    return stdout
