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

from dfx.options import INPUT_SHAPE_HELP, MODEL_HELP

__all__ = ["register"]


def guards_command(
    model: str = typer.Argument("gpt2-block", help=MODEL_HELP),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    dynamic: Optional[List[str]] = typer.Option(
        None, "--dynamic", help="Mark a dimension dynamic: INPUT:DIM (name or index), e.g. x:1; repeatable."
    ),
    check: Optional[List[str]] = typer.Option(
        None,
        "--check",
        help="New input shape, one per input, e.g. 2,64,768 or 2,64,768:bf16: does it pass every guard?",
    ),
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
    report = guards(
        model, input_shapes=shapes, batch=batch, seq=seq, dtype=dtype, dynamic=dynamic or (), check=check or None
    )
    doc = report.to_dict()
    sys.stdout.write((json.dumps(doc, indent=1) if as_json else guards_text(doc)) + "\n")


def _file_analyzer(templates: List[str]):
    """For a file model: ``--input-shape 1,seq:int64`` (``seq`` is the bucket length) as an analyzer
    ``(model, seq, hardware) -> SeqCost`` for :func:`dfx.shapes.api.buckets`."""
    from dfx.errors import DfxError
    from dfx.ir.spec import InputShape

    parsed = []
    for text in templates:
        dims_text, _, dtype = text.partition(":")
        dims = [d.strip().lower() for d in dims_text.replace("x", ",").split(",") if d.strip()]
        if not all(d == "seq" or (d.isdigit() and int(d) > 0) for d in dims) or not dims:
            raise DfxError(
                f"bad --input-shape {text!r}; expected positive integers and seq (the bucket length), e.g. 1,seq:int64"
            )
        parsed.append((dims, dtype.strip() or None))
    if not any("seq" in dims for dims, _ in parsed):
        raise DfxError(
            "with buckets, a file model's --input-shape needs a seq dimension (the bucket length), e.g. 1,seq:int64"
        )

    def analyzer(model: str, seq: int, hardware: str):
        from dfx.analysis import analyze
        from dfx.shapes.cost import SeqCost

        shapes = [InputShape([seq if d == "seq" else int(d) for d in dims], dtype) for dims, dtype in parsed]
        doc = analyze(model, hardware=[hardware], input_shapes=shapes).to_dict()
        (hw_doc,) = doc["hardware"].values()
        return SeqCost(seq, float(doc["totals"]["flops"]), float(hw_doc["makespan_s"]))

    return analyzer


def buckets_command(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " Optional: adds FLOP waste and predicted time."),
    lengths: Optional[Path] = typer.Option(None, "--lengths", help="File of input lengths, one integer a line."),
    dist: Optional[str] = typer.Option(
        None, "--dist", help="uniform:LO:HI, normal:MEAN:STD, lognormal:MU:SIGMA or zipf:S:MAX."
    ),
    samples: int = typer.Option(1000, "--samples", help="How many lengths to draw from --dist."),
    seed: int = typer.Option(0, "--seed", help="Seed for --dist."),
    sizes: Optional[str] = typer.Option(None, "--buckets", help="Bucket sizes, strictly increasing, e.g. 128,256,512."),
    optimize: Optional[int] = typer.Option(
        None, "--optimize", help="Choose the K buckets that minimise padded cost (exact DP)."
    ),
    ladder: Optional[str] = typer.Option(None, "--ladder", help="pow2 or linear:STEP."),
    overflow: str = typer.Option("error", "--overflow", help="Lengths beyond the largest bucket: error or split."),
    hw: str = typer.Option("nvidia-h100-sxm", "--hw", help="Hardware profile for predicted time (with MODEL)."),
    input_shape: Optional[List[str]] = typer.Option(
        None,
        "--input-shape",
        help="A file model's input shape with seq for the bucket length, e.g. 1,seq:int64; repeat per input.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.buckets/1 document."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write buckets.json and waste.svg into this folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that already exist in --out."),
) -> None:
    """Pad lengths to buckets: padded tokens, waste, graphs to compile; with MODEL, FLOP waste and time."""
    from dfx.shapes.api import buckets
    from dfx.shapes.console import buckets_text
    from dfx.shapes.parse import parse_int_list

    plan = buckets(
        str(lengths) if lengths is not None else None,
        dist=dist,
        samples=samples,
        seed=seed,
        sizes=parse_int_list(sizes, "--buckets") if sizes is not None else None,
        optimize=optimize,
        ladder=ladder,
        overflow=overflow,
        model=model,
        hardware=hw,
        analyzer=_file_analyzer(input_shape) if input_shape else None,
    )
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
