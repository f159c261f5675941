"""The console table of a serving run: one column per machine, side by side."""

from __future__ import annotations

from typing import Any

__all__ = ["serving_table", "curve_table"]


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:,.2f} ms"


def _pct(p: Any, key: str) -> str:
    return "-" if p is None else _ms(getattr(p, key))


def serving_table(result: Any):
    """A rich Table: scheduler, split, latency percentiles, throughput, occupancy, static extras."""
    from rich.table import Table

    c = result.config
    arr = c.arrivals
    if arr.kind == "poisson":
        how = f"Poisson {arr.rate:g} req/s"
    elif arr.kind == "closed-loop":
        how = f"{arr.concurrency} users (closed loop)"
    else:
        how = "offline (all at once)"
    table = Table(
        title=f"dfx serve {c.model}: {arr.requests:,} requests, {how}, input {c.input_len}, output {c.output_len}"
    )
    table.add_column("")
    ms = result.machines
    for m in ms:
        table.add_column(m.profile_id, justify="right")

    def row(label: str, f) -> None:
        table.add_row(label, *[f(m) for m in ms])

    row("scheduler", lambda m: m.scheduler)
    extras = ([f"prefill {c.prefill}"] if c.prefill != "mixed" else []) + (
        [f"speculative K={c.speculative[0]}, accept {c.speculative[1]:g}"] if c.speculative else []
    )
    if extras:
        row("runtime options", lambda m: ", ".join(extras) if m.scheduler != "static" else "-")
    row("chips", lambda m: str(m.chips) + (" x 2 pools" if m.disaggregated else ""))
    row("KV cache (tokens)", lambda m: f"{m.kv_capacity_tokens:,}" if m.kv_capacity_tokens is not None else "-")
    row("static batch", lambda m: str(m.static["batch"]) if m.static else "-")
    for name, attr in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s")):
        for q in ("p50", "p90", "p99"):
            row(f"{name} {q}", lambda m, a=attr, q=q: _pct(getattr(m.summary, a), q))
    row("requests/s", lambda m: f"{m.summary.requests_per_s:,.2f}")
    row("output tokens/s", lambda m: f"{m.summary.output_tokens_per_s:,.1f}")
    if c.slo:
        row("goodput (req/s in SLO)", lambda m: f"{m.summary.goodput_per_s:,.2f}")
    row("mean batch", lambda m: f"{m.summary.mean_batch:,.1f}")
    row(
        "mean KV occupancy",
        lambda m: "-" if m.summary.mean_kv_occupancy is None else f"{m.summary.mean_kv_occupancy:.1%}",
    )
    row("peak waiting", lambda m: f"{m.summary.peak_waiting:,}")
    row("preemptions", lambda m: f"{m.summary.preemptions:,}")
    row("prompt padding", lambda m: f"{m.static['prompt_padding_fraction']:.1%}" if m.static else "-")
    row("decode padding (row-steps)", lambda m: f"{m.static['decode_padding_fraction']:.1%}" if m.static else "-")
    row("wait for a batch p50", lambda m: _ms(m.static["wait_s"]["p50"]) if m.static and m.static["wait_s"] else "-")
    row("wait for a batch p99", lambda m: _ms(m.static["wait_s"]["p99"]) if m.static and m.static["wait_s"] else "-")
    row("steps priced", lambda m: f"{m.pricing['points']} in {m.pricing['wall_s']:.1f} s")
    row(
        "interp. error (max midpoint)",
        lambda m: f"{m.pricing['grid']['max_midpoint_error']:.1%}",
    )
    return table


def curve_table(result: Any):
    """The latency-versus-rate curve as a table, one row per machine and rate."""
    from rich.table import Table

    table = Table(title="latency versus request rate (the knee: where p99 turns up)")
    for col in ("machine", "rate (req/s)", "served (req/s)", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"):
        table.add_column(col, justify="right")
    for m in sorted(result.curve, key=lambda m: (m.profile_id, m.rate_per_s or 0)):
        s = m.summary
        table.add_row(
            m.profile_id,
            f"{m.rate_per_s:g}",
            f"{s.requests_per_s:,.2f}",
            _pct(s.ttft_s, "p50"),
            _pct(s.ttft_s, "p99"),
            _pct(s.tpot_s, "p50"),
            _pct(s.tpot_s, "p99"),
        )
    return table
