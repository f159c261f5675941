"""Commands of the spatial models: ``dfx hw landscape``, ``dfx hw compare`` and ``dfx groq``.

``dfx.cli`` calls :func:`register` and :func:`register_hw`. Only typer is imported here; each
command imports its work when it runs. Thin: parse, call :mod:`dfx.arch.spatial`, print or write.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

__all__ = ["register", "register_hw"]

_DTYPES = ("fp32", "bf16", "fp16", "int8", "fp8")  # the weight widths a decoder is served in


def _profiles(ids: Optional[List[str]]):
    from dfx.hardware import list_profiles, load_profile

    return [load_profile(i) for i in ids] if ids else list_profiles()


_COMPARE_LABEL_CHARS = 26  # the dimension column and the table's borders
_COMPARE_CELL_CHARS = 22  # per profile: below this, words such as "software-scheduled" would be split


def _format_cell(name: str, value) -> str:
    from dfx.report.console import format_bytes

    if value is None:
        return "—"
    return format_bytes(value) if name == "on_chip_memory_per_chip" else str(value)


def hw_landscape(
    out: Path = typer.Option(..., help="Folder for landscape.png, landscape.svg and landscape.json."),
    force: bool = typer.Option(False, help="Overwrite files that already exist in --out."),
    hw: Optional[List[str]] = typer.Option(
        None, "--hw", help="Profiles to place (id, alias or file); repeat. Default: every shipped profile."
    ),
) -> None:
    """Draw the design space: memory model (x) against scheduling commitment (y), one point per profile."""
    from dfx.arch.spatial.landscape import landscape, write_map

    for path in write_map(landscape(_profiles(hw)), out, force=force):
        typer.echo(f"wrote {path}")


def hw_compare(
    ids: List[str] = typer.Argument(..., help="Profile ids, aliases or files to compare."),
    as_json: bool = typer.Option(
        False, "--json", help='Print {"dimensions": [...], "rows": {id: {dimension: value}}}.'
    ),
    layers: bool = typer.Option(
        False, "--layers", help="Add the six-layer execution model (dfx's own synthesis) of each profile."
    ),
) -> None:
    """Compare architectures across six design dimensions, each cell from the profile files."""
    from dfx.arch.spatial.landscape import DIMENSIONS, landscape

    profiles = _profiles(ids)
    land = landscape(profiles)
    stack = {p.id: (p.design.layers.model_dump() if p.design and p.design.layers else {}) for p in profiles}
    if as_json:
        doc = land.to_dict()
        if layers:
            doc["layers"] = stack
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    title = "design dimensions, from the profile files" + ("; layers: dfx's own six-layer synthesis" if layers else "")
    console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200)
    if console.width < _COMPARE_LABEL_CHARS + _COMPARE_CELL_CHARS * len(land.rows):
        # Too narrow for one column per profile without breaking words: one table per profile.
        for row in land.rows:
            one = Table(title=f"{row.profile_id}: {title}", show_header=False)
            one.add_column("dimension", style="bold", no_wrap=True)
            one.add_column("value")
            for name in DIMENSIONS:
                one.add_row(name.replace("_", " "), _format_cell(name, row.cells()[name]))
            for layer, text in stack[row.profile_id].items() if layers else ():
                one.add_row(f"layer: {layer.replace('_', ' ')}", text or "\u2014")
            console.print(one)
        return
    table = Table(title=title)
    table.add_column("dimension", style="bold")
    for row in land.rows:
        table.add_column(row.profile_id, overflow="fold")
    for name in DIMENSIONS:
        table.add_row(name.replace("_", " "), *(_format_cell(name, row.cells()[name]) for row in land.rows))
    if layers:
        from dfx.hardware import ExecutionLayers

        table.add_section()
        for layer in ExecutionLayers.model_fields:
            label = f"layer: {layer.replace('_', ' ')}"
            table.add_row(label, *(stack[row.profile_id].get(layer) or "—" for row in land.rows))
    console.print(table)


def groq(
    parameters: float = typer.Option(..., "--params", help="Parameter count of the decoder, e.g. 70e9."),
    hidden: int = typer.Option(..., help="Hidden size (the activation passed between chips per token)."),
    batch: int = typer.Option(1, help="Sequences decoded together."),
    dtype: str = typer.Option("bf16", help="Weight and activation dtype: fp32, bf16, fp16, int8 or fp8."),
    in_flight: int = typer.Option(1, "--in-flight", help="Batches sharing the chip pipeline."),
    hw: str = typer.Option("groq-lpu", "--hw", help="A Groq profile id, alias or file."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Chips a decoder's weights need on Groq TSPs, and its tokens per second."""
    from dfx.arch.spatial.groq import decoder_throughput
    from dfx.errors import DfxError
    from dfx.hardware import load_profile

    from dfx.limits import check_size

    from dfx.ir.spec import itemsize_bytes, normalize_dtype

    try:
        name = normalize_dtype(dtype)
    except ValueError:
        name = None
    if name not in {normalize_dtype(d) for d in _DTYPES}:
        raise DfxError(f"unknown --dtype {dtype!r}; expected one of {', '.join(_DTYPES)}")
    for flag, value in (("--hidden", hidden), ("--batch", batch), ("--in-flight", in_flight)):
        check_size(flag, value)
    result = decoder_throughput(
        load_profile(hw),
        parameters,
        hidden,
        batch=batch,
        bytes_per_parameter=itemsize_bytes(name),
        in_flight=in_flight,
    )
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=1) + "\n")
        return
    typer.echo(
        f"{result.chips} chips; stage {result.stage_s * 1e6:.2f} us, hop {result.hop_s * 1e6:.2f} us; "
        f"token latency {result.latency_s * 1e3:.3f} ms; {result.tokens_per_s:.1f} tokens/s at batch {batch}"
    )


def register(app: typer.Typer) -> None:
    """Add ``dfx groq``."""
    app.command("groq")(groq)


def register_hw(hw_app: typer.Typer) -> None:
    """Add ``dfx hw landscape`` and ``dfx hw compare``."""
    hw_app.command("landscape")(hw_landscape)
    hw_app.command("compare")(hw_compare)
