"""Which module each node belongs to, which nodes are parameters, and repeated layers to fold.

A 32-layer model is 32 copies of one layer: ``layers.0`` .. ``layers.31`` run the same operators in
the same order. :func:`find_folds` finds such a run of identical instances under one module prefix,
and maps every node of instances 1..N-1 onto its counterpart in instance 0, so a picture can draw
the layer once and label it ``x32``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dfx.viz.document import Doc

__all__ = ["Fold", "Folding", "find_folds", "module_of", "parameter_nodes"]

_INDEX = re.compile(r"^(?P<prefix>.*?)(?:^|\.)(?P<index>\d+)(?:\.|$)")
_NON_WORD = re.compile(r"[^0-9A-Za-z]")


def _consumers(doc: Doc) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {n.name: [] for n in doc.nodes}
    for n in doc.nodes:
        for src in n.inputs:
            out.setdefault(src, []).append(n.name)
    return out


def parameter_nodes(doc: Doc) -> frozenset[str]:
    """Placeholders and ``get_attr`` nodes that carry a parameter or buffer of a consumer.

    torch.export names a parameter's placeholder after its canonical name (``ln_1.weight`` ->
    ``p_ln_1_weight``); the consumer lists the canonical name in ``params``.
    """
    consumers, by_name = _consumers(doc), {n.name: n for n in doc.nodes}
    found = set()
    for n in doc.nodes:
        if n.op not in ("placeholder", "get_attr"):
            continue
        flat = _NON_WORD.sub("_", n.name if n.op == "placeholder" else n.target)
        params = {_NON_WORD.sub("_", p) for c in consumers[n.name] for p in by_name[c].params}
        if n.op == "get_attr" or any(flat.endswith(p) for p in params):
            found.add(n.name)
    return frozenset(found)


def module_of(doc: Doc) -> dict[str, str]:
    """Node name -> module path; a parameter takes its consumers' path when they all share one."""
    consumers, by_name, params = _consumers(doc), {n.name: n for n in doc.nodes}, parameter_nodes(doc)
    out = {}
    for n in doc.nodes:
        path = n.module_path
        if n.name in params and not path:
            paths = {by_name[c].module_path for c in consumers[n.name]}
            path = paths.pop() if len(paths) == 1 else ""
        out[n.name] = path
    return out


@dataclass(frozen=True)
class Fold:
    """``count`` identical instances ``prefix.first`` .. ``prefix.last``, drawn once."""

    prefix: str
    first: int
    last: int
    count: int

    @property
    def label(self) -> str:
        """``layers.0..31 x32``."""
        dot = "." if self.prefix else ""
        return f"{self.prefix}{dot}{self.first}..{self.last} \u00d7{self.count}"

    @property
    def path(self) -> str:
        """The module path of the instance that is drawn: ``layers.0``."""
        return f"{self.prefix}.{self.first}" if self.prefix else str(self.first)


@dataclass(frozen=True)
class Folding:
    """The folds found, and node name -> the node that stands for it (itself when not folded)."""

    folds: tuple[Fold, ...]
    representative: dict[str, str]
    instance: dict[str, tuple[str, int]]  # node -> (fold prefix, instance index) for folded nodes


def _instances(doc: Doc, modules: dict[str, str]) -> dict[str, dict[int, list[str]]]:
    """prefix -> index -> node names in topological order, at the outermost numbered segment."""
    out: dict[str, dict[int, list[str]]] = {}
    for n in doc.nodes:
        m = _INDEX.match(modules[n.name])
        if m:
            out.setdefault(m["prefix"], {}).setdefault(int(m["index"]), []).append(n.name)
    return out


def _signature(doc_nodes: dict, names: list[str], modules: dict[str, str], stem: str) -> tuple:
    """What must match between instances: operator (a placeholder's name differs), path below the stem, shapes."""

    def op(n):
        return n.op if n.op in ("placeholder", "get_attr") else n.op_label

    return tuple((op(doc_nodes[n]), modules[n][len(stem) :], doc_nodes[n].shapes) for n in names)


def find_folds(doc: Doc, modules: dict[str, str] | None = None) -> Folding:
    """Find repeated layers: instances under one prefix with the same operators, paths and shapes.

    Examples
    --------
    >>> Fold("layers", 0, 31, 32).label
    'layers.0..31 ×32'
    """
    modules = modules if modules is not None else module_of(doc)
    by_name = {n.name: n for n in doc.nodes}
    rep = {n.name: n.name for n in doc.nodes}
    instance: dict[str, tuple[str, int]] = {}
    folds = []
    for prefix, groups in _instances(doc, modules).items():
        if len(groups) < 2:
            continue
        first = min(groups)
        stems = {i: (f"{prefix}.{i}" if prefix else str(i)) for i in groups}
        base = _signature(by_name, groups[first], modules, stems[first])
        if any(_signature(by_name, groups[i], modules, stems[i]) != base for i in groups):
            continue
        folds.append(Fold(prefix, first, max(groups), len(groups)))
        for i, names in groups.items():
            for name, counterpart in zip(names, groups[first]):
                rep[name] = counterpart
                instance[name] = (prefix, i)
    return Folding(tuple(folds), rep, instance)
