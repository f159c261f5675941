"""``dfx sweep``: a design-space sweep from a YAML file and/or flags (``docs/sweeps.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

__all__ = ["register"]


def _ints(name: str, texts: Optional[List[str]]) -> Optional[list[int]]:
    """``--batch 1,2,4`` (or repeated) as integers; a one-line error otherwise."""
    from dfx.errors import DfxError

    if not texts:
        return None
    out = []
    for text in texts:
        for part in text.split(","):
            try:
                out.append(int(part))
            except ValueError:
                raise DfxError(f"bad {name} value {part!r}; expected integers such as 1,2,4") from None
    return out


def _words(texts: Optional[List[str]], name: str) -> Optional[list[str]]:
    """``--hw h100,spyre`` (or repeated) as words; a flag given only empty (``--hw "$UNSET"``) is refused."""
    from dfx.errors import DfxError

    if not texts:
        return None
    # a quick profile (--hw quick:peak=200T,bw=2T) is one value: its commas separate its keys
    words = [w.strip() for t in texts for w in ([t] if name == "--hw" and "=" in t else t.split(",")) if w.strip()]
    if not words:  # it read as "flag not given": the default axis, silently
        raise DfxError(f"{name} is empty; give a value (see dfx sweep --help)")
    return words


def _chip_counts(texts: Optional[List[str]]) -> Optional[list[str]]:
    """``--chips`` words: each ``auto`` or a whole number >= 1, named as ``--chips`` when not."""
    from dfx.errors import DfxError

    words = _words(texts, "--chips")
    for w in words or []:
        if w.lower() != "auto" and not (w.isdigit() and int(w) >= 1):
            raise DfxError(f"--chips {w!r}: expected chip counts such as 1,2,4,8 (or auto)")
    return words


def sweep(
    spec_file: Optional[Path] = typer.Argument(
        None,
        help="SWEEP.yaml: axes models, hardware, batch, seq, dtype, phase, execution_model, parallel (see docs/sweeps.md). Flags add or replace axes.",
    ),
    model: Optional[List[str]] = typer.Option(
        None, "--model", "-m", help="Model spec; repeat or comma-separate for several."
    ),
    hw: Optional[List[str]] = typer.Option(
        None,
        "--hw",
        help="Hardware profile; repeat or comma-separate for several (a quick profile, quick:peak=200T,bw=2T, is one value: repeat --hw beside it).",
    ),
    batch: Optional[List[str]] = typer.Option(None, "--batch", help="Batch sizes, e.g. 1,2,4."),
    seq: Optional[List[str]] = typer.Option(
        None, "--seq", help="Sequence lengths (prompt length for prefill/generate, KV length for decode)."
    ),
    dtype: Optional[List[str]] = typer.Option(None, "--dtype", help="fp32, bf16, fp16; comma-separate for several."),
    phase: Optional[List[str]] = typer.Option(None, "--phase", help="forward (default), prefill, decode, generate."),
    execution_model: Optional[List[str]] = typer.Option(
        None, "--execution-model", help="default, compiled, eager, scratchpad."
    ),
    chips: Optional[List[str]] = typer.Option(
        None, "--chips", help="Chip counts, e.g. 1,2,4,8 (auto: the fewest that hold the model); the parallel axis."
    ),
    parallel: Optional[List[str]] = typer.Option(
        None, "--parallel", help="A split such as tp=4,pp=2; repeat for several (joins --chips on the parallel axis)."
    ),
    output_len: Optional[int] = typer.Option(
        None, "--output-len", help="Output tokens of a generate point (default 128)."
    ),
    rate: Optional[List[str]] = typer.Option(
        None, "--rate", help="Request rates, e.g. 1,2,4: a serving sweep (dfx serve per rate; docs/serving.md)."
    ),
    max_points: Optional[int] = typer.Option(
        None, "--max-points", help="Refuse a sweep with more points (default 100,000)."
    ),
    out: Path = typer.Option(
        Path("out/sweep"), "--out", help="The sweep's folder: results table, sweep.json, graphs/, report."
    ),
    force: bool = typer.Option(
        False, help="Replace the results of a different sweep, or report files, already in --out."
    ),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="Local worker processes (default: one per CPU); 1 runs in this process."
    ),
    ray: bool = typer.Option(
        False, "--ray", help="Run on a local Ray started by dfx (pip install 'dfx\\[ray]')."
    ),  # \\[ keeps rich's help from reading [ray] as a markup tag (it printed "pip install dfx")
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Run on the Ray cluster at ADDR."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip the summary, pictures and report.html."),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Capture without reading or writing the capture cache (dfx cache info)."
    ),
) -> None:
    """Sweep models x hardware x batch x seq x dtype x phase x chips; resume by running it again."""
    import time

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from dfx.cache import CaptureCache
    from dfx.errors import DfxError
    from dfx.report.files import check_targets
    from dfx.sweep import load_spec, run_sweep
    from dfx.sweep.report import REPORT_FILES
    from dfx.sweep.runner import SPEC_FILE, check_workers

    check_workers(workers, ray_address)
    splits = [p.strip() for p in parallel or [] if p.strip(" ,")]
    if parallel and not splits:
        raise DfxError("--parallel is empty; give a split such as tp=4,pp=2 (see dfx sweep --help)")
    overrides = {
        "models": _words(model, "--model"),
        "hardware": _words(hw, "--hw"),
        "batch": _ints("--batch", batch),
        "seq": _ints("--seq", seq),
        "dtype": _words(dtype, "--dtype"),
        "phase": _words(phase, "--phase"),
        "execution_model": _words(execution_model, "--execution-model"),
        "output_len": output_len,
        "max_points": max_points,
        "parallel": (_chip_counts(chips) or []) + splits or None,
        "rate": _rates(rate),
    }
    spec = load_spec(spec_file, overrides)
    if spec.rate:
        _serving(spec, out, force)
        return
    to_capture = _models_to_capture(spec, out, None if no_cache else CaptureCache())
    if to_capture:
        _check_models(to_capture)
    if not no_report and not (out / SPEC_FILE).is_file():
        check_targets(out, list(REPORT_FILES), force=force)  # someone else's report.html: refuse up front
    err = Console(stderr=True)
    progress = Progress(
        TextColumn("[bold]sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    )
    state = {"task": None, "t0": time.perf_counter(), "n": 0, "started": False}

    def on_start(todo: int, done: int) -> None:
        progress.start()  # here, not before run_sweep: its refusals (the folder, Ray) print as one line
        state["started"] = True
        if done:
            err.print(f"resuming: {done:,} of {spec.n_points:,} points already in {out}", highlight=False, markup=False)
        state["task"] = progress.add_task("sweep", total=todo, rate="")

    def on_rows(rows: list) -> None:
        state["n"] += len(rows)
        rate = state["n"] / max(time.perf_counter() - state["t0"], 1e-9)
        progress.update(state["task"], advance=len(rows), rate=f"{rate:,.1f} points/s")

    try:
        run = run_sweep(
            spec,
            out,
            workers=workers,
            ray=ray,
            ray_address=ray_address,
            force=force,
            on_rows=on_rows,
            on_start=on_start,
            capture_cache=None if no_cache else CaptureCache(),
        )
    finally:
        if state["started"]:  # a Progress never started still prints an empty line when stopped
            progress.stop()
    _finish(spec, run, out, no_report)


def _rates(texts: Optional[List[str]]) -> Optional[list[float]]:
    """``--rate 1,2,4`` (or repeated) as requests/s; a one-line error otherwise."""
    from dfx.errors import DfxError

    if not texts:
        return None
    try:
        return [float(p) for t in texts for p in t.split(",") if p.strip()]
    except ValueError:
        raise DfxError(f"bad --rate {','.join(texts)!r}; expected requests/s such as 1,2,4") from None


def _serving(spec, out: Path, force: bool) -> None:
    """A serving sweep (dfx.sweep.serving): run it and print its rows."""
    import sys

    from rich.console import Console
    from rich.table import Table

    from dfx.sweep.serving import run_serving_sweep

    err = Console(stderr=True)
    rows = run_serving_sweep(spec, out, force=force, on_progress=lambda line: err.print(line, highlight=False))
    table = Table(title=f"dfx sweep: serving, {len(rows):,} runs")
    for col in ("model", "hardware", "parallel", "rate/s", "TTFT p50", "TPOT p50", "tokens/s"):
        table.add_column(col)
    for r in rows:
        tpot = f"{r['tpot_p50_s'] * 1e3:.3g} ms" if r["tpot_p50_s"] is not None else "-"
        table.add_row(
            r["model"],
            r["hardware"],
            r["parallel"],
            f"{r['rate_per_s']:g}",
            f"{r['ttft_p50_s'] * 1e3:.3g} ms",
            tpot,
            f"{r['output_tokens_per_s']:,.0f}",
        )
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    err.print(f"wrote {out / 'serving.csv'}, {out / 'serving.json'}", highlight=False, markup=False)


def _models_to_capture(spec, out: Path, capture_cache=None) -> list[str]:
    """The models of ``spec`` that have a point whose graph is not in ``out``'s graph cache (a phase
    point always captures), in ``spec.models``' order.

    A model all of whose graphs are cached was captured under this dfx version (the cache's key names
    the version and the model), so there is nothing to check about it; :func:`_check_models` imports
    torch (about 1.4 s of a fresh ``dfx sweep`` here), which a sweep on cached graphs never needs.
    """
    from dfx.sweep.evaluate import graph_on_disk
    from dfx.sweep.runner import CACHE_DIR

    cache = str(out / CACHE_DIR)
    tasks = [g.to_task() for g in spec.groups()]
    if capture_cache is not None:  # a graph in the user's capture cache needs no capture either
        for t in tasks:
            t["capture_cache"] = str(capture_cache.root)
    missing = {t["model"] for t in tasks if not graph_on_disk(t, cache)}
    return [m for m in spec.models if m in missing]


def _check_models(models) -> None:
    """Refuse a built-in name or ``hf:`` config that does not exist, and a model file, before any point runs.

    Every point of such a model would only be refused one by one (an exit status 0 and a table of
    errors written into --out); a typo is the user's to fix first. A model file's inputs are given
    by ``--input-shape``, which the sweep's batch and seq axes do not set: every one of its points
    was refused ("--batch and --seq apply to built-in and hf: models").
    """
    from dfx.errors import DfxError
    from dfx.models.files import is_file_spec
    from dfx.models.registry import describe

    for name in models:
        if is_file_spec(name):
            path = Path(name.rpartition(":")[0] if ":" in name else name)
            if not path.is_file():
                raise DfxError(f"model file {str(path)!r} not found (sweep model {name!r})")
            raise DfxError(
                f"sweep model {name!r} is a model file: its inputs come from --input-shape, which the sweep's "
                f"batch and seq axes do not set; sweep built-in or hf: models, or run dfx analyze {name} "
                "--input-shape ... per size"
            )
        elif name.startswith("hf:"):
            from dfx.models.hf import load_config

            load_config(name.removeprefix("hf:"))  # an unknown config, named with close matches
        else:
            describe(name)  # a ModelSpecError naming close matches


def _finish(spec, run, out: Path, no_report: bool) -> None:
    """Print the summary table and write the report."""
    import sys

    from rich.console import Console
    from rich.table import Table

    from dfx.sweep import ResultsTable
    from dfx.sweep.report import model_scope, summary_rows, tokens_cell, write_report

    console = Console(width=None if sys.stdout.isatty() else 200)
    rows = ResultsTable(out).rows()
    scopes = {m: model_scope(m) for m in dict.fromkeys(r["model"] for r in rows)}
    table = Table(title=f"dfx sweep: {len(rows):,} points")
    # each best with the point it is at, as report.html's table (the latency's point is not the tokens/s one)
    for col in ("model", "hardware", "points", "best latency", "at", "best tokens/s", "at"):
        table.add_column(col)
    for s in summary_rows(rows):
        table.add_row(
            s["model"],
            s["hardware"],
            str(s["points"]),
            f"{s['best_latency_s'] * 1e3:.4g} ms",
            s["at"],
            tokens_cell(s["best_tokens_per_s"], scopes.get(s["model"], "")),
            s["tokens_at"] if s["best_tokens_per_s"] > 0 else "-",
        )
    console.print(table)
    errors = [r for r in rows if r["error"]]
    if errors:
        console.print(
            f"{len(errors)} point{'s' if len(errors) != 1 else ''} refused by dfx, "
            f"e.g. {errors[0]['point_id']}: {errors[0]['error']}",
            highlight=False,
            markup=False,
        )
    console.print(
        f"ran {run.ran:,} points ({run.already_done:,} already done) in {run.wall_s:.1f} s on {run.executor}; "
        f"table {run.table}",
        highlight=False,
        markup=False,
    )
    if not no_report:
        written = write_report(rows, out, force=True, scopes=scopes)
        console.print("wrote " + ", ".join(str(p) for p in written), highlight=False, markup=False)
    if rows and len(errors) == len(rows):  # nothing to compare: a failure, though the table keeps why
        Console(stderr=True).print(
            f"error: {'all ' if len(rows) > 1 else ''}{len(rows):,} point{'s were' if len(rows) > 1 else ' was'} "
            "refused (see above); change the axes that cause it",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``dfx sweep`` to the CLI."""
    app.command("sweep")(sweep)
