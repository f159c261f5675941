"""Plain-text summaries of the ``dfx.calibration/1`` and ``dfx.validation/1`` documents."""

from __future__ import annotations

from typing import Any, Mapping

from dfx.report.notes import drift_notes
from dfx.schema.calibration import CalibrationDoc, read_calibration
from dfx.schema.validation import ValidationDoc, read_validation

__all__ = ["calibration_text", "drift_notes", "validation_text"]


def _us(s: float) -> str:
    return f"{s * 1e6:,.1f} us"


def calibration_text(doc: CalibrationDoc | Mapping[str, Any]) -> str:
    """What ``dfx calibrate`` prints: one line per measured figure, with how it was measured.

    ``doc`` is the document's record (``Calibration.to_record()``) or the document itself; its
    ``profile`` is the profile mapping ``Calibration.to_profile`` wrote (``docs/hardware.md``).
    """
    doc = doc if isinstance(doc, CalibrationDoc) else read_calibration(doc)
    p = doc.profile
    lines = [f"{p['name']}: {doc.threads} threads, torch {doc.torch_version}"]
    for dtype, v in p["peak_flop_per_s"].items():
        lines.append(f"  peak {dtype:<10} {v / 1e9:10,.1f} GFLOP/s")
    for level in p["memory"]:
        cap = f"{level['capacity_bytes'] / 2**20:,.1f} MiB" if level["capacity_bytes"] else "-"
        lines.append(f"  {level['name']:<15} {level['bandwidth_bytes_per_s'] / 1e9:10,.1f} GB/s   capacity {cap}")
    lines.append(f"  op overhead     {_us(p['op_overhead_s']):>13}")
    kinds, curve, rates = doc.overhead_by_kind, doc.overhead_curve, doc.vector_rates
    if kinds:
        lines.append(
            "  overhead by kind " + ", ".join(f"{k} {v * 1e6:.1f}" for k, v in kinds.items()) + " us (hot loop)"
        )
    if curve:
        lines.append(
            "  overhead after  "
            + ", ".join(f"{c.gap_s * 1e6:,.0f} us: {c.overhead_s * 1e6:.1f}" for c in curve)
            + " us (time since the kind last ran: the median kind's cost)"
        )
    if rates:
        lines.append("  vector ops      " + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in rates.items()) + " GFLOP/s")
    column = [g for g in doc.gemm_table if g.k == 512 and g.n == 512]
    if column:
        lines.append(
            "  GEMM [M,512]x[512,512] "
            + ", ".join(f"M={g.rows}: {g.flop_per_s / 1e9:.0f}" for g in column)
            + f" GFLOP/s ({len(doc.gemm_table)} shapes in --json)"
        )
    if doc.attention_rates:
        lines.append(
            "  attention       "
            + ", ".join(
                f"{'causal ' if a.causal else ''}S={a.seq}: {a.flop_per_s / 1e9:.0f}" for a in doc.attention_rates
            )
            + " GFLOP/s"
        )
    if doc.resident_bytes:
        lines.append(f"  cache keeps     {doc.resident_bytes / 2**20:,.1f} MiB when streamed again and again")
    if kinds or curve or rates or column:
        lines.append(
            "  (these tables are in the profile `--out` writes: `dfx analyze --hw` and `dfx validate --hw` predict with them)"
        )
    lines += [f"warning: {w}" for w in doc.warnings]
    if doc.verdict is not None:
        lines.append(doc.verdict.line)
    return "\n".join(lines)


def _busy(verdict: Mapping[str, Any] | None) -> bool:
    """Whether a run's verdict (``run.verdict``: ``busy``, ``line``, ...; ``None`` on a GPU) said TOO BUSY."""
    return bool(verdict is not None and verdict["busy"])


def _spread_lines(whole_runs: Mapping[str, Any] | None, predicted_s: float, busy: bool = False) -> list[str]:
    """The whole graph's runs from their 10th to 90th percentile, and where the prediction falls
    (on a busy machine, that the spread says nothing: other processes stretched it)."""
    if not whole_runs or whole_runs["runs"] < 2:
        return []
    lo, hi = whole_runs["p10_s"], whole_runs["p90_s"]
    where = "inside" if lo <= predicted_s <= hi else ("below" if predicted_s < lo else "above")
    judged = (
        "other processes ran during them (the verdict below), so the spread says nothing about the model"
        if busy
        else f"the prediction is {where} that spread"
    )
    return [f"  the whole graph's {whole_runs['runs']} runs: 10th percentile {_us(lo)}, 90th {_us(hi)}; {judged}"]


def validation_text(doc: ValidationDoc | Mapping[str, Any]) -> str:
    """What ``dfx validate`` prints: the error figures, the worst nodes and each category's verdict.

    ``doc`` is the document's record (``Validation.to_record()``) or the document itself.
    """
    doc = doc if isinstance(doc, ValidationDoc) else read_validation(doc)
    e2e, roof, unc = doc.end_to_end, doc.roofline, doc.uncounted
    name = doc.model_field("name") or "model"
    compiled = doc.execution == "compiled"
    unit = "kernel" if compiled else "node"
    lines = [
        f"{name} on {doc.hardware} ({doc.prediction}{', compiled: Inductor kernels against dfx kernels' if compiled else ''}; "
        f"{doc.run['threads']} threads, median of {doc.run_field('runs') or doc.run['repeat']} runs)",
        f"  per {unit}: median |error| {doc.median_abs_error:.1%}, 90th percentile {doc.p90_abs_error:.1%}",
        f"  end to end: predicted {_us(e2e.predicted_s)}, measured {_us(e2e.measured_s)}, error {e2e.error:+.1%}",
        *_spread_lines(doc.run_field("whole_runs"), e2e.predicted_s, _busy(doc.run_field("verdict"))),
        f"  plain roofline: median |error| {roof.median_abs_error:.1%}, end to end {roof.end_to_end_error:+.1%}",
        f"  not counted (no work in dfx's costs{', or never run by Inductor' if compiled else ''}): {unc.nodes} "
        f"{unit}{'' if unc.nodes == 1 else 's'}, {_us(unc.measured_s)} measured",
        *drift_notes(doc.run_field("drift"), doc.run_field("overhead_drift")),
        *([f"  {doc.run_field('verdict')['line']}"] if doc.run_field("verdict") else []),
        f"  {unit:<30} category         predicted      measured   ratio",
    ]
    for n in doc.counted:
        lines.append(f"  {n.name:<30} {n.category:<13} {_us(n.predicted_s):>12} {_us(n.measured_s):>13} {n.ratio:7.2f}")
    for k in doc.kernels:
        lines.append(f"  {k.name}: Inductor {', '.join(k.compiler_kernels) or '(none)'}")
    for c in doc.categories:
        verdict = c.why or "within 0.8..1.25"
        lines.append(f"  {c.category}: median ratio {c.median_ratio:.2f} over {c.nodes} {unit}s: {verdict}")
    return "\n".join(lines)
