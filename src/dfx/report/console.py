"""Readable terminal summaries with rich. Reads only the export document (``dfx.analysis/1``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["format_bytes", "format_flops", "format_seconds", "print_analysis", "print_graph"]


def format_seconds(t: float) -> str:
    """``1.5e-5`` -> ``"15.0 us"``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}" if unit == "s" else f"{t / scale:.1f} {unit}"
    return f"{t / 1e-9:.1f} ns"


def format_flops(f: float) -> str:
    """FLOPs in decimal units: ``1.77e10`` -> ``"17.72 GFLOP"``."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if f >= scale:
            return f"{f / scale:.2f} {unit}"
    return f"{f:.0f} FLOP"


def format_bytes(b: float) -> str:
    """Bytes in binary units: ``67108864`` -> ``"64.00 MiB"``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b:.0f} B"


def print_analysis(doc: dict[str, Any], console: Console | None = None, top: int = 10) -> None:
    """Print the per-profile summary (serial time, critical path, makespan), the top nodes by time and each critical path."""
    console = console or Console()
    model, totals = doc["model"], doc["totals"]
    console.print(
        f"[bold]{model.get('name', model.get('graph_name'))}[/bold]  "
        f"batch={model.get('batch', '-')} seq={model.get('seq', '-')} dtype={model.get('dtype', '-')}  "
        f"capture={model.get('capture_method')}  nodes={totals['node_count']}"
    )
    cats = ", ".join(f"{k} {format_flops(v)}" for k, v in totals["flops_by_category"].items() if v)
    console.print(
        f"FLOPs {format_flops(totals['flops'])} ({cats}; {totals['matmul_macs']:,} matmul MACs); traffic {format_bytes(totals['bytes_read'] + totals['bytes_written'])}; "
        f"parameters {totals['unique_parameter_count']:,} ({format_bytes(totals['unique_parameter_bytes'])} unique)"
    )
    for u in doc["coverage"]["unknown_ops"]:
        console.print(
            f"[yellow]no cost rule for {u['target']} ({u['count']} calls, in {', '.join(u['nodes'][:3])}): "
            "its cost is unknown, not zero; the times of those nodes are lower bounds[/yellow]",
            highlight=False,
        )
    hw = doc["hardware"]
    if not hw:
        return
    ids = list(hw)
    summary = Table(title="Per hardware profile", show_lines=False)
    summary.add_column("")
    for h in ids:
        summary.add_column(h, justify="right")
    levels = sorted({lvl for h in ids for lvl in hw[h]["ridge_flop_per_byte"]})
    for lvl in levels:
        summary.add_row(
            f"ridge vs {lvl} (FLOP/B)",
            *[_num(hw[h]["ridge_flop_per_byte"].get(lvl)) for h in ids],
        )
    for bound in ("compute", "memory"):
        summary.add_row(f"{bound}-bound nodes", *[str(hw[h].get("bound_counts", {}).get(bound, 0)) for h in ids])
    summary.add_row("execution model", *[str(hw[h].get("execution_model", "-")) for h in ids])
    programs = {h: hw[h].get("program") for h in ids}
    if any(programs.values()):
        summary.add_row("kernels (cores)", *[_kernels(programs[h]) for h in ids])
        summary.add_row("schedule", *[programs[h]["schedule_policy"] if programs[h] else "-" for h in ids])
    summary.add_row("serial time (one stream)", *[format_seconds(hw[h]["serial_time_s"]) for h in ids])
    summary.add_row(
        "critical path (infinite-resource lower bound)", *[format_seconds(hw[h]["critical_path"]["time_s"]) for h in ids]
    )
    summary.add_row("[bold]makespan (latency to quote)[/bold]", *[_makespan(hw[h]) for h in ids])
    eager = {h: hw[h].get("eager") for h in ids}
    if any(eager.values()):
        summary.add_row("eager serial time", *[format_seconds(eager[h]["serial_time_s"]) if eager[h] else "-" for h in ids])
        summary.add_row("eager makespan (one stream)", *[format_seconds(eager[h]["makespan_s"]) if eager[h] else "-" for h in ids])
    summary.add_row("parallelism (work/span)", *[_num(hw[h].get("parallelism", {}).get("parallelism")) for h in ids])
    summary.add_row("partition shift (nodes)", *[str(len(hw[h].get("partition_shift", []))) for h in ids])
    console.print(summary)
    for h in ids:
        for requested, used in hw[h].get("dtype_fallbacks", {}).items():
            console.print(
                f"[yellow]{h} lists no {requested} peak: {requested} nodes are timed at its {used} peak[/yellow]",
                highlight=False,
            )
    _print_top_nodes(doc, ids, console, top)
    for h in ids:
        path = hw[h]["critical_path"]["nodes"]
        shown = " -> ".join(path if len(path) <= 12 else path[:6] + ["..."] + path[-5:])
        console.print(f"[bold]critical path on {h}[/bold] ({len(path)} nodes): {shown}")


def _print_top_nodes(doc: dict[str, Any], ids: list[str], console: Console, top: int) -> None:
    hw = doc["hardware"]
    first = ids[0]
    ranked = sorted(doc["nodes"], key=lambda n: -hw[first]["nodes"].get(n["name"], {}).get("time_s", 0.0))
    table = Table(title=f"Top {top} nodes by time on {first}")
    for col in ("node", "category", "FLOPs", "bytes", "FLOP/B"):
        table.add_column(col, justify="left" if col in ("node", "category") else "right")
    for h in ids:
        table.add_column(f"{h}", justify="right")
    for n in ranked[:top]:
        cells = [
            n["name"],
            n["category"],
            format_flops(n["flops"]),
            format_bytes(n["bytes_read"] + n["bytes_written"]),
            f"{n['intensity']:.1f}",
        ]
        for h in ids:
            per = hw[h]["nodes"].get(n["name"], {})
            unknown = "  (+ unknown ops)" if n["unknown_ops"] else ""
            cells.append(f"{format_seconds(per.get('time_s', 0.0))} {per.get('bound', '')}{unknown}")
        table.add_row(*cells)
    console.print(table)


def _makespan(h: dict[str, Any]) -> str:
    value = h.get("makespan_s", h["serial_time_s"])
    return f"[bold]{format_seconds(value)}[/bold]"


def _kernels(program: dict[str, Any] | None) -> str:
    if not program:
        return "-"
    return f"{program['kernel_count']} on {program['cores']} cores, {100 * program['core_utilization']:.0f}% busy"


def _num(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:,.1f}" if isinstance(v, float) else str(v)


def print_graph(graph_dict: dict[str, Any], shapes: bool, console: Console | None = None) -> None:
    """Print a ``dfx.graph/1`` document as the table torch.fx prints (opcode, name, target, args, users)."""
    console = console or Console()
    nodes = graph_dict["nodes"]
    users: dict[str, list[str]] = {n["name"]: [] for n in nodes}
    for n in nodes:
        for src in dict.fromkeys(e[0] for e in n["inputs"]):
            users[src].append(n["name"])
    table = Table(title=f"{graph_dict['name']} (captured with {graph_dict['capture_method']})")
    for col in ("opcode", "name", "target", "args", "users"):
        table.add_column(col, overflow="fold")
    if shapes:
        for col in ("shape", "dtype", "stride"):
            table.add_column(col, overflow="fold")
    for n in nodes:
        row = [n["op"], n["name"], n["target"], n["args_repr"], ", ".join(users[n["name"]])]
        if shapes:
            outs = n["outputs"]
            row += [
                "; ".join(str(tuple(o["shape"])) for o in outs),
                "; ".join(o["dtype"] for o in outs),
                "; ".join(str(tuple(o["stride"])) if o.get("stride") is not None else "-" for o in outs),
            ]
        table.add_row(*row)
    console.print(table)
    if not shapes:
        console.print(
            "A traced fx graph holds opcodes, targets and arguments only; shapes, dtypes and strides "
            "come from propagation on fake tensors: add --shapes to see them."
        )
