"""Check a saved analysis (``dfx.analysis/1``) before anything is drawn or simulated from it.

A hand-edited or damaged ``analysis.json`` must not turn into pictures or a simulation silently:
an edge to a node that does not exist, a cycle, a string, a negative number, NaN or infinity
where a count or a time belongs are each refused in one line naming the node and the field.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from dfx.errors import DfxError

__all__ = ["check_analysis_document"]

_NODE_NUMBERS = ("flops", "bytes_read", "bytes_written", "intensity")
_HW_NODE_NUMBERS = (
    "time_s",
    "compute_time_s",
    "memory_time_s",
    "overhead_s",
    "flops",
    "bytes",
    "intensity_flop_per_byte",
)
_HW_NUMBERS = ("serial_time_s", "makespan_s", "peak_flop_per_s")


def check_analysis_document(doc: Any, origin: str = "the analysis") -> None:
    """Raise :class:`DfxError` unless ``doc``'s graph and numbers can be drawn and simulated.

    Checks the parts every reader uses: unique node names; edges and node inputs naming existing
    nodes; no cycle; every count and time (``flops``, ``bytes*``, ``*_time_s``) a finite number
    >= 0. The schema tag itself is left to each reader.

    Raises
    ------
    DfxError
        One line: ``origin``, where the fault is, and what was found.

    Examples
    --------
    >>> check_analysis_document({"nodes": [{"name": "a"}, {"name": "b", "inputs": ["a"]}],
    ...                          "edges": [{"src": "a", "dst": "b"}]})
    >>> check_analysis_document({"nodes": [{"name": "a"}], "edges": [{"src": "a", "dst": "z"}]})
    Traceback (most recent call last):
    ...
    dfx.errors.DfxError: the analysis: edge a -> z names a node 'z' that is not in nodes; the document is damaged, write it again with dfx analyze --out
    """
    if not isinstance(doc, Mapping):
        raise DfxError(f"{origin}: expected a JSON object (an export document), got {type(doc).__name__}")
    nodes = _list(doc, "nodes", origin)
    names: list[str] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, Mapping) or not isinstance(node.get("name"), str):
            raise DfxError(f"{origin}: nodes[{i}] has no name")
        names.append(node["name"])
        for key in _NODE_NUMBERS:
            _number(node, key, f"{origin}: node {node['name']!r}")
    known = set(names)
    if len(known) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise DfxError(f"{origin}: node name {twice!r} appears twice; names must be unique")
    pairs = []
    for i, edge in enumerate(_list(doc, "edges", origin)):
        if not isinstance(edge, Mapping):
            raise DfxError(f"{origin}: edges[{i}] is not an object with src and dst")
        src, dst = edge.get("src"), edge.get("dst")
        for end in (src, dst):
            if end not in known:
                raise DfxError(
                    f"{origin}: edge {src} -> {dst} names a node {end!r} that is not in nodes; "
                    "the document is damaged, write it again with dfx analyze --out"
                )
        _number(edge, "bytes", f"{origin}: edge {src} -> {dst}")
        pairs.append((src, dst))
    for node in nodes:
        inputs = node.get("inputs", [])
        if not isinstance(inputs, list):
            raise DfxError(f"{origin}: node {node['name']!r}: inputs must be a list of node names")
        for src in inputs:
            if src not in known:
                raise DfxError(
                    f"{origin}: node {node['name']!r} reads {src!r}, which is not in nodes; "
                    "the document is damaged, write it again with dfx analyze --out"
                )
            pairs.append((src, node["name"]))
    _check_acyclic(names, pairs, origin)
    _check_hardware(doc.get("hardware", {}), known, origin)


def _list(doc: Mapping[str, Any], key: str, origin: str) -> list:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise DfxError(f"{origin}: {key!r} must be a list, got {type(value).__name__}")
    return value


def _number(d: Mapping[str, Any], key: str, where: str) -> None:
    if key not in d or d[key] is None:
        return
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DfxError(f"{where}: {key} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise DfxError(f"{where}: {key} must be a finite number >= 0, got {value!r}")


def _check_acyclic(names: list[str], pairs: list[tuple[str, str]], origin: str) -> None:
    """Kahn's algorithm: nodes left with inputs once no source remains lie on a cycle."""
    succ: dict[str, set[str]] = {n: set() for n in names}
    for src, dst in pairs:
        succ[src].add(dst)
    indegree = {n: 0 for n in names}
    for targets in succ.values():
        for dst in targets:
            indegree[dst] += 1
    ready = [n for n in names if indegree[n] == 0]
    seen = 0
    while ready:
        n = ready.pop()
        seen += 1
        for dst in succ[n]:
            indegree[dst] -= 1
            if indegree[dst] == 0:
                ready.append(dst)
    if seen < len(names):
        on_cycle = [n for n in names if indegree[n] > 0][:4]
        raise DfxError(f"{origin}: the graph has a cycle among {', '.join(on_cycle)}; a dataflow graph must be acyclic")


def _check_hardware(hardware: Any, known: set[str], origin: str) -> None:
    if not isinstance(hardware, Mapping):
        raise DfxError(f"{origin}: 'hardware' must be an object of profiles, got {type(hardware).__name__}")
    for hw_id, summary in hardware.items():
        if not isinstance(summary, Mapping):
            raise DfxError(f"{origin}: hardware {hw_id!r} is not an object")
        for key in _HW_NUMBERS:
            _number(summary, key, f"{origin}: hardware {hw_id!r}")
        timed = summary.get("nodes", {})
        if not isinstance(timed, Mapping):
            raise DfxError(f"{origin}: hardware {hw_id!r}: nodes must be an object")
        for name, record in timed.items():
            if name not in known:
                raise DfxError(f"{origin}: hardware {hw_id!r} times a node {name!r} that is not in nodes")
            if not isinstance(record, Mapping):
                raise DfxError(f"{origin}: hardware {hw_id!r}: node {name!r} is not an object")
            for key in _HW_NODE_NUMBERS:
                _number(record, key, f"{origin}: hardware {hw_id!r}: node {name!r}")
