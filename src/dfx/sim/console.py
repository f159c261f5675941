"""The console summary of a simulation. It reads only the export document ``dfx.simulation/1``,
through its records (:mod:`dfx.schema.simulation`)."""

from __future__ import annotations

from typing import Any, Mapping

from rich.console import Console
from rich.table import Table

from dfx.report.console import format_bytes, format_seconds
from dfx.schema.simulation import SimulationDoc, read_simulation

__all__ = ["print_simulation", "print_steps"]

_PE_ROWS = 32  # beyond this many PEs the per-PE table shows the first rows and a summary line


def _title(doc: SimulationDoc) -> str:
    what = doc.model or "DAG"
    hw = f" on {doc.hardware}" if doc.hardware else ""
    jitter = f", jitter CV {doc.jitter_cv:g} (seed {doc.seed})" if doc.jitter_cv else ", no jitter"
    return f"[bold]{what}[/bold]{hw}: {doc.dag.nodes} nodes, {doc.pes} PEs, {doc.runs} run(s){jitter}"


def _makespan_table(doc: SimulationDoc) -> Table:
    bound = doc.lower_bound_s
    table = Table(title="Makespan")
    for col in ("policy", "mean", "p50", "p95", "predicted", "÷ bound", "util."):
        table.add_column(col, justify="left" if col == "policy" else "right", no_wrap=True)
    for pol in doc.policies:
        m = pol.makespan_s
        table.add_row(
            pol.name,
            format_seconds(m.mean),
            format_seconds(m.p50),
            format_seconds(m.p95),
            format_seconds(pol.predicted_makespan_s),
            f"{m.mean / bound:.3f}" if bound > 0 else "-",
            f"{pol.mean_utilization:.1%}",
        )
    return table


def _bounds_line(doc: SimulationDoc) -> str:
    lb = doc.lower_bounds
    return (
        f"lower bounds: critical path {format_seconds(lb.critical_path_s)}, "
        f"work / {doc.pes} PEs {format_seconds(lb.work_over_pes_s)} (total work {format_seconds(lb.work_s)})"
    )


def _utilization_table(doc: SimulationDoc) -> Table:
    table = Table(title="Utilization per PE", caption="mean over runs", min_width=30)
    table.add_column("PE", justify="right")
    for pol in doc.policies:
        table.add_column(pol.name, justify="right")
    for p in range(min(doc.pes, _PE_ROWS)):
        table.add_row(str(p), *(f"{pol.utilization[p]:.1%}" for pol in doc.policies))
    if doc.pes > _PE_ROWS:
        table.add_row(f"{_PE_ROWS}..{doc.pes - 1}", *("..." for _ in doc.policies))
    return table


def _memory_lines(doc: SimulationDoc) -> list[str]:
    lines = []
    for pol in doc.policies:
        mem = pol.memory
        line = f"{pol.name}: peak live bytes {format_bytes(mem.peak_bytes)} at {format_seconds(mem.peak_time_s)}"
        if mem.capacity_bytes is not None:
            verdict = "fits" if mem.fits else f"[red]exceeds it for {format_seconds(mem.over_capacity_s)}[/red]"
            line += f" against {format_bytes(mem.capacity_bytes)} on chip: {verdict}"
        lines.append(line)
    return lines


def _record(doc: SimulationDoc | Mapping[str, Any]) -> SimulationDoc:
    return doc if isinstance(doc, SimulationDoc) else read_simulation(doc)


def print_steps(doc: SimulationDoc | Mapping[str, Any], console: Console) -> None:
    """Print each policy's firing sequence (present when the simulation ran with ``steps``)."""
    for pol in _record(doc).policies:
        if pol.steps is None:
            continue
        table = Table(title=f"Firing steps, {pol.name} (run 0)")
        for col in ("step", "time", "finished", "ready", "fired"):
            table.add_column(col, justify="right" if col in ("step", "time") else "left", overflow="fold")
        for i, step in enumerate(pol.steps):
            table.add_row(
                str(i),
                format_seconds(step.time_s) if step.time_s else "0",
                " ".join(step.finished),
                " ".join(step.ready),
                " ".join(step.fired),
            )
        console.print(table)


def print_simulation(doc: SimulationDoc | Mapping[str, Any], console: Console | None = None) -> None:
    """Print both policies' makespans beside the lower bounds, utilization per PE and live bytes.

    ``doc`` is the document's record (``SimulationResult.to_record()``) or the document itself.
    """
    doc = _record(doc)
    console = console or Console()
    console.print(_title(doc))
    if doc.dag.untimed:
        console.print(f"[yellow]{len(doc.dag.untimed)} node(s) had no predicted time and ran in 0 s[/yellow]")
    console.print(_makespan_table(doc))
    console.print(_bounds_line(doc))
    if (c := doc.comparison) is not None:
        console.print(
            f"static / dynamic mean makespan = {c.static_over_dynamic:.3f}; static slower in "
            f"{c.static_slower_runs} of {c.runs} run(s), dynamic slower in {c.dynamic_slower_runs}"
        )
    console.print(_utilization_table(doc))
    for line in _memory_lines(doc):
        console.print(line)
    print_steps(doc, console)
