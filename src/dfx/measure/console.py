"""Plain-text summaries of the ``dfx.calibration/1`` and ``dfx.validation/1`` documents."""

from __future__ import annotations

from typing import Any

__all__ = ["calibration_text", "validation_text"]


def _us(s: float) -> str:
    return f"{s * 1e6:,.1f} us"


def calibration_text(doc: dict[str, Any]) -> str:
    """What ``dfx calibrate`` prints: one line per measured figure, with how it was measured."""
    p = doc["profile"]
    lines = [f"{p['name']}: {doc['threads']} threads, torch {doc['torch_version']}"]
    for dtype, v in p["peak_flop_per_s"].items():
        lines.append(f"  peak {dtype:<10} {v / 1e9:10,.1f} GFLOP/s")
    for level in p["memory"]:
        cap = f"{level['capacity_bytes'] / 2**20:,.1f} MiB" if level["capacity_bytes"] else "-"
        lines.append(f"  {level['name']:<15} {level['bandwidth_bytes_per_s'] / 1e9:10,.1f} GB/s   capacity {cap}")
    lines.append(f"  op overhead     {_us(p['op_overhead_s']):>13}")
    if doc.get("vector_flop_per_s"):
        lines.append(f"  vector ops      {doc['vector_flop_per_s'] / 1e9:10,.1f} GFLOP/s")
    for point in doc.get("gemm_curve") or ():
        lines.append(f"  GEMM {point['flops'] / 1e6:7,.0f} MFLOP {point['flop_per_s'] / 1e9:8,.1f} GFLOP/s")
    if doc.get("vector_flop_per_s") or doc.get("gemm_curve"):
        lines.append("  (vector ops and GEMM sizes are not in the profile: save `--json` and pass it to `dfx validate --calibration`)")
    lines += [f"warning: {w}" for w in doc["warnings"]]
    return "\n".join(lines)


def validation_text(doc: dict[str, Any]) -> str:
    """What ``dfx validate`` prints: the error figures, the worst nodes and each category's verdict."""
    e2e, roof = doc["end_to_end"], doc["roofline"]
    name = doc["model"].get("name", "model")
    lines = [
        f"{name} on {doc['hardware']} ({doc['prediction']}; {doc['run']['threads']} threads, median of {doc['run']['repeat']} runs)",
        f"  per node: median |error| {doc['median_abs_error']:.1%}, 90th percentile {doc['p90_abs_error']:.1%}",
        f"  end to end: predicted {_us(e2e['predicted_s'])}, measured {_us(e2e['measured_s'])}, error {e2e['error']:+.1%}",
        f"  plain roofline: median |error| {roof['median_abs_error']:.1%}, end to end {roof['end_to_end_error']:+.1%}",
        f"  not counted (no work in dfx's costs): {doc['uncounted']['nodes']} nodes, {_us(doc['uncounted']['measured_s'])} measured",
        "  node                           category         predicted      measured   ratio",
    ]
    for n in doc["nodes"]:
        if n["counted"]:
            lines.append(f"  {n['name']:<30} {n['category']:<13} {_us(n['predicted_s']):>12} {_us(n['measured_s']):>13} {n['ratio']:7.2f}")
    for c in doc["categories"]:
        verdict = c["why"] or "within 0.8..1.25"
        lines.append(f"  {c['category']}: median ratio {c['median_ratio']:.2f} over {c['nodes']} nodes: {verdict}")
    return "\n".join(lines)
