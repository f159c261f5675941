"""``dfx hw show``'s table view of one profile: what a reader scans, with each number's source.

``dfx hw show --json`` prints the validated profile itself (``HardwareProfile.to_si_dict()``); this
view prints the same numbers in human units, one table for the peaks and one for the memory levels.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from dfx.report.console import format_bytes, format_seconds

__all__ = ["print_profile", "print_runtimes"]


def _rate(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:,.4g} {prefix}{unit}"
    return f"{value:,.4g} {unit}"


def _print_torus(p: Any, console: Console, slice_dims: tuple[int, ...] | None) -> None:
    """A torus profile's pod (or ``slice_dims`` of it): chips, peak, diameter, bisection."""
    from dfx.arch.systolic.torus import torus_of

    t = torus_of(p, slice_dims)
    what = "slice" if slice_dims is not None else "pod"
    bis = t.bisection_bytes_per_s
    console.print(
        f"{what}: {' x '.join(map(str, t.dims))} torus = {t.chips:,} chips, peak {t.chips:,} x "
        f"{_rate(t.chip_peak_flop_per_s, 'FLOP/s')} = {_rate(t.peak_flop_per_s, 'FLOP/s')} ({t.peak_dtype}); "
        f"diameter {' + '.join(str(d // 2 if t.wraparound else d - 1) for d in t.dims)} = {t.diameter_hops} hops; "
        f"bisection {t.bisection_links:,} links"
        + (f" x {_rate(t.link_bytes_per_s, 'B/s')} x 2 directions = {_rate(bis, 'B/s')}" if bis else ""),
        highlight=False,
    )


def _fractions(by_category: dict[str, float], plain: float) -> str:
    """``0.88 (normalization 0.44)``: a runtime's plain fraction and the categories that differ."""
    rest = ", ".join(f"{c} {v:g}" for c, v in sorted(by_category.items()))
    return f"{plain:g}" + (f" ({rest})" if rest else "")


def print_runtimes(profile: Any, console: Console) -> None:
    """The runtimes ``--runtime NAME`` can time ``profile`` with, and which one is its default.

    Every runtime the profile lists, then ``ideal`` (no runtime: fractions 1, ``op_overhead_s`` per
    kernel); the default (``default_runtime``, else ``ideal``) is marked and named in the title.
    """
    from dfx.hardware.schema import IDEAL_RUNTIME

    p = profile
    default = p.default_runtime or IDEAL_RUNTIME
    table = Table(
        title=f"Runtimes (--runtime NAME; default: {default})",
        title_justify="left",
        caption=p.source_of("default_runtime"),
    )
    for col in ("runtime", "default", "FLOP fraction", "bandwidth fraction", "fixed cost per kernel", "what runs it"):
        table.add_column(col, overflow="fold")
    for name, eff in p.runtimes.items():
        table.add_row(
            name,
            "yes" if name == default else "",
            _fractions(eff.flop_fraction_by_category, eff.flop_fraction),
            _fractions(eff.bandwidth_fraction_by_category, eff.bandwidth_fraction),
            format_seconds(eff.kernel_fixed_s) if eff.kernel_fixed_s else "0",
            eff.description,
        )
    table.add_row(
        IDEAL_RUNTIME,
        "yes" if default == IDEAL_RUNTIME else "",
        "1",
        "1",
        format_seconds(p.op_overhead_s) if p.op_overhead_s else "0",
        "the ideal roofline: peaks and bandwidths as published, the profile's op overhead per kernel",
    )
    console.print(table)


def print_profile(profile: Any, console: Console, slice_dims: tuple[int, ...] | None = None) -> None:
    """Print ``profile`` (a :class:`~dfx.hardware.HardwareProfile`) as tables with sources; a torus
    profile (TPU) also gets its pod's, or the slice ``slice_dims``', peak, diameter and bisection."""
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
    print_runtimes(p, console)
    console.print(
        f"op overhead {format_seconds(p.op_overhead_s) if p.op_overhead_s else '0'}; scheduling: "
        f"{p.scheduling.description}",
        highlight=False,
    )
    if p.compute.description:
        console.print(f"compute: {p.compute.description}", highlight=False)
    if p.notes:
        console.print(f"notes: {p.notes}", highlight=False)
    if (p.interconnect is not None and p.interconnect.torus_dims) or slice_dims is not None:
        _print_torus(p, console, slice_dims)
    estimates = p.estimates()
    if estimates:
        console.print(f"estimates: {', '.join(estimates)}", highlight=False)
