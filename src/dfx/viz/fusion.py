"""The graph after fusion (``dfx compile --out``'s ``fusion.dot``): one cluster per kernel.

Drawn from the two documents only: the ``dfx.compile/1`` record (:mod:`dfx.schema.compile`) and the
``dfx.graph/1`` document of the graph it was compiled from.
"""

from __future__ import annotations

from typing import Any, Mapping

from dfx.schema.compile import CompileDoc
from dfx.viz.dot import _attrs, _q

__all__ = ["fusion_dot"]

_KIND_FILL = {
    "gemm": "#f6c9a8",
    "attention": "#f3b4c2",
    "reduction": "#bcd7f2",
    "pointwise": "#cfe8c8",
    "memory": "#e6e6e6",
    "collective": "#fff2b3",
}


def fusion_dot(program: CompileDoc, graph_doc: Mapping[str, Any]) -> str:
    """The graph after fusion as Graphviz DOT: one cluster per kernel, views and inputs outside.

    ``program`` is a ``dfx.compile/1`` document's record (``Program.to_record()`` or
    :func:`dfx.schema.compile.read_compile`), ``graph_doc`` the ``dfx.graph/1`` document of the
    graph it was compiled from.
    """
    kernel_of = {n: k for k in program.kernels for n in k.nodes}
    lines = ["digraph compiled {", '  rankdir=TB; node [shape=box, style="rounded,filled", fontsize=10];']
    steps: dict[tuple[str, ...], list[Any]] = {}  # an operator the target splits: its kernels share its node
    for k in program.kernels:
        steps.setdefault(tuple(k.nodes), []).append(k)
    for i, group in enumerate(steps.values()):
        k = group[0]
        label = f"{k.name} ({k.kind}, {k.offchip_bytes} B off chip, {k.tiles} tiles)"
        if len(group) > 1:
            names = " -> ".join(s.name.rsplit(".", 1)[-1] for s in group)
            label = f"{k.name.rsplit('.', 1)[0]}: {names} ({sum(s.offchip_bytes for s in group)} B off chip)"
        lines.append(
            f'  subgraph cluster_{i} {{ label={_q(label)}; style=filled; color="#888888"; '
            f"fillcolor={_q(_KIND_FILL.get(k.kind, '#ffffff'))};"
        )
        for n in k.nodes:
            lines.append(f"    {_q(n)} {_attrs({'fillcolor': '#ffffff', 'tooltip': k.reason})};")
        lines.append("  }")
    for node in graph_doc["nodes"]:
        if node["name"] not in kernel_of and node["op"] != "output":
            lines.append(
                f"  {_q(node['name'])} {_attrs({'style': 'dashed', 'fontcolor': '#888888', 'fillcolor': '#fafafa'})};"
            )
    for node in graph_doc["nodes"]:
        if node["op"] == "output":
            continue
        for src, _ in node["inputs"]:
            lines.append(f"  {_q(src)} -> {_q(node['name'])};")
    lines.append("}")
    return "\n".join(lines) + "\n"
