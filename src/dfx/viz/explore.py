"""``dfx explore``: open a model in Google's Model Explorer with dfx's per-node overlays.

Model Explorer (``ai-edge-model-explorer``, the optional extra ``dfx[explorer]``) draws the
model's ``torch.export`` program; dfx adds one node-data overlay per profile and metric
(:mod:`dfx.viz.explorer`), which its side panel switches between.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import List, Optional

import typer

__all__ = ["register"]

_MODEL_HELP = "A built-in model (see `dfx models`), path/to/file.py:ClassOrFactory, or hf:NAME_OR_CONFIG."
_INSTALL = "pip install 'dfx[explorer]' (or pip install ai-edge-model-explorer)"


def _model_explorer():
    """The ``model_explorer`` package, or a :class:`DfxError` naming the extra to install."""
    from dfx.errors import DfxError

    try:
        import model_explorer
    except ImportError:
        raise DfxError(f"dfx explore needs Google's Model Explorer, which dfx does not install: {_INSTALL}") from None
    return model_explorer


def explore(
    model: str = typer.Argument("gpt2-block", help=_MODEL_HELP),
    hw: Optional[List[str]] = typer.Option(
        None, "--hw", help="Hardware profile id, alias or file; repeat for several (default: h100 and spyre)."
    ),
    dtype: str = typer.Option("bf16", help="bf16 (default), fp16 or fp32."),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help="Input shape for a file model."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the overlays (default: a temporary folder)."),
    force: bool = typer.Option(False, help="Overwrite overlays that already exist in --out."),
    host: str = typer.Option("localhost", help="Host Model Explorer's server listens on."),
    port: int = typer.Option(8080, help="Port of Model Explorer's server."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Start the server without opening a browser."),
) -> None:
    """Open MODEL in Model Explorer with latency, bound, intensity and FLOPs per node as overlays.

    Needs the optional extra: pip install 'dfx[explorer]'. The same overlays are written by
    `dfx analyze --out DIR` (explorer-*.json), to load in Model Explorer by hand.
    """
    from rich.console import Console

    from dfx.analysis import analyze, normalize_dtype_or_fail
    from dfx.options import parse_input_shapes
    from dfx.report.files import write_outputs
    from dfx.viz.explorer import explorer_files

    from dfx.errors import DfxError
    from dfx.report.files import check_writable

    if not 1 <= port <= 65535:
        raise DfxError(f"--port must be a TCP port from 1 to 65535, got {port}")
    # before the work: the export below takes a model dtype (fp8 was analysed, written, then refused)
    dtype_name = normalize_dtype_or_fail(
        dtype,
        "fp8, int8 and int4 are storage widths dfx analyze prices; Model Explorer shows the model as torch exports it",
    )
    if out is not None:
        check_writable(out)
    me = _model_explorer()  # before the work: refuse at once without the extra
    shapes = parse_input_shapes(input_shape, None)
    analysis = analyze(
        model, hardware=hw or None, dtype=dtype, batch=batch, seq=seq, method="export", input_shapes=shapes
    )
    folder = out if out is not None else Path(tempfile.mkdtemp(prefix="dfx-explore-"))
    written = write_outputs(folder, explorer_files(analysis.to_dict()), force=force)
    Console(stderr=True).print("wrote " + ", ".join(str(p) for p in written), highlight=False, markup=False)

    from dfx.capture.exported import export_program
    from dfx.models import resolve

    spec = resolve(model, batch=batch or 1, seq=seq, dtype=dtype_name, input_shapes=shapes)
    cfg = me.config()
    cfg.add_model_from_pytorch(spec.name, exported_program=export_program(spec.model, spec.args, spec.kwargs))
    for path in written:
        cfg.add_node_data_from_path(str(path))
    me.visualize_from_config(cfg, host=host, port=port, no_open_in_browser=no_browser)


def register(app: typer.Typer) -> None:
    """Add ``dfx explore`` to ``app``."""
    app.command("explore")(explore)
