"""``dfx compile MODEL --hw ID``: the compiler's stages, its kernels, and (GPU) the real Inductor beside it.

Thin: capture and cost the model, compile it with the profile's target (:mod:`dfx.targets`), print or write. Torch is
reached only through :mod:`dfx.analysis` (capture) and :mod:`dfx.capture.inductor`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Mapping, Optional

import typer

from dfx.options import (
    CAPACITY_FACTOR_HELP,
    CORES_HELP,
    INPUT_SHAPE_HELP,
    MODEL_HELP,
    ROUTING_HELP,
    RUNTIME_HELP,
    parse_input_shapes,
)

if TYPE_CHECKING:
    from dfx.schema.compile import CompileDoc

__all__ = ["register"]

INDUCTOR_HELP = (
    "Also run the real torch.compile on the CPU and show its Dynamo, AOTAutograd and post-grad graphs "
    "and Inductor's fused kernels beside dfx's (default: on for GPU profiles, except with --json)."
)


# compile has no --weight-dtype or --kv-dtype (the shared hint names them): it compiles the model as captured
_STORAGE_HINT = (
    "fp8, int8 and int4 are storage widths dfx analyze prices (--dtype fp8, --weight-dtype); "
    "dfx compile compiles the model as captured"
)


def _print_program(doc: CompileDoc, console: Any, top: int) -> None:
    from rich.table import Table

    from dfx.report.console import format_bytes

    console.print(
        f"[bold]{doc.graph_name}[/bold] on [bold]{doc.profile}[/bold]: target {doc.target}, schedule {doc.commitment}"
    )
    stages = Table(title="stages", show_lines=False)
    for col in ("stage", "nodes", "kernels", "tiles", "off-chip", "changed", "notes"):
        stages.add_column(col, overflow="fold")
    for s in doc.stages:
        stages.add_row(
            s.name,
            str(s.nodes),
            str(s.kernels),
            str(s.tiles),
            format_bytes(s.offchip_bytes),
            "yes" if s.modified else "no",
            "; ".join(s.notes),
        )
    console.print(stages)
    kernels = Table(title=f"kernels ({min(top, len(doc.kernels))} of {len(doc.kernels)})")
    for col in ("kernel", "kind", "nodes", "off-chip", "on-chip", "tiles", "tile", "why"):
        kernels.add_column(col, overflow="fold")
    for k in doc.kernels[:top]:
        kernels.add_row(
            k.name,
            k.kind,
            " ".join(k.nodes),
            format_bytes(k.offchip_bytes),
            format_bytes(k.onchip_bytes),
            str(k.tiles),
            "x".join(map(str, k.tile_shape)),
            k.reason,
        )
    console.print(kernels)


def _print_inductor(inductor: Mapping[str, Any], console: Any) -> None:
    console.print("[bold]torch.compile on this machine (Inductor, CPU backend)[/bold]")
    for key, title in (
        ("dynamo_graph", "Dynamo graph"),
        ("aot_forward_graph", "AOTAutograd forward graph"),
        ("post_grad_graph", "Inductor post-grad graph"),
    ):
        text = inductor["pipeline"][key]
        console.print(f"  {title}: {text.count(chr(10))} lines (written in full with --out)")
    console.print("  Inductor's kernels after fusion (dfx nodes they compute):")
    for k in inductor["kernels"]:
        console.print(f"    {k['name']:28s} {k['kind']:9s} {' '.join(k['sources']) or k['ops'][0]}", highlight=False)
    a = inductor["agreement"]
    console.print(f"  dfx vs Inductor, non-GEMM operators: {a['agree']}/{a['operators']} agree ({a['fraction']:.0%})")
    for line in a["disagreements"]:
        console.print(f"    {line}", highlight=False)


def _print_toolchain(stages: Any, console: Any) -> None:
    from rich.table import Table

    table = Table(title="below dfx's compile stage: the toolchain to machine code (dfx.compile.toolchain)")
    for col in ("stage", "takes", "gives", "in dfx"):
        table.add_column(col, overflow="fold")
    for s in stages:
        table.add_row(s["stage"], s["takes"], s["gives"], s["dfx"])
    console.print(table)


def _lower_moe(costed: Any, profile: Any, routing: Any, factor: float, runtime: str | None = None) -> tuple[Any, Any]:
    """The graph as ``profile``'s target runs its MoE layers, and the lowering's record with its times
    (the expert kernels timed as ``dfx analyze`` times them); ``(costed, None)`` without MoE layers."""
    from dfx.analysis import evaluate_on
    from dfx.compile.moe import attach_moe, lower_moe
    from dfx.schema.analysis import MoeRecord
    from dfx.schema.ids import ANALYSIS_SCHEMA
    from dfx.targets import target_for

    lowered, moe = lower_moe(costed, target_for(profile), routing, factor)
    if moe is None:
        return costed, None
    timed = attach_moe(evaluate_on(lowered, profile, split=1, runtime=runtime), lowered, moe)
    return lowered, MoeRecord.from_dict(dict(timed.extras["moe"]), ANALYSIS_SCHEMA, "moe")


def compile_command(
    model: str = typer.Argument("gpt2-block", help=MODEL_HELP),
    hw: str = typer.Option("nvidia-h100-sxm", "--hw", help="Hardware profile id, alias or file."),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    dtype: str = typer.Option("bf16", help="bf16 (default, as dfx analyze), fp16 or fp32."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.compile/1 document to stdout."),
    out: Optional[Path] = typer.Option(
        None, help="Write compile.json, fusion.dot (and .svg with Graphviz), and Inductor's graphs."
    ),
    force: bool = typer.Option(False, help="Overwrite files that already exist in --out."),
    trace: Optional[Path] = typer.Option(
        None, "--trace", help="Write the scheduled program as a Chrome/Perfetto trace JSON (open in ui.perfetto.dev)."
    ),
    inductor: Optional[bool] = typer.Option(None, "--inductor/--no-inductor", help=INDUCTOR_HELP),
    top: int = typer.Option(20, help="How many kernels to list."),
    routing: Optional[str] = typer.Option(None, "--routing", help=ROUTING_HELP),
    capacity_factor: Optional[float] = typer.Option(
        None,
        "--capacity-factor",
        help=CAPACITY_FACTOR_HELP,
    ),
    cores: Optional[int] = typer.Option(None, "--cores", help=CORES_HELP),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    runtime: Optional[str] = typer.Option(None, "--runtime", help=RUNTIME_HELP),
) -> None:
    """Compile MODEL for one machine and show each compiler stage: fusion, tiling, placement, schedule."""
    from dfx.analysis import capture_spec, normalize_dtype_or_fail
    from dfx.request import load
    from dfx.report.out import stdout as _out
    from dfx.costs import annotate
    from dfx.targets import target_for
    from dfx.report.files import check_targets, write_outputs

    profile = load(hw)
    if cores is not None:  # part of the chip (dfx.hardware.restrict_to_cores)
        from dfx.hardware import restrict_to_cores

        profile = restrict_to_cores(profile, cores)
    profile.runtime_name(runtime)  # an unknown runtime fails before capture
    dtype_name = normalize_dtype_or_fail(dtype, _STORAGE_HINT)
    if out is not None:
        check_targets(out, ["compile.json", "fusion.dot"], force=force)
    if trace is not None:
        from dfx.report.files import check_target_file

        check_target_file(trace, "--trace", force=force)
    from dfx.compile.moe import check_capacity_factor
    from dfx.costs.moe import parse_routing
    from dfx.report.progress import with_progress

    moe_routing = parse_routing(routing)
    factor = check_capacity_factor(capacity_factor)
    graph, _info = with_progress(f"dfx compile {model}", capture_spec)(
        model, batch=batch, seq=seq, dtype=dtype_name, input_shapes=parse_input_shapes(input_shape)
    )
    costed, moe = _lower_moe(annotate(graph), profile, moe_routing, factor, runtime)
    target = target_for(profile)
    program = with_progress(f"dfx compile {model}: compiling for {profile.id}", target.compile)(costed, profile)
    record = program.to_record()
    if moe is not None:
        record = replace(record, moe=moe)
    toolchain = target.toolchain(profile)
    if toolchain:
        record = replace(record, toolchain=tuple(s.to_dict() for s in toolchain))
    run_inductor = inductor if inductor is not None else (target.runs_inductor and not as_json)
    if run_inductor:
        record = replace(
            record, inductor=inductor_report(model, program, costed, batch=batch or 1, seq=seq, dtype=dtype_name)
        )
    doc = record.to_dict()
    if trace is not None:  # the schedule (start and end of each kernel) is evaluate's: one profile's analysis
        from dfx.analysis import Analysis, evaluate_on
        from dfx.sim.program_trace import write_trace

        line = write_trace(
            trace, Analysis(costed, (evaluate_on(costed, profile, runtime=runtime),), _info).to_dict(), force=force
        )
        typer.echo(line, err=True)
    if out is not None:
        from dfx.viz.dot import graphviz_available, render_dot
        from dfx.viz.fusion import fusion_dot

        files: dict[str, str | bytes] = {
            "compile.json": json.dumps(doc, indent=1),
            "fusion.dot": fusion_dot(record, graph.to_dict()),
        }
        if graphviz_available():
            svg = render_dot(files["fusion.dot"], "svg")
            if svg is not None:
                files["fusion.svg"] = svg
        if record.inductor is not None:
            for key in ("dynamo_graph", "aot_forward_graph", "post_grad_graph"):
                files[f"inductor_{key}.txt"] = record.inductor["pipeline"][key]
        written = write_outputs(out, files, force=force)
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    _print_program(record, _out, top)
    if record.moe is not None:
        from dfx.compile.moe_console import moe_table

        _out.print(moe_table({profile.id: record.moe}))
    if record.toolchain:
        _print_toolchain(record.toolchain, _out)
    if record.inductor is not None:
        _print_inductor(record.inductor, _out)
    if out is not None:
        _out.print("wrote " + ", ".join(str(p) for p in written))


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_command)


def inductor_report(
    spec: str, program: Any, costed: Any, *, batch: int = 1, seq: int | None = None, dtype: str = "float32"
) -> dict[str, Any]:
    """The ``inductor`` object of ``dfx compile``'s document: the real torch.compile on the CPU beside ``program``.

    ``pipeline`` (Dynamo, AOTAutograd and post-grad graphs as text), ``kernels`` (Inductor's fused
    kernels and the dfx nodes they compute) and ``agreement`` (:func:`dfx.compile.compare.compare_groups`
    of ``program``'s fusion groups against Inductor's); ``docs/export-format.md``, ``dfx.compile/1``.
    """
    from dfx.capture.inductor import inductor_kernels, inductor_pipeline, runnable_model
    from dfx.compile.compare import compare_groups

    model, args, kwargs = runnable_model(spec, batch=batch, seq=seq, dtype=dtype)
    pipeline = inductor_pipeline(model, args, kwargs)
    kernels = inductor_kernels(model, args, kwargs)
    agreement = compare_groups(program, costed, [k.sources for k in kernels if k.kind != "extern"])
    return {"pipeline": pipeline.to_dict(), "kernels": [k.to_dict() for k in kernels], "agreement": agreement.to_dict()}
