"""The ``dfx`` command line. Thin: parse, call the public API, print or write; no logic here."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from dfx.errors import DfxError
from dfx.limits import check_tokens
from dfx.options import (
    CAPACITY_FACTOR_HELP,
    GQA_KV_READS_HELP,
    CORES_HELP,
    INPUT_DTYPE_HELP,
    INPUT_SHAPE_HELP,
    MODEL_HELP,
    ROUTING_HELP,
    RUNTIME_HELP,
    parse_input_shapes,
)
from dfx.report.out import stdout as _out

app = typer.Typer(add_completion=False, no_args_is_help=True, help="dfx, the dataflow explorer.")
hw_app = typer.Typer(no_args_is_help=True, help="Hardware profiles: list them, show one.")
app.add_typer(hw_app, name="hw")

_err = Console(stderr=True, soft_wrap=True)


def _check_positive(name: str, value: Optional[int]) -> None:
    if value is not None and value <= 0:
        raise DfxError(f"{name} must be a positive integer, got {value}")


# Every file `analyze --out` writes (dag.svg and dag.png by Graphviz, or by dfx's own layout without it).
ANALYZE_OUTPUTS = (
    "analysis.json",
    "nodes.csv",
    "dag.dot",
    "dag.svg",
    "dag.png",
    "roofline.png",
    "roofline.svg",
    "report.html",
)


@app.command()
def analyze(
    model: str = typer.Argument("gpt2-block", help=MODEL_HELP),
    hw: Optional[List[str]] = typer.Option(
        None,
        "--hw",
        help="Hardware profile id, alias or file; repeat for several. Default: nvidia-h100-sxm and ibm-spyre.",
    ),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    dtype: str = typer.Option(
        "bf16",
        help="bf16 (default: machines are compared at bf16), fp16 or fp32; analyze also takes fp8 and int8 (activations).",
    ),
    method: str = typer.Option("auto", help="Capture method: auto, export, fx or dynamo."),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    input_dtype: Optional[List[str]] = typer.Option(None, "--input-dtype", help=INPUT_DTYPE_HELP),
    out: Optional[Path] = typer.Option(
        None, help="Write analysis.json, nodes.csv and the pictures (dag.*, roofline.*, report.html) into this folder."
    ),
    force: bool = typer.Option(False, help="Overwrite files that already exist in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the export document (dfx.analysis/1) to stdout."),
    trace: Optional[Path] = typer.Option(
        None, "--trace", help="Write the compiled programs as a Chrome/Perfetto trace JSON (open in ui.perfetto.dev)."
    ),
    top: int = typer.Option(10, help="How many nodes to list by time."),
    color_by: Optional[str] = typer.Option(
        None, "--color-by", help="With --out: the profile whose bounds colour the DAG (default: the first)."
    ),
    level: str = typer.Option(
        "op", "--level", help="With --out: draw the DAG with one box per node (op) or per module (module)."
    ),
    execution_model: Optional[str] = typer.Option(
        None,
        "--execution-model",
        help="compiled (the compiled program's kernels on the machine's cores), eager (the unfused program: one kernel per operator, same kernel model) or scratchpad (one operator at a time). Default: compiled.",
    ),
    phase: Optional[str] = typer.Option(
        None,
        "--phase",
        help="LLM inference phase of a causal decoder: prefill, decode or generate (see docs/inference.md).",
    ),
    prompt_len: Optional[int] = typer.Option(
        None, "--prompt-len", help="With --phase prefill/generate: prompt tokens per sequence (default 128)."
    ),
    kv_len: Optional[int] = typer.Option(
        None, "--kv-len", help="With --phase decode: cached tokens per sequence (default: --prompt-len)."
    ),
    output_len: Optional[int] = typer.Option(
        None, "--output-len", help="With --phase generate: output tokens per sequence (default 128)."
    ),
    weight_dtype: Optional[str] = typer.Option(
        None, "--weight-dtype", help="Weight storage: bf16, fp16, fp8, int8, int4, fp4 (default: --dtype)."
    ),
    kv_dtype: Optional[str] = typer.Option(
        None, "--kv-dtype", help="KV-cache storage with --phase: bf16, fp16, fp8 or int8 (default: --dtype)."
    ),
    gqa_kv_reads: Optional[str] = typer.Option(None, "--gqa-kv-reads", help=GQA_KV_READS_HELP),
    chips: Optional[int] = typer.Option(
        None,
        "--chips",
        help="Spread the model over this many chips (default: the fewest that hold it; docs/parallel.md).",
    ),
    parallel: Optional[str] = typer.Option(
        None, "--parallel", help="How to split over chips: tp=N,pp=N,ep=N (e.g. tp=8,pp=2); sets the chip count."
    ),
    train: bool = typer.Option(
        False,
        "--train",
        help="One training step: the joint forward + backward graph (AOTAutograd, as torch.compile) and the optimizer step (docs/training.md).",
    ),
    optimizer: Optional[str] = typer.Option(
        None, "--optimizer", help="With --train: adam (default), adamw, sgd or sgd-momentum."
    ),
    routing: Optional[str] = typer.Option(
        None,
        "--routing",
        help=ROUTING_HELP,
    ),
    capacity_factor: Optional[float] = typer.Option(
        None,
        "--capacity-factor",
        help=CAPACITY_FACTOR_HELP,
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Capture again, without reading or writing the capture cache (dfx cache info)."
    ),
    cores: Optional[int] = typer.Option(None, "--cores", help=CORES_HELP),
    runtime: Optional[str] = typer.Option(None, "--runtime", help=RUNTIME_HELP),
) -> None:
    """Capture and cost MODEL, classify every node and predict the makespan on each profile."""
    from dfx.analysis import AnalyzeRequest, run
    from dfx.cache import CaptureCache
    from dfx.report.console import print_analysis

    _check_positive("--batch", batch)
    _check_positive("--seq", seq)
    check_tokens(batch, seq)  # before any capture: torch's own overflow text was the message
    _check_positive("--top", top)
    _check_positive("--chips", chips)
    if level not in ("op", "module"):
        raise DfxError(f"--level must be op or module, got {level!r}")
    if out is not None:  # refuse before the work, not after it
        from dfx.report.files import check_targets

        check_targets(out, list(ANALYZE_OUTPUTS), force=force)
    if trace is not None:
        from dfx.report.files import check_target_file

        check_target_file(trace, "--trace", force=force)
    from dfx.report.progress import with_progress

    request = AnalyzeRequest.of(  # every option checked here, before any capture
        model,
        hardware=hw or None,
        dtype=dtype,
        batch=batch,
        seq=seq,
        method=method,
        input_shapes=parse_input_shapes(input_shape, input_dtype),
        execution_model=execution_model,
        phase=phase,
        prompt_len=prompt_len,
        kv_len=kv_len,
        output_len=output_len,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        gqa_kv_reads=gqa_kv_reads,
        chips=chips,
        parallel=parallel,
        train=train,
        optimizer=optimizer,
        routing=routing,
        capacity_factor=capacity_factor,
        cache=None if no_cache else CaptureCache(),
        cores=cores,
        runtime=runtime,
    )
    analysis = with_progress(f"dfx analyze {model}", run)(request)
    doc = analysis.to_dict()
    if out is not None:
        from dfx.report.files import write_outputs
        from dfx.viz import render_pictures

        pictures = render_pictures(doc, color_by=color_by, level=level)
        files = {"analysis.json": json.dumps(doc), "nodes.csv": analysis.nodes_csv(doc), **pictures.files}
        from dfx.viz.explorer import explorer_files  # Model Explorer's node data (docs/pictures.md)

        files.update(explorer_files(doc))
        written = write_outputs(out, files, force=force)
        for note in pictures.notes:
            _err.print(note, highlight=False, markup=False)
        if not as_json:
            _err.print("wrote " + ", ".join(str(p) for p in written))
    if trace is not None:
        from dfx.sim.program_trace import write_trace

        _err.print(write_trace(trace, doc, force=force), highlight=False, markup=False)
    if as_json:  # compact: json's C encoder (indenting runs its Python one, 4x slower on a 70B document)
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        from dfx.schema.analysis import read_analysis

        read = read_analysis(doc)  # read once: the summary and the MoE table both print from it
        print_analysis(read, _out, top=top)
        if "inference" in doc:
            from dfx.inference.console import print_inference

            print_inference(doc, _out)
        if "training" in doc:
            from dfx.training.console import print_training

            print_training(doc, _out)
        from dfx.compile.moe_console import print_moe

        print_moe(read, _out)


@app.command()
def graph(
    model: str = typer.Argument("gpt2-block", help=MODEL_HELP),
    method: str = typer.Option("auto", help="Capture method: auto, export, fx or dynamo."),
    shapes: bool = typer.Option(False, "--shapes", help="Add the shapes, dtypes and strides that propagation found."),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    dtype: str = typer.Option("bf16", help="bf16 (default: machines are compared at bf16), fp16 or fp32."),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    input_dtype: Optional[List[str]] = typer.Option(None, "--input-dtype", help=INPUT_DTYPE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the captured graph (dfx.graph/1) as JSON."),
    train: bool = typer.Option(
        False, "--train", help="The training step's joint forward + backward graph (AOTAutograd, docs/training.md)."
    ),
) -> None:
    """Print the captured graph as a torch.fx-style table (opcode, name, target, args, users)."""
    from dfx.analysis import capture_spec
    from dfx.report.console import print_graph

    _check_positive("--batch", batch)
    _check_positive("--seq", seq)
    check_tokens(batch, seq)  # before any capture: torch's own overflow text was the message
    g, _ = capture_spec(
        model,
        batch=batch,
        seq=seq,
        dtype=dtype,
        method=method,
        input_shapes=parse_input_shapes(input_shape, input_dtype),
        train=train,
    )
    if as_json:
        sys.stdout.write(g.to_json(indent=1) + "\n")
    else:
        print_graph(g.to_dict(), shapes, _out)


@app.command("models")
def list_models() -> None:
    """List the built-in models and shipped Hugging Face configs."""
    from rich.table import Table

    from dfx import models

    table = Table(title="Built-in models")
    table.add_column("name")
    table.add_column("description")
    for name in models.available():
        table.add_row(name, models.describe(name))
    _out.print(table)
    hf = Table(title="Hugging Face configs (dfx analyze hf:NAME)")
    hf.add_column("name")
    hf.add_column("description")
    for name in models.shipped_configs():
        hf.add_row(f"hf:{name}", models.describe_config(name))
    _out.print(hf)


@hw_app.command("list")
def hw_list() -> None:
    """List the shipped hardware profiles."""
    from rich.table import Table

    from dfx.hardware import list_profiles

    table = Table(title="Hardware profiles")
    # the bf16 peak; a profile that lists none shows the peak dfx times bf16 at, with its dtype named
    for col in ("id", "name", "kind", "peak (bf16 unless named)", "off-chip BW", "on-chip", "memory model"):
        table.add_column(col)
    from dfx.report.console import format_bytes

    for p in list_profiles():
        row = p.summary_row()
        table.add_row(
            row["id"],
            row["name"],
            row["kind"],
            f"{row['peak_bf16_flop_per_s'] / 1e12:,.0f} TFLOP/s"
            + ("" if row.get("peak_bf16_dtype") in (None, "bfloat16") else f" {row['peak_bf16_dtype']}")
            if row.get("peak_bf16_flop_per_s")
            else "-",
            f"{row['off_chip_bytes_per_s'] / 1e9:,.0f} GB/s" if row.get("off_chip_bytes_per_s") else "-",
            format_bytes(row["on_chip_bytes"]) if row.get("on_chip_bytes") else "-",
            row["memory_model"],
        )
    _out.print(table)


@hw_app.command("show")
def hw_show(
    profile: str = typer.Argument(..., help="Profile id, alias or path to a profile file."),
    as_json: bool = typer.Option(False, "--json", help="Print the validated profile in SI units as JSON."),
    slice_dims: Optional[str] = typer.Option(None, "--slice", help="A TPU torus slice, e.g. 4x4x8: its peak and hops."),
) -> None:
    """Show one hardware profile with the source of every number."""
    from dfx.hardware import load_profile
    from dfx.hardware.loader import listed_profiles

    names = listed_profiles(profile)
    if names is not None:  # load_profile's message says "one per --hw", an option hw show does not have
        raise DfxError(
            f"dfx hw show takes one profile, got {profile!r}; show each in turn: "
            + "; ".join(f"dfx hw show {n}" for n in names if n)
        )
    p = load_profile(profile)
    if slice_dims is not None:
        from dfx.arch.systolic.torus import parse_dims, torus_of

        torus = torus_of(p, parse_dims(slice_dims))  # refused here, before any table, if it cannot be
        if as_json:  # the slice's figures, not the profile
            sys.stdout.write(json.dumps(torus.to_dict(), indent=1) + "\n")
            return
    if as_json:
        sys.stdout.write(json.dumps(p.to_si_dict(), indent=1) + "\n")
    else:
        from dfx.report.profile import print_profile

        print_profile(p, _out, parse_dims(slice_dims) if slice_dims else None)


def _print_version(value: bool) -> None:
    if value:
        from dfx._version import __version__

        sys.stdout.write(f"dfx {__version__}\n")
        raise typer.Exit()


@app.callback()
def _app_options(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """dfx, the dataflow explorer."""


# Commands that live beside their package: each module's `register(app)` adds its commands, and an
# optional `register_hw(hw_app)` adds commands under `dfx hw`.
# The modules import only typer at import time; their work is imported inside each command.
_COMMAND_MODULES = (
    "dfx.sim.command",
    "dfx.shapes.command",
    "dfx.arch.systolic.command",
    "dfx.arch.memory.command",
    "dfx.viz.command",
    "dfx.viz.explore",
    "dfx.arch.spatial.command",
    "dfx.measure.command",
    "dfx.compile.command",
    "dfx.sim.dag_command",
    "dfx.arch.gpu.command",
    "dfx.sweep.command",
    "dfx.serve.command",
    "dfx.cache.command",
    "dfx.costs.command",
)


def _register_commands() -> None:
    import importlib

    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                # a real import error inside the module, not the module's absence
                raise
            continue
        module.register(app)
        if hasattr(module, "register_hw"):  # commands under `dfx hw ...`
            module.register_hw(hw_app)


_register_commands()


def _say(kind: str, message: str) -> None:
    """One line on stderr, ``kind:`` in red; ``message`` is plain text (user text is never read as markup)."""
    from rich.text import Text

    from dfx.errors import one_line

    text = Text(f"{kind}:", style="red")
    text.append(" " + one_line(message))
    _err.print(text, highlight=False)


# A process whose reader closed the pipe ends as if killed by SIGPIPE (128 + 13), as git and
# coreutils do, so `dfx ... | head` is quiet and `set -o pipefail` still sees that output was cut.
_BROKEN_PIPE_STATUS = 141


def _quiet_broken_pipe() -> None:
    """Exit quietly after the reader of stdout went away (Python's documented recipe: point stdout
    at devnull so the interpreter's final flush does not raise again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(_BROKEN_PIPE_STATUS)


def main() -> None:
    """Entry point: run the app; a :class:`DfxError` is one line on stderr and exit status 2.

    Nothing ends in exit status 0 unless the command finished: Ctrl-C (a ``KeyboardInterrupt``
    anywhere, the user's model included) is status 130, a ``sys.exit()`` from a user's model file
    is status 1 (or its own non-zero code), each with one line saying so.
    """
    from dfx.heap import freeze_after_capture, release

    # The command owns its process: skip the capture's objects in later collections. Put back on the
    # way out, for a caller that runs main() in its own process (the test suite).
    previous = freeze_after_capture()
    try:
        _main()
    finally:
        release(previous)


def _main() -> None:
    import warnings

    from dfx.errors import refuse_empty_paths, refuse_repeated_hw

    # Python's warnings (an op with no cost rule, ...) as one line each, without source lines.
    warnings.formatwarning = lambda message, category, *_args, **_kw: f"warning: {message}\n"
    try:
        command = typer.main.get_command(app)
        refuse_empty_paths(command)
        refuse_repeated_hw(command)
        status = command(standalone_mode=False, prog_name="dfx")
    except DfxError as exc:
        _say("error", str(exc))
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _say("interrupted", "stopped before the command finished; nothing more was written")
        sys.exit(130)
    except KeyboardInterrupt:  # typer turns it into status 130 itself; this is the fallback
        _say("interrupted", "stopped by Ctrl-C before the command finished; nothing more was written")
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors (bad flags, bad values): one line too
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "dfx"
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _say("error", f"{message} (see `{where} --help`)")
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # `dfx ... | head`: the reader left; say nothing more
        _quiet_broken_pipe()
    except SystemExit as exc:  # code of the user's (a model file's) that called sys.exit()
        if isinstance(exc.__context__, BrokenPipeError):  # rich's Console exits 1 on a closed pipe
            _quiet_broken_pipe()
        code = exc.code if isinstance(exc.code, int) and exc.code != 0 else 1
        _say(
            "error",
            f"stopped by sys.exit({exc.code!r}) before the command finished; "
            "remove the sys.exit() call from the model's code",
        )
        sys.exit(code)
    except MemoryError:
        _say("error", "ran out of memory; give smaller sizes (batch, sequence, --pes, --runs, --samples)")
        sys.exit(2)
    except RecursionError:
        _say("error", "input nested too deeply to read (Python's recursion limit); flatten it")
        sys.exit(2)
    except Exception as exc:  # anything unexpected: one line, no traceback
        if os.environ.get("DFX_DEBUG"):
            raise
        _say("internal error", f"{type(exc).__name__}: {exc} (set DFX_DEBUG=1 for the traceback)")
        sys.exit(1)
    if isinstance(status, int) and status != 0:  # typer returns Exit codes here: 130 is Ctrl-C
        if status == 130:
            _say("interrupted", "stopped by Ctrl-C before the command finished; nothing more was written")
        sys.exit(status)


if __name__ == "__main__":
    main()
