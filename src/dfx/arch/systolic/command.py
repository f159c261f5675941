"""The ``dfx systolic`` command. Thin: parse, call :mod:`dfx.arch.systolic`, print.

``dfx.cli`` adds it with :func:`register`; this module imports only typer at import time.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from dfx.errors import DfxError
from dfx.schema.ids import SYSTOLIC_SCHEMA

__all__ = ["register", "systolic_command"]

_STEP_SEED_HELP = "Seed of the random integer matrices X, W used by --steps/--animate."


def _ints(text: str, count: int, flag: str, sep: str = ",") -> tuple[int, ...]:
    parts = [p.strip() for p in text.lower().split(sep)]
    if len(parts) != count or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise DfxError(f"{flag} wants {count} positive integers separated by {sep!r}, got {text!r}")
    return tuple(int(p) for p in parts)


def _sram(text: Optional[str]):
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) <= 0 or not all(v < float("inf") for v in values):  # NaN and inf fail too
        raise DfxError(f"--sram-kb wants IFMAP,FILTER,OFMAP sizes in KiB (e.g. 64,64,64), got {text!r}")
    return values


def systolic_command(
    gemm_dims: Optional[str] = typer.Option(None, "--gemm", help="GEMM sizes M,K,N: X[M,K] @ W[K,N]."),
    conv_layer: Optional[str] = typer.Option(
        None,
        "--conv",
        help="Conv layer IFMAP_H,IFMAP_W,FILTER_H,FILTER_W,CHANNELS,NUM_FILTERS[,STRIDE] (SCALE-Sim fields, no padding).",
    ),
    array: str = typer.Option("128x128", "--array", help="Array size RxC (rows x columns)."),
    dataflow: str = typer.Option("ws", "--dataflow", help="ws, os or is (SCALE-Sim's dataflows)."),
    sram_kb: Optional[str] = typer.Option(
        None, "--sram-kb", help="SRAM sizes IFMAP,FILTER,OFMAP in KiB (default: unlimited)."
    ),
    bandwidth: Optional[float] = typer.Option(
        None, "--bandwidth", help="DRAM bandwidth in words per cycle (default: unlimited, no stalls)."
    ),
    word_bytes: int = typer.Option(1, "--word-bytes", help="Bytes per word (SCALE-Sim: 1)."),
    pipelined: bool = typer.Option(
        False,
        "--pipelined",
        help="Overlap each fold's tile load with the previous fold (TPU), instead of SCALE-Sim's back-to-back folds.",
    ),
    steps: bool = typer.Option(
        False, "--steps", help="Run the functional cycle-by-cycle simulation and print its frames (small sizes)."
    ),
    animate: Optional[str] = typer.Option(
        None, "--animate", help="Write the step-by-step frames as an animated GIF (a PNG strip without pillow)."
    ),
    seed: int = typer.Option(0, "--seed", help=_STEP_SEED_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    force: bool = typer.Option(False, "--force", help="Overwrite the --animate file if it exists."),
) -> None:
    """Cycles, folds, utilization and traffic of a GEMM or conv layer on a systolic array (SCALE-Sim's model)."""
    from dfx.arch.systolic import conv, gemm, parse_conv, parse_dataflow

    if (gemm_dims is None) == (conv_layer is None):
        raise DfxError("give exactly one of --gemm M,K,N or --conv H,W,FH,FW,C,NF[,S]")
    rows, cols = _ints(array, 2, "--array", sep="x")
    flow = parse_dataflow(dataflow)
    options = dict(
        rows=rows,
        cols=cols,
        dataflow=flow,
        sram_kb=_sram(sram_kb),
        bandwidth=bandwidth,
        word_bytes=word_bytes,
        pipelined=pipelined,
    )
    layer = parse_conv(conv_layer) if conv_layer is not None else None
    m, k, n = layer.gemm_mkn if layer is not None else _ints(gemm_dims, 3, "--gemm")
    if steps or animate:  # refuse before any work: sizes, the seed, then the file
        from dfx.arch.systolic.stepsim import check_step_sizes

        check_step_sizes(m, k, n, rows, cols)
        if seed < 0:  # numpy's default_rng takes only non-negative seeds
            raise DfxError(f"--seed must be a non-negative integer, got {seed}")
    if animate is not None:
        from pathlib import Path

        from dfx.report.files import check_target_file

        check_target_file(animate, "--animate", force=force)
        if Path(animate).suffix.lower() not in ("", ".gif"):  # matplotlib picks its writer by the extension
            raise DfxError(f"--animate writes an animated GIF; give a .gif path, got {animate!r}")
    result = conv(layer, **options) if layer is not None else gemm(m, k, n, **options)
    doc = {"schema": SYSTOLIC_SCHEMA, **({"conv": layer.to_dict()} if layer else {}), **result.to_dict()}
    trace = _steps(m, k, n, rows, cols, flow, seed, animate, as_json, force) if (steps or animate) else None
    if trace is not None:
        doc["steps"] = trace.to_dict()
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        _print(result)


def _steps(m, k, n, rows, cols, flow, seed, animate, quiet, force=False):
    import numpy as np

    from dfx.arch.systolic.render import animate as write_animation
    from dfx.arch.systolic.render import text_frames
    from dfx.arch.systolic.stepsim import step

    rng = np.random.default_rng(seed)
    x, w = rng.integers(-3, 4, (m, k)).astype(float), rng.integers(-3, 4, (k, n)).astype(float)
    trace = step(x, w, rows=rows, cols=cols, dataflow=flow)
    if not quiet:
        sys.stdout.write(f"X =\n{x}\nW =\n{w}\n\n{text_frames(trace)}\n\n")
    if animate:
        written = write_animation(trace, animate, force=force)
        sys.stderr.write(f"wrote {written}\n")
    return trace


# Each printed field of SystolicResult and its meaning in a few words (docs/systolic.md, "Which
# convention each number uses"), short enough for an 80-column terminal.
_FIELDS = (
    ("compute_cycles", "cycles computing, as SCALE-Sim counts"),
    ("stall_cycles", "waiting for DRAM"),
    ("total_cycles", "compute + stalls"),
    ("last_cycle_index", "total - 1: what SCALE-Sim prints"),
    ("drain_cycles", "os: R per fold to shift outputs out"),
    ("compute_cycles_with_drain", "compute + drain (PB-18's count)"),
    ("folds", "row_folds x col_folds"),
    ("row_folds", "tiles over the array's rows"),
    ("col_folds", "tiles over the array's columns"),
    ("cycles_per_fold", "cycles of one fold (one tile)"),
    ("utilization", "MACs / (R x C x total_cycles)"),
    ("mapping_efficiency", "mean share of the R x C cells used"),
    ("sram_reads", "words: ifmap + filter"),
    ("sram_writes", "words of ofmap, partial sums too"),
    ("dram_bytes", "DRAM traffic in bytes"),
)


def _print(r) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{r.m}x{r.k}x{r.n} on {r.rows}x{r.cols} ({r.dataflow.value}{', pipelined' if r.pipelined else ''})"
    )
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_column("meaning")
    for key, meaning in _FIELDS:
        value = getattr(r, key)
        table.add_row(
            key,
            f"{value:,.4f}"
            if isinstance(value, float)
            else (f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)),
            meaning,
        )
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``systolic`` command to ``app``."""
    app.command("systolic")(systolic_command)
