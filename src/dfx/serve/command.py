"""``dfx serve``: a model served under load on machines, side by side (``docs/serving.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from dfx.options import CAPACITY_FACTOR_HELP, ROUTING_HELP

__all__ = ["register"]

SERVE_OUTPUTS = ("serving.json", "timeline.png", "latency_vs_rate.png")


def _rates(texts: Optional[List[str]]) -> list[float]:
    from dfx.errors import DfxError

    out = []
    for text in texts or []:
        for part in text.split(","):
            try:
                out.append(float(part))
            except ValueError:
                raise DfxError(f"bad --rate {part!r}; expected requests/s such as 4 or 1,2,4,8") from None
    return out


def _buckets(text: Optional[str]) -> Optional[tuple[int, ...]]:
    from dfx.errors import DfxError

    if text is None:
        return None
    try:
        return tuple(int(p) for p in text.split(","))
    except ValueError:
        raise DfxError(f"bad --buckets {text!r}; expected prompt lengths such as 128,256,512") from None


def serve(
    model: str = typer.Argument(..., help="A causal decoder: built-in or hf:CONFIG (e.g. hf:llama-2-7b)."),
    hw: Optional[List[str]] = typer.Option(None, "--hw", help="Hardware profile; repeat for several machines."),
    rate: Optional[List[str]] = typer.Option(
        None, "--rate", help="Poisson arrivals, requests/s; several (1,2,4) draw the latency-versus-rate curve."
    ),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="A closed loop of C users."),
    requests: Optional[int] = typer.Option(
        None, "--requests", "-n", help="Requests to serve (default 1000); alone: all at once (offline)."
    ),
    input_len: str = typer.Option(
        "512", "--input-len", help="Prompt tokens: 512, LO:HI, lognormal:MEAN,SIGMA, uniform:.., file:PATH."
    ),
    output_len: str = typer.Option("128", "--output-len", help="Output tokens, same forms as --input-len."),
    seed: int = typer.Option(0, "--seed", help="Seed of the arrivals and lengths."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="continuous, static or disaggregated; default: each machine's runtime's."
    ),
    max_batch_tokens: int = typer.Option(2048, "--max-batch-tokens", help="Token budget per iteration (vLLM's)."),
    max_seqs: int = typer.Option(256, "--max-seqs", help="Sequences at once (vLLM's max_num_seqs)."),
    prefill: str = typer.Option(
        "mixed",
        "--prefill",
        help="Continuous: mixed (prompt chunks join the decode iteration, vLLM V1) or separate (SGLang v0.3).",
    ),
    speculative: Optional[str] = typer.Option(
        None, "--speculative", help="K,ACCEPT: a draft or MTP head proposes K tokens, each accepted at ACCEPT."
    ),
    kv_block: int = typer.Option(16, "--kv-block", help="Tokens per KV-cache block (vLLM's block_size)."),
    mem_fraction: float = typer.Option(0.9, "--mem-fraction", help="Device memory the server takes (vLLM's 0.9)."),
    batch: Optional[int] = typer.Option(
        None, "--batch", help="Static batch size (default: the smallest that keeps up)."
    ),
    buckets: Optional[str] = typer.Option(None, "--buckets", help="Static prompt buckets, e.g. 128,256,512."),
    chips: Optional[int] = typer.Option(
        None, "--chips", help="Chips per model replica (default: the fewest that fit)."
    ),
    parallel: Optional[str] = typer.Option(None, "--parallel", help="A split such as tp=4 (docs/parallel.md)."),
    dtype: str = typer.Option("bf16", "--dtype", help="Activation dtype."),
    weight_dtype: Optional[str] = typer.Option(None, "--weight-dtype", help="Weight storage (fp8, int8, int4...)."),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache storage."),
    runtime: Optional[str] = typer.Option(
        None,
        "--runtime",
        help="Time kernels as a profile's runtime runs them (e.g. back-to-back), or ideal; default: each profile's default runtime (dfx hw show).",
    ),
    routing: Optional[str] = typer.Option(None, "--routing", help=ROUTING_HELP),
    capacity_factor: Optional[float] = typer.Option(None, "--capacity-factor", help=CAPACITY_FACTOR_HELP),
    slo: Optional[str] = typer.Option(None, "--slo", help="Goodput targets, e.g. ttft=200ms,tpot=50ms."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write serving.json and the pictures into this folder."),
    force: bool = typer.Option(False, help="Overwrite files that already exist in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the document (dfx.serving/1) to stdout."),
    trace: Optional[Path] = typer.Option(
        None,
        "--trace",
        help="Write the run as a Chrome/Perfetto trace JSON: iterations and requests (ui.perfetto.dev).",
    ),
) -> None:
    """Serve MODEL under load: TTFT, TPOT and throughput per machine, its own runtime's batching."""
    import json
    import os
    import sys

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from dfx.errors import DfxError
    from dfx.serve.api import ServeConfig, parse_slo, simulate
    from dfx.serve.console import curve_table, serving_table
    from dfx.serve.speculative import parse_speculative
    from dfx.serve.workload import DEFAULT_REQUESTS, Arrivals

    rates = _rates(rate)
    if rate and not rates:
        raise DfxError("--rate is empty; give requests/s such as 4")
    if out is not None:
        from dfx.report.files import check_targets

        check_targets(
            out, ["serving.json", "timeline.png"] + (["latency_vs_rate.png"] if len(rates) > 1 else []), force=force
        )
    if trace is not None:
        from dfx.report.files import check_target_file

        check_target_file(trace, "--trace", force=force)
    config = ServeConfig(
        model=model,
        hardware=tuple(hw or ("nvidia-h100-sxm",)),
        arrivals=Arrivals(
            rate=rates[0] if rates else None,
            concurrency=concurrency,
            requests=DEFAULT_REQUESTS if requests is None else requests,
        ),
        input_len=input_len,
        output_len=output_len,
        seed=seed,
        scheduler=scheduler,
        max_batch_tokens=max_batch_tokens,
        max_seqs=max_seqs,
        kv_block=kv_block,
        prefill=prefill,
        speculative=parse_speculative(speculative),
        mem_fraction=mem_fraction,
        batch=batch,
        buckets=_buckets(buckets),
        chips=chips,
        parallel=parallel,
        dtype=dtype,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        runtime=runtime,
        routing=routing,
        capacity_factor=capacity_factor,
        slo=parse_slo(slo),
        rates=tuple(rates) if len(rates) > 1 else (),
    )
    err = Console(stderr=True)
    # a spinner on a terminal only (dfx.report.progress's rule): in a pipe its stop left a blank line
    # on stderr, before a refusal's one line or alone after a clean run
    quiet = not err.is_terminal or os.environ.get("DFX_NO_PROGRESS", "") not in ("", "0")
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=quiet,
    )
    with progress:
        task = progress.add_task("dfx serve", total=None)
        result = simulate(config, on_progress=lambda line: progress.update(task, description=line))
    doc = result.to_dict()
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        console = Console(width=None if sys.stdout.isatty() else 160)
        console.print(serving_table(result))
        if result.curve:
            console.print(curve_table(result))
        console.print(
            f"priced {sum(m.pricing['points'] for m in result.machines)} steps in {result.pricing_wall_s:.1f} s; "
            f"simulated in {result.wall_s - result.pricing_wall_s:.1f} s; {result.wall_s:.1f} s in all",
            highlight=False,
            markup=False,
        )
    if trace is not None:
        from dfx.report.files import write_outputs
        from dfx.serve.trace import serving_trace

        data = serving_trace(result)
        target = trace.expanduser()
        write_outputs(target.parent, {target.name: json.dumps(data)}, force=force)
        spans = sum(1 for e in data["traceEvents"] if e["ph"] == "X")
        Console(stderr=True).print(
            f"wrote {target} ({spans} spans; open it in ui.perfetto.dev)", highlight=False, markup=False
        )
    if out is not None:
        from dfx.report.files import write_outputs
        from dfx.serve.plot import rate_curve_png, timeline_png

        files: dict[str, str | bytes] = {"serving.json": json.dumps(doc, indent=1), "timeline.png": timeline_png(doc)}
        if result.curve:
            files["latency_vs_rate.png"] = rate_curve_png(doc)
        written = write_outputs(out, files, force=force)
        Console(stderr=True).print("wrote " + ", ".join(str(p) for p in written), highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``dfx serve`` to the CLI."""
    app.command("serve")(serve)
