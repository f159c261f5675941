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

__all__ = ["register"]

_MODEL_HELP = "A built-in model (see `dfx models`), path/to/file.py:ClassOrFactory, or hf:NAME_OR_CONFIG."


def _progress(total: int):
    """A rich progress bar on stderr and the callback that advances it."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)  # fmt: skip
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
    dtype: Optional[List[str]] = typer.Option(None, "--dtype", help="Dtype to measure a GEMM peak for (fp32, bf16, fp16); repeat for several. Default fp32."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the profile (YAML) to this file; use it with --hw."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.calibration/1 document."),
    budget_s: float = typer.Option(45.0, "--budget-s", help="Roughly how many seconds to spend measuring."),
) -> None:
    """Measure this machine (GEMM peak, bandwidth per cache level, per-op overhead) as a hardware profile."""
    import yaml

    from dfx.analysis import normalize_dtype_or_fail
    from dfx.errors import DfxError
    from dfx.hardware import parse_profile
    from dfx.measure.calibrate import calibrate
    from dfx.report.files import check_targets, write_outputs

    dtypes = tuple(dict.fromkeys(normalize_dtype_or_fail(d) for d in (dtype or ["fp32"])))
    if out is not None:
        if out.suffix not in (".yaml", ".yml", ".json"):
            raise DfxError(f"--out {out} must end in .yaml, .yml or .json so that --hw can load it")
        check_targets(out.parent if str(out.parent) else ".", [out.name], force=force)
    bar, step = _progress(1 + len(dtypes) + 3 + 1)
    with bar:
        cal = calibrate(device=device, dtypes=dtypes, budget_s=budget_s, on_step=step)
    profile = cal.to_profile()
    parse_profile(profile, "calibrated")  # the profile must load before anything is written
    for warning in cal.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if out is not None:
        text = json.dumps(profile, indent=1) if out.suffix == ".json" else yaml.safe_dump(profile, sort_keys=False)
        written = write_outputs(out.parent if str(out.parent) else ".", {out.name: text}, force=force)
        sys.stderr.write("wrote " + ", ".join(str(p) for p in written) + "\n")
    if as_json:
        sys.stdout.write(json.dumps(cal.to_dict(), indent=1) + "\n")
    else:
        from dfx.measure.console import calibration_text

        sys.stdout.write(calibration_text(cal.to_dict()) + "\n")


def validate_command(
    model: str = typer.Argument("mlp", help=_MODEL_HELP),
    hw: str = typer.Option("host-cpu", "--hw", help="Profile to predict with: a file from `dfx calibrate --out`, an id or an alias."),
    dtype: str = typer.Option("fp32", "--dtype", help="fp32, bf16 or fp16."),
    batch: int = typer.Option(1, "--batch", help="Batch size."),
    seq: Optional[int] = typer.Option(None, "--seq", help="Sequence length or image side (default: the model's own)."),
    repeat: int = typer.Option(10, "--repeat", help="Timed runs; each node keeps its median."),
    warmup: int = typer.Option(3, "--warmup", help="Untimed runs first."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    prediction: str = typer.Option("cache-aware", "--prediction", help="cache-aware (bytes at the cache that holds them) or roofline (dfx analyze's eager roofline)."),
    vector_flop_per_s: Optional[float] = typer.Option(None, "--vector-flop-per-s", help="cache-aware only: run elementwise and normalization FLOPs at this rate (vector_flop_per_s from `dfx calibrate --json`)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write validation.json and scatter.png into this folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that already exist in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.validation/1 document."),
) -> None:
    """Run MODEL for real, time every node, and compare with dfx's prediction on --hw."""
    from dfx.errors import DfxError
    from dfx.measure.validate import validate

    for name, value in (("--batch", batch), ("--seq", seq), ("--repeat", repeat)):
        if value is not None and value <= 0:
            raise DfxError(f"{name} must be a positive integer, got {value}")
    if out is not None:
        from dfx.report.files import check_targets

        check_targets(out, ["validation.json", "scatter.png"], force=force)
    result = validate(model, hw, dtype=dtype, batch=batch, seq=seq, repeat=repeat, warmup=warmup, device=device,
                      prediction=prediction, vector_flop_per_s=vector_flop_per_s)  # fmt: skip
    doc = result.to_dict()
    if out is not None:
        from dfx.measure.plot import scatter_png
        from dfx.report.files import write_outputs

        files = {"validation.json": json.dumps(doc, indent=1), "scatter.png": scatter_png(doc)}
        written = write_outputs(out, files, force=force)
        sys.stderr.write("wrote " + ", ".join(str(p) for p in written) + "\n")
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        from dfx.measure.console import validation_text

        sys.stdout.write(validation_text(doc) + "\n")


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` and ``validate`` to the ``dfx`` app."""
    app.command("calibrate")(calibrate_command)
    app.command("validate")(validate_command)
