"""Readable terminal summaries with rich. Reads only the export document (``dfx.analysis/1``)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from rich.console import Console
from rich.table import Table

from dfx.schema.analysis import AnalysisDoc, ParallelRecord, ProgramRecord, read_analysis
from dfx.schema.bound import Bound

__all__ = [
    "fallback_note",
    "format_bytes",
    "format_flops",
    "format_seconds",
    "print_analysis",
    "print_graph",
    "readable_name",
]


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


def print_analysis(doc: Mapping[str, Any] | AnalysisDoc, console: Console | None = None, top: int = 10) -> None:
    """Print the per-profile summary (serial time, critical path, makespan), the top nodes by time and each critical path.

    ``doc`` is read through :func:`dfx.schema.analysis.read_analysis`: a missing key is a
    :class:`~dfx.schema.SchemaError` naming it.
    """
    console = console or Console()
    d = doc if isinstance(doc, AnalysisDoc) else read_analysis(doc)
    totals = d.totals
    shown = {k: d.model_field(k) for k in ("batch", "seq", "dtype", "capture_method")}  # optional model fields
    fields = {k: "-" if shown[k] is None else str(shown[k]) for k in ("batch", "seq", "dtype")}
    step = d.inference["graph_step"] if d.inference and "graph_step" in d.inference else None
    if step:  # a phase: the graph is one step of it, not a sequence of `seq` tokens (a decode step's seq is 1)
        fields.pop("seq")
        fields = {"phase": str(d.model_field("phase")), **fields, "graph": f"the {step}"}
    console.print(
        f"[bold]{d.model_name}[/bold]  "
        + " ".join(f"{k}={v}" for k, v in fields.items())
        + f"  capture={shown['capture_method']}  nodes={totals.node_count}",
        highlight=False,
    )
    cats = ", ".join(f"{k} {format_flops(v)}" for k, v in totals.flops_by_category.items() if v)
    console.print(
        f"FLOPs {format_flops(totals.flops)} ({cats}; {totals.matmul_macs:,} matmul MACs); traffic {format_bytes(totals.bytes_read + totals.bytes_written)}; "
        f"parameters {totals.unique_parameter_count:,} ({format_bytes(totals.unique_parameter_bytes)} unique)"
    )
    for u in d.coverage.unknown_ops:
        console.print(
            f"[yellow]no cost rule for {u.target} ({u.count} calls, in {', '.join(u.nodes[:3])}): "
            "its cost is unknown, not zero; the times of those nodes are lower bounds[/yellow]",
            highlight=False,
        )
    hw = d.hardware
    if not hw:
        return
    ids = list(hw)
    summary = Table(title="Per hardware profile", show_lines=False)
    summary.add_column("")
    for h in ids:
        summary.add_column(h, justify="right")
    levels = sorted({lvl for h in ids for lvl in hw[h].ridge_flop_per_byte})
    for lvl in levels:
        summary.add_row(
            f"ridge vs {lvl} (FLOP/B)",
            *[_num(hw[h].ridge_flop_per_byte[lvl] if lvl in hw[h].ridge_flop_per_byte else None) for h in ids],
        )
    for bound in (Bound.COMPUTE, Bound.MEMORY):
        summary.add_row(f"{bound}-bound nodes", *[str(hw[h].bound_counts[bound.value]) for h in ids])
    summary.add_row("execution model", *[hw[h].execution_model for h in ids])
    summary.add_row("runtime (--runtime)", *[hw[h].runtime or "ideal" for h in ids])
    programs = {h: hw[h].program for h in ids}
    if any(p is not None for p in programs.values()):
        summary.add_row("program (kernels on cores)", *[_kernels(programs[h], hw[h].chips) for h in ids])
        summary.add_row("schedule", *[programs[h].schedule_policy if programs[h] else "-" for h in ids])

    # both are one chip's figures over all of the graph's work; a makespan split over chips can be shorter
    def one_chip(h: str) -> str:
        return " (1 chip)" if (hw[h].chips or 1) > 1 else ""

    summary.add_row("serial time (one stream)", *[format_seconds(hw[h].serial_time_s) + one_chip(h) for h in ids])
    summary.add_row(
        "critical path (infinite-resource lower bound)",
        *[format_seconds(hw[h].critical_path.time_s) + one_chip(h) for h in ids],
    )
    summary.add_row(
        "[bold]makespan (latency to quote)[/bold]", *[f"[bold]{format_seconds(hw[h].makespan_s)}[/bold]" for h in ids]
    )
    eager = {h: hw[h].eager for h in ids}
    if any(e is not None for e in eager.values()):
        summary.add_row(
            "eager serial time",
            *[format_seconds(eager[h].serial_time_s) + one_chip(h) if eager[h] else "-" for h in ids],
        )
        summary.add_row(
            "eager makespan (one kernel per operator)",
            *[format_seconds(eager[h].makespan_s) + one_chip(h) if eager[h] else "-" for h in ids],
        )
    if any("weight_load_s" in hw[h].extras for h in ids):  # weights resident on chip: the steady state quoted
        summary.add_row(
            "weight load, once (not in the latency)",
            *[format_seconds(hw[h].extras["weight_load_s"]) if "weight_load_s" in hw[h].extras else "-" for h in ids],
        )
    plans = {h: hw[h].parallel for h in ids}
    if any(p is not None for p in plans.values()):  # spread over chips (dfx.parallel.place): the split, its cost
        summary.add_row(
            "chips (dp x tp x pp x ep)" if any(p and p.plan.dp > 1 for p in plans.values()) else "chips (tp x pp x ep)",
            *[_plan_cell(plans[h], hw[h].chips) for h in ids],
        )
        summary.add_row(
            "communication (in the makespan)",
            *[format_seconds(plans[h].communication_s) if plans[h] else "-" for h in ids],
        )
        a2a = {h: _all_to_all_s(plans[h]) if plans[h] else None for h in ids}
        if any(a2a.values()):  # expert parallelism's dispatch and combine (dfx.parallel.place)
            summary.add_row(
                "of which ep all-to-all", *[format_seconds(a2a[h]) if a2a[h] is not None else "-" for h in ids]
            )
    dps = {h: plans[h].data_parallel if plans[h] else None for h in ids}
    if any(v is not None for v in dps.values()):  # a training step's data parallelism (dfx.parallel.data)
        summary.add_row(
            "data-parallel collectives (exposed)",
            *[
                f"{v.sharding} x{v.dp}: {format_seconds(v.collective_s)} ({format_seconds(v.exposed_s)})" if v else "-"
                for v in dps.values()
            ],
        )
    mems = {h: plans[h].memory if plans[h] else None for h in ids}
    if any(m is not None for m in mems.values()):  # a training step's bytes per chip (dfx.parallel.plan)
        summary.add_row(
            "memory per chip (state + kept for backward)",
            *[
                f"{format_bytes(m.per_chip_bytes)}"
                + (f" of {format_bytes(m.capacity_bytes)}" if m.capacity_bytes is not None else "")
                + (" (does not fit)" if m.fits is False else "")
                if m
                else "-"
                for m in mems.values()
            ],
        )
    summary.add_row("parallelism (work/span)", *[_num(hw[h].parallelism.parallelism) for h in ids])
    summary.add_row("partition shift (nodes)", *[str(len(hw[h].partition_shift)) for h in ids])
    console.print(summary)
    for h in ids:
        if plans[h]:
            console.print(f"{h}: split over chips chosen by {plans[h].plan.source}", highlight=False)
    note = fallback_note({h: hw[h] for h in ids})
    if note:
        console.print(f"[yellow]{note}[/yellow]", highlight=False)
    _print_top_nodes(d, ids, console, top)
    modules = {n.name: n.module_path for n in d.nodes}
    for h in ids:
        path = [readable_name(p, modules.get(p, "")) for p in hw[h].critical_path.nodes]
        shown_path = " -> ".join(path if len(path) <= 12 else path[:6] + ["..."] + path[-5:])
        console.print(f"[bold]critical path on {h}[/bold] ({len(path)} nodes): {shown_path}")


def fallback_note(hardware: Mapping[str, Any]) -> str | None:
    """One line for every dtype fallback that changed a time: ``None`` when none did.

    A profile that lists no peak for a dtype times that dtype's FLOPs at another's peak
    (``hardware.<id>.dtype_fallbacks``). That changes a number only for compute-bound nodes of that
    dtype: a memory-bound node's time is its bytes over the bandwidth, and a node without FLOPs
    (an int64 index, a copy) never reads the peak. Those fallbacks are left unsaid.

    Examples
    --------
    >>> from dfx.schema.analysis import ANALYSIS_SCHEMA, HardwareRecord, example_hardware
    >>> nodes = {"mm": {"bound": "compute", "dtype": "bfloat16"}, "idx": {"bound": "memory", "dtype": "int64"}}
    >>> hw = HardwareRecord.from_dict(
    ...     example_hardware(nodes, dtype_fallbacks={"bfloat16": "float16", "int64": "float64"}), ANALYSIS_SCHEMA
    ... )
    >>> print(fallback_note({"spyre": hw}))
    peaks not listed, timed at another dtype's: spyre bfloat16 at its float16 peak (1 compute-bound node)
    """
    parts = []
    for h, rec in hardware.items():
        for requested, used in rec.dtype_fallbacks.items():
            hit = sum(1 for n in rec.nodes.values() if n.dtype == requested and str(n.bound) == "compute")
            if hit:
                parts.append(f"{h} {requested} at its {used} peak ({hit} compute-bound node{'s' if hit != 1 else ''})")
    return "peaks not listed, timed at another dtype's: " + "; ".join(parts) if parts else None


def _all_to_all_s(plan: Any) -> float:
    """Seconds of the all-to-all spans of a split's per-chip timeline (expert parallelism; 0 without)."""
    timeline = plan.more["timeline"] if "timeline" in plan.more else ()
    return sum(
        e["end_s"] - e["start_s"] for e in timeline if e["kind"] == "communication" and "all-to-all" in e["name"]
    )


def _plan_cell(parallel: ParallelRecord | None, chips: int | None) -> str:
    """``"4 = tp 4 x pp 1 x ep 1"`` (``"256 = fsdp 256 x tp 1 x pp 1 x ep 1"`` with data parallelism);
    the chip count alone for a result on one chip."""
    if parallel is None:
        return "-" if chips is None else str(chips)
    p = parallel.plan
    dp = f"{p.sharding} {p.dp} x " if p.dp > 1 else ""
    return f"{p.chips} = {dp}tp {p.tp} x pp {p.pp} x ep {p.ep}"


_COPY = re.compile(r"(?P<base>.+)__L(?P<layer>\d+)")  # dfx.inference.repeat's name for layer k's copy of a node


def readable_name(name: str, module_path: str = "") -> str:
    """A node's name as the console shows it: a repeated layer's copy by its module path.

    A phase of a deep model captures two layers and repeats the second (:func:`dfx.inference.repeat.repeat_layer`);
    copy ``k`` of node ``linear_13`` is named ``linear_13__L<k>`` in the graph and the export, and
    shown as its module path with the node it copies.

    Examples
    --------
    >>> readable_name("linear_13__L2", "model.layers.2.mlp.down_proj")
    'model.layers.2.mlp.down_proj (copy of linear_13)'
    >>> readable_name("linear_13__L2"), readable_name("linear_13", "model.layers.1.mlp.down_proj")
    ('linear_13 (layer 2)', 'linear_13')
    """
    m = _COPY.fullmatch(name)
    if m is None:
        return name
    if module_path:
        return f"{module_path} (copy of {m['base']})"
    return f"{m['base']} (layer {m['layer']})"


def _print_top_nodes(d: AnalysisDoc, ids: list[str], console: Console, top: int) -> None:
    hw = d.hardware
    first = ids[0]

    def time_on(h: str, name: str) -> float:
        return hw[h].nodes[name].time_s if name in hw[h].nodes else 0.0

    ranked = sorted(d.nodes, key=lambda n: -time_on(first, n.name))
    split = any((hw[h].chips or 1) > 1 for h in ids)
    # a node's time is one chip's, unsplit (the split's own times are in the parallel timeline)
    table = Table(title=f"Top {top} nodes by time on {first}" + (" (each node on 1 chip, unsplit)" if split else ""))
    for col in ("node", "category", "FLOPs", "bytes", "FLOP/B"):
        table.add_column(col, justify="left" if col in ("node", "category") else "right")
    for h in ids:
        table.add_column(f"{h}{' (1 chip)' if (hw[h].chips or 1) > 1 else ''}", justify="right")
    for n in ranked[:top]:
        cells = [
            readable_name(n.name, n.module_path),
            n.category,
            format_flops(n.flops),
            format_bytes(n.bytes_read + n.bytes_written),
            f"{n.intensity_flop_per_byte:.1f}",
        ]
        for h in ids:
            bound = hw[h].nodes[n.name].bound.value if n.name in hw[h].nodes else ""
            unknown = "  (+ unknown ops)" if n.unknown_ops else ""
            cells.append(f"{format_seconds(time_on(h, n.name))} {bound}{unknown}")
        table.add_row(*cells)
    console.print(table)


def _kernels(program: ProgramRecord | None, chips: int | None = None) -> str:
    """``"3610 kernels on 20 cores (1 chip), 100% busy"``: the compiled program's kernels on one chip's
    cores (a profile's ``compute.cores``: SMs, superlanes, PEs), marked "1 chip" where the result is
    spread over several: the program is compiled for one chip, the split over chips is its own row.
    """
    if program is None:
        return "-"
    one_chip = " (1 chip)" if (chips or 1) > 1 else ""
    return (
        f"{program.kernel_count} kernels on {program.cores} core{'s' if program.cores != 1 else ''}{one_chip}, "
        f"{100 * program.core_utilization:.0f}% busy"
    )


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
