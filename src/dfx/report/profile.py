"""``dfx hw show``'s table view of one profile: what a reader scans, with each number's source.

``dfx hw show --json`` prints the validated profile itself (``HardwareProfile.to_si_dict()``); this
view prints the same numbers in human units, one table for the peaks and one for the memory levels.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from dfx.report.console import format_bytes, format_seconds

__all__ = ["print_profile"]


def _rate(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:,.4g} {prefix}{unit}"
    return f"{value:,.4g} {unit}"


def print_profile(profile: Any, console: Console) -> None:
    """Print ``profile`` (a :class:`~dfx.hardware.HardwareProfile`) as tables with sources."""
    p = profile
    console.print(
        f"[bold]{p.name}[/bold]  ({p.id}; {p.kind.value}; {p.memory_model.value} memory; "
        f"{p.scheduling.commitment.value} schedule)",
        highlight=False,
    )
    if p.aliases:
        console.print("aliases: " + ", ".join(p.aliases), highlight=False)
    peaks = Table(title="Peak compute", title_justify="left")
    for col in ("dtype", "peak", "source"):
        peaks.add_column(col, overflow="fold")
    for dtype, value in p.peak_flop_per_s.items():
        peaks.add_row(dtype, _rate(value, "FLOP/s"), p.source_of(f"peak_flop_per_s.{dtype}") or "-")
    console.print(peaks)
    levels = Table(title="Memory (closest to compute first)", title_justify="left")
    for col in ("level", "capacity", "bandwidth", "ridge (bf16)", "on chip", "managed", "source"):
        levels.add_column(col, overflow="fold")
    peak = p.peak("bfloat16").flop_per_s
    for lv in p.memory:
        bw = lv.bandwidth_bytes_per_s
        levels.add_row(
            lv.name,
            "-"
            if lv.capacity_bytes is None
            else format_bytes(lv.capacity_bytes) + (f" ({lv.instances}x)" if lv.instances > 1 else ""),
            _rate(bw, "B/s"),
            "-" if not bw else f"{peak / bw:,.1f} FLOP/B",
            "yes" if lv.on_chip else "no",
            lv.managed.value,
            p.source_of(f"memory.{lv.name}.capacity_bytes") or p.source_of(f"memory.{lv.name}") or "-",
        )
    console.print(levels)
    console.print(
        f"op overhead {format_seconds(p.op_overhead_s) if p.op_overhead_s else '0'}; scheduling: "
        f"{p.scheduling.description}",
        highlight=False,
    )
    if p.compute.description:
        console.print(f"compute: {p.compute.description}", highlight=False)
    if p.notes:
        console.print(f"notes: {p.notes}", highlight=False)
    estimates = p.estimates()
    if estimates:
        console.print(f"estimates: {', '.join(estimates)}", highlight=False)
