"""The ``dfx simulate`` command. Thin: parse, analyse, simulate, print or write (with the HTML report).

``dfx.cli`` adds it with :func:`register`, so the simulator's options live beside the simulator.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console

from dfx.errors import DfxError
from dfx.report.files import check_targets
from dfx.options import INPUT_DTYPE_HELP, INPUT_SHAPE_HELP, MODEL_HELP

__all__ = ["register", "simulate_command"]

_MODEL_HELP = MODEL_HELP[:-1] + ", or a saved analysis.json (no torch needed)."
_TEXT_FILES = ("simulation.json", "trace.json")
_ANALYSIS = "analysis.json"  # the analysis simulated, so the folder's report has its DAG and roofline
_REPORT = "report.html"
_GANTT = "gantt.png"


def _check(pes: int, jitter: float, runs: int, policy: str) -> None:
    """One-line errors for bad option values, before any analysis runs."""
    from dfx.sim.api import parse_policy

    if pes < 1:
        raise DfxError(f"--pes must be an integer >= 1, got {pes}")
    if not (math.isfinite(jitter) and jitter >= 0):
        raise DfxError(f"--jitter must be a coefficient of variation >= 0 (e.g. 0.2), got {jitter}")
    if runs < 1:
        raise DfxError(f"--runs must be an integer >= 1, got {runs}")
    parse_policy(policy)


def _document(
    model: str,
    hw: str,
    batch: Optional[int],
    seq: Optional[int],
    dtype: str,
    execution_model: str = "compiled",
    input_shapes: Any = None,
) -> dict[str, Any]:
    """The analysis export document: read from a saved ``.json`` file, or analysed now."""
    path = Path(model)
    if path.suffix.lower() == ".json" and path.is_file():
        from dfx.report.documents import read_document
        from dfx.schema.ids import ANALYSIS_SCHEMAS_READ

        doc = read_document(path, ANALYSIS_SCHEMAS_READ, writer="the analysis.json `dfx analyze --out DIR` writes")
        from dfx.report.doccheck import check_analysis_document

        check_analysis_document(doc, str(path))
        return doc
    if (batch is not None and batch < 1) or (seq is not None and seq < 1):
        raise DfxError("--batch and --seq must be positive integers")
    from dfx.analysis import analyze

    if input_shapes is None and batch is None:
        batch = 1
    # compiled: the program's kernels, split into tiles or core shares, are the simulated tasks
    return analyze(
        model,
        hardware=[hw],
        dtype=dtype,
        batch=batch,
        seq=seq,
        execution_model=execution_model,
        input_shapes=input_shapes,
    ).to_dict()


def _out_names(out: Path, model: str) -> list[str]:
    """The files ``--out`` writes; ``analysis.json`` is left out when it is MODEL itself (already there)."""
    names = [*_TEXT_FILES, _ANALYSIS, _REPORT, _GANTT]
    source, target = Path(model), out / _ANALYSIS
    if target.is_file() and source.is_file() and os.path.samefile(source, target):
        names.remove(_ANALYSIS)
    return names


def _write(
    out: Path, names: list[str], result: Any, doc: dict[str, Any], analysis: dict[str, Any], force: bool
) -> list[Path]:
    """Render every file of ``names`` in memory, then write them all through ``write_outputs``.

    Nothing is written until everything is drawn, and ``write_outputs`` checks every target before
    writing any, so a refusal or a failure leaves the folder as it was. The report's timeline is
    inline SVG drawn from ``doc`` by ``dfx.viz``, not the Gantt PNG.
    """
    from dfx.report.files import write_outputs
    from dfx.sim.errors import SimulationError
    from dfx.sim.gantt import render_gantt
    from dfx.sim.trace import chrome_trace
    from dfx.viz import render_report

    err = Console(stderr=True)
    report = render_report(analysis, simulation=doc)  # coloured by the simulated profile
    for note in report.notes:
        err.print(note, highlight=False, markup=False)
    files: dict[str, str | bytes] = {
        "simulation.json": json.dumps(doc, indent=1),
        "trace.json": json.dumps(chrome_trace(result)),
        _ANALYSIS: json.dumps(analysis, indent=1),
        _REPORT: report.files[_REPORT],
    }
    try:
        files[_GANTT] = render_gantt(result, "png")
    except SimulationError as exc:  # matplotlib missing: the other files still stand
        err.print(f"[yellow]skipped {_GANTT}:[/yellow] {exc}", highlight=False)
    return write_outputs(out, {name: data for name, data in files.items() if name in names}, force=force)


def simulate_command(
    model: str = typer.Argument("gpt2-block", help=_MODEL_HELP),
    hw: str = typer.Option(..., "--hw", help="Hardware profile id, alias or file whose latencies time the nodes."),
    pes: int = typer.Option(1, "--pes", help="Number of identical processing elements."),
    policy: str = typer.Option("both", "--policy", help="static, dynamic or both."),
    jitter: float = typer.Option(
        0.0, "--jitter", help="Coefficient of variation of run-time jitter (lognormal, mean 1)."
    ),
    runs: int = typer.Option(1, "--runs", help="Number of jittered runs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the jitter draws."),
    steps: bool = typer.Option(False, "--steps", help="Print the firing sequence step by step."),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    dtype: str = typer.Option("bf16", help="bf16 (default: machines are compared at bf16), fp16 or fp32."),
    input_shape: Optional[List[str]] = typer.Option(
        None,
        "--input-shape",
        help=INPUT_SHAPE_HELP,
    ),
    input_dtype: Optional[List[str]] = typer.Option(None, "--input-dtype", help=INPUT_DTYPE_HELP),
    out: Optional[Path] = typer.Option(
        None, help="Write simulation.json, trace.json (Perfetto), gantt.png, analysis.json and report.html here."
    ),
    force: bool = typer.Option(False, help="Overwrite files that already exist in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the simulation document (dfx.simulation/1) to stdout."),
    execution_model: str = typer.Option(
        "compiled",
        "--execution-model",
        help="compiled: the program's kernels split into tiles, one PE per core; eager: one task per graph node.",
    ),
) -> None:
    """Simulate MODEL's dataflow graph on N PEs under static and dynamic scheduling."""
    from dfx.sim.api import simulate
    from dfx.sim.console import print_simulation

    _check(pes, jitter, runs, policy)
    names = _out_names(out, model) if out is not None else []
    if out is not None:
        check_targets(out, names, force=force)  # before the analysis, whose results would be refused
    from dfx.options import parse_input_shapes

    analysis = _document(model, hw, batch, seq, dtype, execution_model, parse_input_shapes(input_shape, input_dtype))
    result = simulate(analysis, hw=hw, pes=pes, policy=policy, jitter_cv=jitter, runs=runs, seed=seed, steps=steps)
    record = result.to_record()
    doc = record.to_dict()
    if out is not None:
        written = _write(out, names, result, doc, analysis, force)
        if not as_json:
            Console(stderr=True).print("wrote " + ", ".join(str(p) for p in written), highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        print_simulation(record, Console())


def register(app: typer.Typer) -> None:
    """Add the ``simulate`` command to ``app``."""
    app.command("simulate")(simulate_command)
