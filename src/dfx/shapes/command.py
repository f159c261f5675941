"""The ``dfx guards`` and ``dfx buckets`` commands. Thin: parse, call :mod:`dfx.shapes.api`, print or write.

``dfx.cli`` adds them with :func:`register`. Only typer is imported here; the work (and torch, for
guards) is imported inside each command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

__all__ = ["register"]

_MODEL_HELP = "A built-in model (see `dfx models`), path/to/file.py:ClassOrFactory, or hf:NAME_OR_CONFIG."


def guards_command(
    model: str = typer.Argument("gpt2-block", help=_MODEL_HELP),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help="Input shape for a file model, e.g. 2,128,64; repeat per input."),
    dynamic: Optional[List[str]] = typer.Option(None, "--dynamic", help="Mark a dimension dynamic: INPUT:DIM (name or index), e.g. x:1; repeatable."),
    check: Optional[List[str]] = typer.Option(None, "--check", help="New input shape, one per input, e.g. 2,64,768 or 2,64,768:bf16: does it pass every guard?"),
    batch: int = typer.Option(1, help="Batch size for built-in models."),
    seq: Optional[int] = typer.Option(None, help="Sequence length for built-in models."),
    dtype: str = typer.Option("fp32", help="fp32, bf16 or fp16."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.guards/1 document."),
) -> None:
    """Compile MODEL with TorchDynamo and list the guards PyTorch installed, grouped; --check new shapes."""
    from dfx.shapes.api import guards
    from dfx.shapes.console import guards_text
    from dfx.shapes.parse import parse_input_spec

    shapes = [parse_input_spec(s, "--input-shape").shape for s in input_shape] if input_shape else None
    report = guards(model, input_shapes=shapes, batch=batch, seq=seq, dtype=dtype, dynamic=dynamic or (),
                    check=check or None)  # fmt: skip
    doc = report.to_dict()
    sys.stdout.write((json.dumps(doc, indent=1) if as_json else guards_text(doc)) + "\n")


def buckets_command(
    model: Optional[str] = typer.Argument(None, help=_MODEL_HELP + " Optional: adds FLOP waste and predicted time."),
    lengths: Optional[Path] = typer.Option(None, "--lengths", help="File of input lengths, one integer a line."),
    dist: Optional[str] = typer.Option(None, "--dist", help="uniform:LO:HI, normal:MEAN:STD, lognormal:MU:SIGMA or zipf:S:MAX."),
    samples: int = typer.Option(1000, "--samples", help="How many lengths to draw from --dist."),
    seed: int = typer.Option(0, "--seed", help="Seed for --dist."),
    sizes: Optional[str] = typer.Option(None, "--buckets", help="Bucket sizes, strictly increasing, e.g. 128,256,512."),
    optimize: Optional[int] = typer.Option(None, "--optimize", help="Choose the K buckets that minimise padded cost (exact DP)."),
    ladder: Optional[str] = typer.Option(None, "--ladder", help="pow2 or linear:STEP."),
    overflow: str = typer.Option("error", "--overflow", help="Lengths beyond the largest bucket: error or split."),
    hw: str = typer.Option("nvidia-h100-sxm", "--hw", help="Hardware profile for predicted time (with MODEL)."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.buckets/1 document."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write buckets.json and waste.svg into this folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that already exist in --out."),
) -> None:
    """Pad lengths to buckets: padded tokens, waste, graphs to compile; with MODEL, FLOP waste and time."""
    from dfx.shapes.api import buckets
    from dfx.shapes.console import buckets_text
    from dfx.shapes.parse import parse_int_list

    plan = buckets(
        str(lengths) if lengths is not None else None, dist=dist, samples=samples, seed=seed,
        sizes=parse_int_list(sizes, "--buckets") if sizes is not None else None, optimize=optimize,
        ladder=ladder, overflow=overflow, model=model, hardware=hw,
    )  # fmt: skip
    doc = plan.to_dict()
    text = json.dumps(doc, indent=1)
    if out is not None:
        from dfx.report.files import write_outputs
        from dfx.shapes.plot import waste_svg

        written = write_outputs(out, {"buckets.json": text, "waste.svg": waste_svg(doc)}, force=force)
        sys.stderr.write("wrote " + ", ".join(str(p) for p in written) + "\n")
    sys.stdout.write((text if as_json else buckets_text(doc)) + "\n")


def register(app: typer.Typer) -> None:
    """Add ``guards`` and ``buckets`` to the ``dfx`` app."""
    app.command("guards")(guards_command)
    app.command("buckets")(buckets_command)
