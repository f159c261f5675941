"""The graph as drawn: boxes (one node, or a module's nodes) and links, with per-profile numbers.

``level="op"`` draws one box per graph node; ``level="module"`` one box per run of nodes from the
same module (parameters are folded into their consumers). At both levels, repeated layers are drawn
once (see :mod:`dfx.viz.layers`). A box's numbers are per instance of a folded layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from dfx.viz.document import Doc, DocNode
from dfx.viz.layers import Fold, Folding, find_folds, module_of, parameter_nodes

__all__ = ["Box", "BoxHw", "DisplayGraph", "Kind", "Level", "Link", "build_display_graph"]


class Level(str, Enum):
    """How much of the graph one box stands for."""

    OP = "op"
    MODULE = "module"


class Kind(str, Enum):
    """What a box is, which sets how it is drawn."""

    WORK = "work"  # moves bytes or does FLOPs
    VIEW = "view"  # no work: views, getitem (faded)
    PARAM = "param"  # a parameter or buffer placeholder (faded)
    IO = "io"  # graph inputs and the output


@dataclass(frozen=True)
class BoxHw:
    """A box on one profile: the bound carrying the most time, summed time, on the critical path."""

    bound: str
    time_s: float
    critical: bool
    bounds: tuple[str, ...]  # every member's bound, for the tooltip


@dataclass(frozen=True)
class Box:
    id: str
    title: str
    op: str
    module: str
    kind: Kind
    members: tuple[str, ...]
    shape: tuple[int, ...] | None
    flops: int
    bytes: int
    hw: dict[str, BoxHw] = field(default_factory=dict)

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class Link:
    src: str
    dst: str
    bytes: int
    critical: dict[str, bool]  # profile id -> on that profile's critical path


@dataclass(frozen=True)
class DisplayGraph:
    boxes: tuple[Box, ...]
    links: tuple[Link, ...]
    level: Level
    folds: tuple[Fold, ...]
    hidden_params: int  # parameter placeholders folded into their consumers (module level)
    unused_inputs: tuple[str, ...] = ()  # parameters and buffers no node reads (num_batches_tracked): not drawn


def _kind(n: DocNode, params: frozenset[str]) -> Kind:
    if n.name in params:
        return Kind.PARAM
    if n.op in ("placeholder", "output"):
        return Kind.IO
    return Kind.WORK if (n.flops or n.bytes) else Kind.VIEW


def _groups_op(doc: Doc, rep: dict[str, str]) -> dict[str, list[str]]:
    """Box id -> member node names (of the drawn instance) at op level."""
    return {n.name: [n.name] for n in doc.nodes if rep[n.name] == n.name}


def _groups_module(
    doc: Doc, rep: dict[str, str], params: frozenset[str], modules: dict[str, str]
) -> dict[str, list[str]]:
    """Box id -> members: runs of consecutive nodes (topological order) of one module.

    Contracting a run that is contiguous in a topological order can never make a cycle.
    """
    groups: dict[str, list[str]] = {}
    last_key, last_id = None, None
    for n in doc.nodes:
        if rep[n.name] != n.name or n.name in params:
            continue
        kind = _kind(n, params)
        key = None if kind is Kind.IO else modules[n.name]
        if key is None or key != last_key:
            last_id = n.name if key is None or key == "" or key in groups else key
            groups[last_id] = []
        groups[last_id].append(n.name)
        last_key = key
    return groups


def _box(
    doc: Doc,
    box_id: str,
    members: list[str],
    modules: dict[str, str],
    params: frozenset[str],
    level: Level,
    critical: dict[str, frozenset[str]],
) -> Box:
    nodes = [doc.node(m) for m in members]
    if len(nodes) == 1:
        n = nodes[0]
        op, kind = n.op_label, _kind(n, params)
        title = n.name if level is Level.OP or kind in (Kind.IO, Kind.PARAM) else (modules[n.name] or n.name)
    else:
        ops = list(dict.fromkeys(n.op_label for n in nodes if n.flops or n.bytes))
        listed = ": " + ", ".join(ops[:3]) + (", ..." if len(ops) > 3 else "") if ops else " (views)"
        title, op = modules[nodes[0].name] or box_id, f"{len(nodes)} ops{listed}"
        kind = Kind.WORK if any(n.flops or n.bytes for n in nodes) else Kind.VIEW
    last = nodes[-1]
    return Box(
        id=box_id,
        title=title,
        op=op,
        module=modules[nodes[0].name],
        kind=kind,
        members=tuple(members),
        shape=last.shapes[0] if last.shapes else None,
        flops=sum(n.flops for n in nodes),
        bytes=sum(n.bytes for n in nodes),
        hw={h: _box_hw(doc, h, members, path) for h, path in critical.items()},
    )


def _critical_sets(doc: Doc) -> dict[str, frozenset[str]]:
    return {h: frozenset(s.critical_path.nodes) for h, s in doc.hardware.items()}


def _box_hw(doc: Doc, hw_id: str, members: list[str], critical: frozenset[str]) -> BoxHw:
    per = [doc.hardware[hw_id].nodes.get(m) for m in members]
    per = [p for p in per if p is not None]
    time_by_bound: dict[str, float] = {}
    for p in per:
        time_by_bound[p.bound] = time_by_bound.get(p.bound, 0.0) + p.time_s
    working = {b: t for b, t in time_by_bound.items() if b != "none"}
    bound = max(working, key=working.get) if working else "none"
    return BoxHw(bound, sum(p.time_s for p in per), any(m in critical for m in members), tuple(p.bound for p in per))


def _links(doc: Doc, owner: dict[str, str], folding: Folding) -> tuple[Link, ...]:
    """Edges between boxes; edges from one instance of a folded layer to the next are dropped."""
    paths = {h: s.critical_path.nodes for h, s in doc.hardware.items()}
    steps = {h: {(a, b) for a, b in zip(p, p[1:])} for h, p in paths.items()}
    links: dict[tuple[str, str], dict] = {}
    for e in doc.edges:
        a, b = owner.get(e.src), owner.get(e.dst)
        if a is None or b is None or a == b:
            continue
        ia, ib = folding.instance.get(e.src), folding.instance.get(e.dst)
        if ia and ib and ia[0] == ib[0] and ia[1] != ib[1]:
            continue  # instance k -> instance k+1 of a folded layer: the repeat itself
        link = links.setdefault((a, b), {"bytes": 0, "critical": {h: False for h in paths}})
        link["bytes"] += e.bytes
        for h in paths:
            link["critical"][h] |= (e.src, e.dst) in steps[h]
    return tuple(Link(a, b, v["bytes"], v["critical"]) for (a, b), v in links.items())


def build_display_graph(doc: Doc, level: Level | str = Level.OP, fold: bool = True) -> DisplayGraph:
    """Boxes and links to draw for ``doc`` at ``level``, repeated layers folded when ``fold``.

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis
    >>> from dfx.viz.document import read_document
    >>> d = read_document(example_analysis(nodes=[{"name": "x", "op": "placeholder", "outputs": [{"shape": [2]}]}]))
    >>> [b.title for b in build_display_graph(d).boxes]
    ['x']
    """
    level = Level(level)
    modules, params = module_of(doc), parameter_nodes(doc)
    folding = find_folds(doc, modules) if fold else find_folds(doc, {n.name: "" for n in doc.nodes})
    rep = folding.representative
    if level is Level.OP:
        groups = _groups_op(doc, rep)
    else:
        groups = _groups_module(doc, rep, params, modules)
    # A buffer nothing reads (BatchNorm's num_batches_tracked in eval mode) is a box with no edge:
    # a ResNet-18 drew twenty of them side by side, 20,562 px wide. Leave them out and count them.
    read = {e.src for e in doc.edges}
    state = ("parameter", "buffer", "constant")
    unused = tuple(
        n.name
        for n in doc.nodes
        if n.name not in read and (n.op == "get_attr" or (n.op == "placeholder" and n.input_kind in state))
    )
    for name in unused:
        groups.pop(name, None)
    critical = _critical_sets(doc)
    boxes = {bid: _box(doc, bid, members, modules, params, level, critical) for bid, members in groups.items()}
    owner = {m: bid for bid, members in groups.items() for m in members}
    owner.update({n: owner[r] for n, r in rep.items() if r in owner and n not in owner})
    hidden = sum(1 for n in params if n not in owner and n not in unused)
    return DisplayGraph(tuple(boxes.values()), _links(doc, owner, folding), level, folding.folds, hidden, unused)
