"""The console table of each machine's MoE lowering, read from the export document only.

One column per profile: how it runs the experts (fixed capacity or a run-time grouped GEMM), the
padding and dropped-token fractions, and the time padding and run-time sizing cost
(:mod:`dfx.compile.moe`). Printed by ``dfx analyze`` and ``dfx compile`` for a graph with MoE layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["moe_table", "print_moe"]


def _seconds(t: float) -> str:
    from dfx.report.console import format_seconds

    return format_seconds(t)


def moe_table(records: Mapping[str, Any]) -> Any:
    """A rich ``Table`` of the :class:`~dfx.schema.analysis.MoeRecord` of each profile id, or ``None`` for none."""
    from rich.table import Table

    if not records:
        return None
    hw = {h: m.to_dict() for h, m in records.items()}
    ids = list(hw)
    first = records[ids[0]]
    title = f"Mixture of experts: routing {first.routing}, capacity factor {first.capacity_factor:g}"
    table = Table(title=title)
    table.add_column("")
    for h in ids:
        table.add_column(h, justify="right")

    def row(label: str, fn) -> None:
        table.add_row(label, *[fn(hw[h]) for h in ids])

    def capacity(m: dict[str, Any]) -> str:
        caps = sorted({x["capacity"] for x in m["layers"] if x["capacity"] is not None})
        return "sized at run time" if not caps else " / ".join(f"{c:,}" for c in caps) + " slots per expert"

    row("experts run as", lambda m: "fixed capacity" if m["strategy"] == "capacity" else "grouped GEMM")
    row("expert capacity", capacity)
    row(
        "slots computed / routed",
        lambda m: (
            f"{sum(x['computed_slots'] for x in m['layers']):,} / {sum(x['routed_slots'] for x in m['layers']):,}"
        ),
    )
    row("padding (wasted expert FLOPs)", lambda m: f"{m['padding_fraction']:.1%}")
    row("dropped tokens", lambda m: f"{m['dropped_fraction']:.1%}")
    row("expert GEMM time", lambda m: _seconds(m["expert_s"]))
    row("padding time", lambda m: _seconds(m["padding_s"]))
    row("run-time sizing overhead", lambda m: _seconds(m["overhead_s"]))
    return table


def print_moe(doc: Any, console: Any) -> None:
    """Print :func:`moe_table` of a ``dfx.analysis/1`` document's ``hardware.<id>.moe`` (nothing without MoE layers).

    ``doc``: the document, or the :class:`dfx.schema.analysis.AnalysisDoc` read from it already."""
    from dfx.schema.analysis import AnalysisDoc, read_analysis

    d = doc if isinstance(doc, AnalysisDoc) else read_analysis(doc)
    table = moe_table({h: r.moe for h, r in d.hardware.items() if r.moe is not None})
    if table is not None:
        console.print(table)
