"""The ``dfx calibrate`` and ``dfx validate`` commands. Thin: parse, call :mod:`dfx.measure`, print or write.

``dfx.cli`` adds them with :func:`register`. Only typer is imported here; torch and the work are
imported inside each command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from dfx.options import INPUT_SHAPE_HELP, MODEL_HELP


__all__ = ["register"]


def _progress(total: int):
    """A rich progress bar on stderr and the callback that advances it."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=True
    )
    task = bar.add_task("calibrating", total=total)
    seen = []

    def step(label: str) -> None:
        if seen:
            bar.advance(task)
        seen.append(label)
        bar.update(task, description=label)

    return bar, step


def calibrate_command(
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    dtype: Optional[List[str]] = typer.Option(
        None, "--dtype", help="Dtype to measure a GEMM peak for (fp32, bf16, fp16); repeat for several. Default fp32."
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the profile (YAML) to this file; use it with --hw."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.calibration/1 document."),
    json_out: Optional[Path] = typer.Option(
        None,
        "--json-out",
        help="Write the dfx.calibration/1 document (for validate --calibration) to this file, only when calibrate succeeds.",
    ),
    budget_s: float = typer.Option(45.0, "--budget-s", help="Roughly how many seconds to spend measuring."),
    allow_busy: bool = typer.Option(
        False,
        "--allow-busy",
        help="Keep the figures when the machine was too busy to trust them (the verdict line says why); by default calibrate refuses. A memory hierarchy that contradicts itself is refused either way.",
    ),
) -> None:
    """Measure this machine (GEMM peak, bandwidth per cache level, per-op overhead) as a hardware profile."""
    import yaml

    from dfx.analysis import normalize_dtype_or_fail
    from dfx.errors import DfxError
    from dfx.hardware import parse_profile
    from dfx.measure.calibration import calibrate
    from dfx.report.files import check_targets, write_outputs

    dtypes = tuple(dict.fromkeys(normalize_dtype_or_fail(d) for d in (dtype or ["fp32"])))
    if out is not None:
        if out.suffix not in (".yaml", ".yml", ".json"):
            raise DfxError(f"--out {out} must end in .yaml, .yml or .json so that --hw can load it")
        check_targets(out.parent if str(out.parent) else ".", [out.name], force=force)
    if json_out is not None:
        if json_out.suffix != ".json":
            raise DfxError(f"--json-out {json_out} must end in .json")
        if out is not None and json_out.resolve() == out.resolve():
            raise DfxError(f"--json-out {json_out} is also --out: give the profile and the document two files")
        check_targets(json_out.parent if str(json_out.parent) else ".", [json_out.name], force=force)
    from dfx.measure.calibration import check_calibrate_args

    check_calibrate_args(device, budget_s)  # before the progress bar, so that an error is one clean line
    # overheads (2), GEMM peaks, bandwidth and its 3 levels, table, attention, convs, vector, residency,
    # cold GEMM, after-GEMM, reference
    bar, step = _progress(15)
    with bar:
        cal = calibrate(device=device, dtypes=dtypes, budget_s=budget_s, on_step=step)
    profile = cal.to_profile()
    parse_profile(profile, "calibrated")  # the profile must load before anything is written
    for warning in cal.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if cal.verdict is not None:
        if cal.verdict.busy and not allow_busy:
            raise DfxError(
                "calibrate refused: "
                + cal.verdict.line.removeprefix("verdict: ")
                + ", or pass --allow-busy to keep them"
            )
        if as_json:  # the text summary ends with it
            sys.stderr.write(cal.verdict.line + "\n")
    if out is not None:
        text = json.dumps(profile, indent=1) if out.suffix == ".json" else yaml.safe_dump(profile, sort_keys=False)
        written = write_outputs(out.parent if str(out.parent) else ".", {out.name: text}, force=force)
        sys.stderr.write("wrote " + ", ".join(str(p) for p in written) + "\n")
    if json_out is not None:
        parent = json_out.parent if str(json_out.parent) else "."
        written = write_outputs(parent, {json_out.name: json.dumps(cal.to_dict(), indent=1) + "\n"}, force=force)
        sys.stderr.write("wrote " + ", ".join(str(p) for p in written) + "\n")
    if as_json:
        sys.stdout.write(json.dumps(cal.to_dict(), indent=1) + "\n")
    else:
        from dfx.measure.console import calibration_text

        sys.stdout.write(calibration_text(cal.to_record()) + "\n")


def _from_calibration(path: Optional[Path], hw: Optional[str]):
    """The profile to predict with, the machine model of ``--calibration`` (or ``None``), and warnings."""
    if path is None:
        return hw or "host-cpu", None, []
    from dfx.measure.machine import load_calibration

    return load_calibration(path, hw)


def validate_command(
    model: str = typer.Argument("mlp", help=MODEL_HELP),
    hw: Optional[str] = typer.Option(
        None,
        "--hw",
        help="Profile to predict with: a file from `dfx calibrate --out`, an id or an alias. Default: the --calibration's profile, else host-cpu.",
    ),
    calibration: Optional[Path] = typer.Option(
        None,
        "--calibration",
        help="A `dfx calibrate --json` document: its profile and measured tables (overhead curve, vector rates, GEMM table, cache residency) feed the cache-aware prediction.",
    ),
    dtype: str = typer.Option("fp32", "--dtype", help="fp32, bf16, fp16 or fp64: the dtype the model runs in."),
    batch: Optional[int] = typer.Option(None, "--batch", help="Batch size (default 1)."),
    seq: Optional[int] = typer.Option(None, "--seq", help="Sequence length or image side (default: the model's own)."),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    repeat: int = typer.Option(10, "--repeat", help="Timed runs; each node keeps its median."),
    warmup: int = typer.Option(3, "--warmup", help="Untimed runs first."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    prediction: Optional[str] = typer.Option(
        None,
        "--prediction",
        help="roofline (dfx analyze's eager roofline) or cache-aware (bytes at the cache that holds them, and with --calibration the calibrated machine model). Default: cache-aware with --calibration, else roofline.",
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="Write validation.json and scatter.png into this folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that already exist in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.validation/1 document."),
    compiled: bool = typer.Option(
        False,
        "--compiled",
        help="Run MODEL through torch.compile (Inductor, CPU), time each generated kernel, and compare with dfx's compiled program kernel by kernel.",
    ),
) -> None:
    """Run MODEL for real, time every node (or, with --compiled, every Inductor kernel), and compare with dfx's prediction on --hw."""
    from dfx.errors import DfxError
    from dfx.measure.validation import validate

    for name, value in (("--batch", batch), ("--seq", seq), ("--repeat", repeat)):
        if value is not None and value <= 0:
            raise DfxError(f"{name} must be a positive integer, got {value}")
    if out is not None:
        from dfx.report.files import check_targets

        check_targets(out, ["validation.json", "scatter.png"], force=force)
    from dfx.analysis import normalize_dtype_or_fail
    from dfx.options import parse_input_shapes

    shapes = parse_input_shapes(input_shape)
    profile, machine, warnings = _from_calibration(calibration, hw)
    prediction = prediction or ("cache-aware" if calibration is not None else "roofline")
    if machine is not None and machine.gemm_table and normalize_dtype_or_fail(dtype) != machine.gemm_dtype:
        warnings.append(
            f"the calibration's tables were measured in {machine.gemm_dtype}, the model runs in "
            f"{normalize_dtype_or_fail(dtype)}: its matmuls are predicted at the profile's peak"
        )
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    result = validate(
        model,
        profile,
        dtype=dtype,
        batch=batch,
        seq=seq,
        repeat=repeat,
        warmup=warmup,
        device=device,
        prediction=prediction,
        machine=machine,
        input_shapes=shapes,
        compiled=compiled,
    )
    record = result.to_record()
    doc = record.to_dict()
    if out is not None:
        from dfx.viz.scatter import scatter_png
        from dfx.report.files import write_outputs

        files = {"validation.json": json.dumps(doc, indent=1), "scatter.png": scatter_png(record)}
        written = write_outputs(out, files, force=force)
        sys.stderr.write("wrote " + ", ".join(str(p) for p in written) + "\n")
    from dfx.measure.console import drift_notes, validation_text

    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        for note in drift_notes(record.run_field("drift"), record.run_field("overhead_drift")):
            sys.stderr.write(note.strip() + "\n")
    else:
        sys.stdout.write(validation_text(record) + "\n")


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` and ``validate`` to the ``dfx`` app."""
    app.command("calibrate")(calibrate_command)
    app.command("validate")(validate_command)
