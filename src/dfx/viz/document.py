"""A typed, read-only view of the export document (``dfx.analysis/1``) for the pictures.

This is the only module of ``dfx.viz`` that reads the document's keys; every picture works from
the frozen records below. The document is described in ``docs/export-format.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dfx.errors import DfxError

__all__ = ["SCHEMA", "Doc", "DocEdge", "DocNode", "HwNode", "HwSummary", "read_document"]

SCHEMA = "dfx.analysis/1"


@dataclass(frozen=True)
class HwNode:
    """One node's evaluation on one profile (``hardware.<id>.nodes.<name>``)."""

    bound: str  # "compute", "memory" or "none"
    flops: int
    bytes: int
    time_s: float
    compute_time_s: float
    memory_time_s: float
    intensity_flop_per_byte: float
    bound_off_chip: str | None
    bound_on_chip: str | None
    peak_dtype: str | None
    lower_bound: bool  # the node has aten calls with no cost rule: its time is a lower bound


@dataclass(frozen=True)
class HwSummary:
    """One profile's evaluation of the whole graph (``hardware.<id>`` less its nodes)."""

    id: str
    execution_model: str
    off_chip_level: str | None
    on_chip_level: str | None
    ridge_dtype: str
    ridge_flop_per_byte: dict[str, float]
    serial_time_s: float
    critical_time_s: float
    critical_path: tuple[str, ...]
    partition_shift: tuple[tuple[str, str, str], ...]  # (node, from, to)
    parallelism: float
    bound_counts: dict[str, int]
    dtype_fallbacks: dict[str, str]
    arch_model: str | None
    nodes: dict[str, HwNode]
    raw: Mapping[str, Any]  # the profile's object as written, for fields added later


@dataclass(frozen=True)
class DocNode:
    """One graph node (``nodes[]``)."""

    name: str
    op: str
    target: str
    module_path: str
    category: str
    flops: int
    bytes_read: int
    bytes_written: int
    intensity_flop_per_byte: float
    dtype: str | None
    inputs: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    params: tuple[str, ...]
    input_kind: str | None = None  # placeholders: input, parameter, buffer or constant

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def op_label(self) -> str:
        """The target without the ``aten.`` prefix and ``.default`` overload: ``linear``, ``add.Tensor``."""
        t = self.target
        if t.startswith("aten."):
            t = t[len("aten.") :]
        return t[: -len(".default")] if t.endswith(".default") else t


@dataclass(frozen=True)
class DocEdge:
    src: str
    dst: str
    bytes: int


@dataclass(frozen=True)
class Doc:
    """The export document, typed: model name, nodes in topological order, edges, profiles."""

    model_name: str
    model: Mapping[str, Any]
    totals: Mapping[str, Any]
    nodes: tuple[DocNode, ...]
    edges: tuple[DocEdge, ...]
    hardware: dict[str, HwSummary]

    def node(self, name: str) -> DocNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def _hw_node(d: Mapping[str, Any]) -> HwNode:
    return HwNode(
        bound=d.get("bound", "none"),
        flops=int(d.get("flops", 0)),
        bytes=int(d.get("bytes", 0)),
        time_s=float(d.get("time_s", 0.0)),
        compute_time_s=float(d.get("compute_time_s", 0.0)),
        memory_time_s=float(d.get("memory_time_s", 0.0)),
        intensity_flop_per_byte=float(d.get("intensity_flop_per_byte", 0.0)),
        bound_off_chip=d.get("bound_off_chip"),
        bound_on_chip=d.get("bound_on_chip"),
        peak_dtype=d.get("peak_dtype"),
        lower_bound=bool(d.get("unknown_ops")),
    )


def _hw_summary(hw_id: str, d: Mapping[str, Any]) -> HwSummary:
    cp = d.get("critical_path", {})
    return HwSummary(
        id=hw_id,
        execution_model=d.get("execution_model", ""),
        off_chip_level=d.get("off_chip_level"),
        on_chip_level=d.get("on_chip_level"),
        ridge_dtype=d.get("ridge_dtype", ""),
        ridge_flop_per_byte={k: float(v) for k, v in d.get("ridge_flop_per_byte", {}).items()},
        serial_time_s=float(d.get("serial_time_s", 0.0)),
        critical_time_s=float(cp.get("time_s", 0.0)),
        critical_path=tuple(cp.get("nodes", ())),
        partition_shift=tuple((s["node"], s["from"], s["to"]) for s in d.get("partition_shift", ())),
        parallelism=float(d.get("parallelism", {}).get("parallelism", 1.0)),
        bound_counts=dict(d.get("bound_counts", {})),
        dtype_fallbacks=dict(d.get("dtype_fallbacks", {})),
        arch_model=d.get("arch_model"),
        nodes={name: _hw_node(v) for name, v in d.get("nodes", {}).items()},
        raw=d,
    )


def _doc_node(d: Mapping[str, Any]) -> DocNode:
    return DocNode(
        name=d["name"],
        op=d["op"],
        target=str(d.get("target", "")),
        module_path=d.get("module_path", ""),
        category=d.get("category", "none"),
        flops=int(d.get("flops", 0)),
        bytes_read=int(d.get("bytes_read", 0)),
        bytes_written=int(d.get("bytes_written", 0)),
        intensity_flop_per_byte=float(d.get("intensity", 0.0)),
        dtype=d.get("dtype"),
        inputs=tuple(d.get("inputs", ())),
        shapes=tuple(tuple(o.get("shape", ())) for o in d.get("outputs", ())),
        params=tuple(d.get("params", ())),
        input_kind=d.get("input_kind"),
    )


def read_document(doc: Mapping[str, Any]) -> Doc:
    """Read an export document (``Analysis.to_dict()`` or a loaded ``analysis.json``).

    Raises
    ------
    DfxError
        If the document is not ``dfx.analysis/1``.

    Examples
    --------
    >>> d = read_document({"schema": "dfx.analysis/1", "model": {"name": "m"}, "nodes": [], "edges": []})
    >>> d.model_name, d.nodes
    ('m', ())
    """
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema != SCHEMA:
        raise DfxError(f"not a dfx export document: schema is {schema!r}, expected {SCHEMA!r}")
    try:
        return Doc(
            model_name=str(doc.get("model", {}).get("name", "model")),
            model=doc.get("model", {}),
            totals=doc.get("totals", {}),
            nodes=tuple(_doc_node(n) for n in doc["nodes"]),
            edges=tuple(DocEdge(e["src"], e["dst"], int(e.get("bytes", 0))) for e in doc["edges"]),
            hardware={h: _hw_summary(h, v) for h, v in doc.get("hardware", {}).items()},
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise DfxError(f"malformed dfx.analysis/1 document: missing or bad field {exc}") from None
