"""The ``dfx dag`` command: a hand-made DAG from a table, its firing steps, critical path and list schedule.

Thin: read, call :func:`dfx.sim.handmade.solve_dag`, print or dump ``dfx.dag/1``. ``dfx.cli`` adds it
with :func:`register`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

if TYPE_CHECKING:
    from dfx.schema.dag import DagDoc

__all__ = ["print_dag", "register"]


def _fmt_s(seconds: float) -> str:
    from dfx.report.console import format_seconds

    return "0" if seconds == 0 else format_seconds(seconds)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g}"


def print_dag(doc: DagDoc, console: Console) -> None:
    """Print a ``dfx.dag/1`` document's record: nodes, firing steps, critical path, schedule, live bytes."""
    from rich.table import Table

    hw = doc.hardware
    title = f"Hand-made DAG, {len(doc.nodes)} nodes" + (f", timed on {hw}" if hw else "")
    if doc.ridges_flop_per_byte:
        title += (
            " (ridge "
            + ", ".join(f"{k.replace('_', '-')} {v:.3g} FLOP/B" for k, v in doc.ridges_flop_per_byte.items())
            + ")"
        )
    table = Table(title=title)
    for col in ("node", "inputs", "FLOPs", "bytes", "FLOP/B", "time", "bound", "off-chip", "on-chip"):
        table.add_column(col, justify="right" if col in ("FLOPs", "bytes", "FLOP/B", "time") else "left")
    for n in doc.nodes:
        table.add_row(
            n.name,
            " ".join(n.inputs) or "-",
            _num(n.flops),
            _num(n.bytes),
            "-" if n.intensity_flop_per_byte is None else f"{n.intensity_flop_per_byte:.3g}",
            _fmt_s(n.time_s) + ("" if n.time_given else "*"),
            n.bound or "-",
            n.bound_off_chip or "-",
            n.bound_on_chip or "-",
        )
    console.print(table)
    if not all(n.time_given for n in doc.nodes):
        console.print("* timed by the roofline: max(FLOPs / peak, bytes / bandwidth) + op overhead")
    console.print("\n[bold]Firing steps[/bold] (firing rule, unlimited processors):")
    for i, step in enumerate(doc.firing_steps, 1):
        console.print(f"  step {i}: {', '.join(step)}")
    cp = doc.critical_path
    console.print(f"\n[bold]Critical path[/bold] {_fmt_s(cp.time_s)}: {' -> '.join(cp.nodes)}")
    console.print(
        f"Work (one processor) {_fmt_s(doc.work_s)}; work / span {doc.work_s / cp.time_s:.3g}" if cp.time_s else ""
    )
    pes = doc.pes
    console.print(
        f"\n[bold]List schedule on {pes} processor{'s' if pes > 1 else ''}[/bold] (priority: {', '.join(doc.priority)})"
    )
    for p in range(pes):
        runs = [r for r in doc.schedule if r.pe == p]
        line = "  ".join(f"{r.name} [{_fmt_s(r.start_s)}, {_fmt_s(r.end_s)})" for r in runs)
        console.print(f"  P{p}: {line or 'idle'}", highlight=False)
    ratio = doc.makespan_s / doc.lower_bound_s if doc.lower_bound_s else 1.0
    console.print(
        f"Makespan {_fmt_s(doc.makespan_s)}; lower bound max(critical path, work / {pes}) "
        f"{_fmt_s(doc.lower_bound_s)} (x{ratio:.3g})"
    )
    mem = doc.memory
    if mem.peak_bytes or mem.capacity_bytes:
        from dfx.report.console import format_bytes

        cap = (
            "capacity unknown"
            if mem.capacity_bytes is None
            else (f"{'fits' if mem.fits else 'does NOT fit'} in {format_bytes(mem.capacity_bytes)} on chip")
        )
        console.print(f"Peak live bytes {format_bytes(mem.peak_bytes)} ({cap})")


def register(app: typer.Typer) -> None:
    """Add ``dfx dag`` to ``app``."""

    @app.command("dag")
    def dag_command(
        file: Path = typer.Argument(
            ..., help="A .csv, .yaml or .json table: node, inputs, and time_s or flops and bytes (docs/dag.md)."
        ),
        hw: Optional[str] = typer.Option(
            None,
            "--hw",
            help="Profile that times rows given as flops and bytes: an id, a file, or a quick profile such as peak=200T,bw=2T,onchip=32M.",
        ),
        pes: int = typer.Option(2, "--pes", help="Processors for the list schedule."),
        priority: Optional[str] = typer.Option(
            None,
            "--priority",
            help="rank (default: longest path to the exit first), file (the table's order) or node names, e.g. a,c,b.",
        ),
        capacity: Optional[str] = typer.Option(
            None, "--capacity", help="On-chip capacity for the live bytes, e.g. 32MB (default: --hw's)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the document (dfx.dag/1)."),
    ) -> None:
        """Firing steps, critical path and a list schedule on N processors of a hand-made DAG."""
        from dfx.errors import DfxError
        from dfx.sim.handmade import solve_dag

        capacity_bytes = None
        if capacity is not None:
            from dfx.hardware.units import parse_quantity

            try:
                text = capacity.strip()
                capacity_bytes = parse_quantity(text + "B" if text[-1:] in "kMGTPi" else text, "bytes")
            except ValueError as exc:
                raise DfxError(f"bad --capacity {capacity!r}: {exc}") from None
            if not capacity_bytes > 0:
                raise DfxError(f"--capacity must be a size above 0 such as 32MB, got {capacity!r}")
        record = solve_dag(file, hw=hw, pes=pes, priority=priority, capacity_bytes=capacity_bytes).to_record()
        if as_json:
            sys.stdout.write(json.dumps(record.to_dict(), indent=1) + "\n")
        else:
            print_dag(record, Console(width=None if sys.stdout.isatty() else 200))
