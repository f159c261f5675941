"""Human units and the facts shown for a box (its tooltip, its hover panel, its label)."""

from __future__ import annotations

from dfx.report.console import format_bytes, format_flops, format_seconds
from dfx.viz.graph import Box, Kind

__all__ = [
    "BOUND_FILL",
    "BOUND_LABEL",
    "box_facts",
    "box_label_lines",
    "format_bytes",
    "format_flops",
    "format_intensity",
    "format_seconds",
    "format_shape",
]

# Fill colour per bound: warm for compute-bound, cool for memory-bound, light grey for no work.
BOUND_FILL = {"compute": "#f4a261", "memory": "#5fa8d3", "none": "#eeeeee"}
BOUND_LABEL = {"compute": "compute-bound", "memory": "memory-bound", "none": "no work"}


def format_intensity(i: float) -> str:
    """``12.345`` -> ``"12.3 FLOP/B"``."""
    return f"{i:.3g} FLOP/B"


def format_shape(shape: tuple[int, ...] | None) -> str:
    return "" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def box_label_lines(box: Box, hw_id: str | None) -> list[str]:
    """The lines written inside a box: title, op and shape, cost, time on ``hw_id``."""
    head = [box.title]
    if box.kind in (Kind.PARAM, Kind.IO, Kind.VIEW):
        return head + [" ".join(s for s in (box.op if box.op != box.title else "", format_shape(box.shape)) if s)]
    lines = head + [f"{box.op}  {format_shape(box.shape)}".strip()]
    lines.append(
        f"{format_flops(box.flops)} \u00b7 {format_bytes(box.bytes)} \u00b7 {format_intensity(box.intensity_flop_per_byte)}"
    )
    if hw_id in box.hw:
        h = box.hw[hw_id]
        lines.append(f"{format_seconds(h.time_s)} \u00b7 {BOUND_LABEL[h.bound]}")
    return lines


def box_facts(box: Box) -> list[tuple[str, str]]:
    """Every number of a box, as (label, value) rows: the tooltip and the report's hover panel."""
    rows = [
        (
            "node" if len(box.members) == 1 else "nodes",
            ", ".join(box.members[:8]) + (" ..." if len(box.members) > 8 else ""),
        ),
        ("op", box.op),
        ("module", box.module or "(top level)"),
        ("output shape", format_shape(box.shape)),
        ("FLOPs", f"{box.flops:,} ({format_flops(box.flops)})"),
        ("bytes", f"{box.bytes:,} ({format_bytes(box.bytes)})"),
        ("intensity", format_intensity(box.intensity_flop_per_byte)),
    ]
    for hw_id, h in box.hw.items():
        crit = ", critical path" if h.critical else ""
        rows.append((hw_id, f"{BOUND_LABEL[h.bound]}, {format_seconds(h.time_s)}{crit}"))
    return rows
