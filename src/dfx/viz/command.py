"""``dfx report``: redraw the pictures of a saved ``analysis.json`` (no torch needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

__all__ = ["register"]

COLOR_BY_HELP = "Profile whose bounds colour the DAG and whose critical path is bold (default: the first)."
LEVEL_HELP = "op: one box per node; module: one box per module. Repeated layers are folded at both."
SIMULATION_HELP = (
    "A simulation.json of this analysis (`dfx simulate --out` or `--json`): report.html gains its timeline."
)
VALIDATION_HELP = (
    "A validation.json of this model (`dfx validate --out` or `--json`): report.html gains the "
    "predicted-vs-measured scatter and its error figures."
)


def _read(path: Path, kind: str) -> dict:
    """The ``kind`` document (analysis, simulation, validation) in ``path``, or one line saying what it is instead."""
    from dfx.report.documents import read_document
    from dfx.schema.ids import ANALYSIS_SCHEMAS_READ, SIMULATION_SCHEMA, VALIDATION_SCHEMA

    schemas, writer = {
        "analysis": (ANALYSIS_SCHEMAS_READ, "the analysis.json `dfx analyze --out DIR` writes"),
        "simulation": (SIMULATION_SCHEMA, "the simulation.json of `dfx simulate --out DIR` (or its --json)"),
        "validation": (VALIDATION_SCHEMA, "the validation.json of `dfx validate --out DIR` (or its --json)"),
    }[kind]
    return read_document(path, schemas, writer=writer)


def report(
    analysis_json: Path = typer.Argument(..., help="An export document written by `dfx analyze --out` or `--json`."),
    out: Path = typer.Option(..., "--out", help="Folder for dag.*, roofline.* and report.html."),
    force: bool = typer.Option(False, help="Overwrite files that already exist in --out."),
    color_by: Optional[str] = typer.Option(None, "--color-by", help=COLOR_BY_HELP),
    level: str = typer.Option("op", "--level", help=LEVEL_HELP),
    simulation: Optional[Path] = typer.Option(None, "--simulation", help=SIMULATION_HELP),
    validation: Optional[Path] = typer.Option(None, "--validation", help=VALIDATION_HELP),
) -> None:
    """Draw the DAG, the roofline and report.html from a saved analysis.

    report.html gains the timeline of --simulation and the predicted-vs-measured scatter of --validation.
    """
    from rich.console import Console

    from dfx.errors import DfxError
    from dfx.viz import write_pictures
    from dfx.viz.valdoc import read_validation

    if level not in ("op", "module"):
        raise DfxError(f"--level must be op or module, got {level!r}")
    doc = _read(analysis_json, "analysis")
    from dfx.report.doccheck import check_analysis_document

    check_analysis_document(doc, str(analysis_json))
    sim = _read(simulation, "simulation") if simulation is not None else None
    val = read_validation(_read(validation, "validation"), source=str(validation)) if validation is not None else None
    written, notes = write_pictures(
        doc, out, force=force, color_by=color_by, level=level, simulation=sim, validation=val
    )
    err = Console(stderr=True, soft_wrap=True)
    for note in notes:
        err.print(note, highlight=False, markup=False)
    err.print("wrote " + ", ".join(str(p) for p in written), highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``dfx report`` to ``app``."""
    app.command("report")(report)
