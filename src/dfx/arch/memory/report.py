"""Plain-text renderings of the capacity, tile and energy documents (they read only the export dicts)."""

from __future__ import annotations

from typing import Any

from dfx.report.console import format_seconds

__all__ = ["capacity_lines", "energy_lines", "tile_lines"]


def _b(x: float | None) -> str:
    if x is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(x) >= size:
            return f"{x / size:,.2f} {unit}"
    return f"{x:,.0f} B"


def capacity_lines(d: dict[str, Any]) -> list[str]:
    """``dfx capacity`` as text."""
    kv = d["kv"]
    geo = f" ({kv['layers']} layers x {kv['kv_heads']} KV heads x {kv['head_dim']})" if "kv_heads" in kv else ""
    lines = [
        f"{d['model']} on {d['hardware']}, {d['dtype']}, batch {d['batch']}, seq {d['seq']}",
        f"  parameters   {d['parameter_count']:,} -> {_b(d['parameter_bytes'])}",
        f"  activations  {_b(d['activation_bytes'])} (peak live)",
        f"  KV cache     {_b(d['kv_cache_bytes'])}{geo}",
        f"  on chip      {_b(d['onchip_capacity_bytes'])} {d['onchip_level'] or ''} per chip, "
        f"{_b(d['onchip_per_core_bytes'])} per core",
        f"  off chip     {_b(d['offchip_capacity_bytes'])} {d['offchip_level'] or '(none)'}",
        f"  fits on one chip: {'yes' if d['fits_on_chip'] else 'no'}; chips to hold the weights on chip: "
        f"{d['chips_needed']} (cores: {d['cores_needed']})",
    ]
    spill = {k: v for k, v in d["spill_bytes"].items() if v}
    if spill:
        parts = ", ".join(f"{k} {_b(v)}" for k, v in spill.items())
        lines.append(f"  spills to {d['spills_to']}: {parts}")
    return lines


def tile_lines(d: dict[str, Any]) -> list[str]:
    """``dfx tile`` as a table: the chosen tile and the one-array-side tile per matmul."""
    lines = [
        f"{d['hardware']}, {d['dtype']}: scratchpad {_b(d['scratchpad_bytes'])} per core, {d['cores']} cores, "
        f"{'double' if d['double_buffer'] else 'single'}-buffered inputs"
        + (f", {d['acc_dtype']} accumulator" if d.get("acc_dtype") else ""),
        f"{'matmul':<34} {'MxKxN (xbatch)':<22} {'tile tm,tn,tk':<18} {'working set':>12} {'off-chip':>12} "
        f"{'FLOP/B':>8} {'time':>11}  bound",
    ]
    for m in d["matmuls"]:
        shape = f"{m['m']}x{m['k']}x{m['n']}" + (f" x{m['batch']}" if m["batch"] > 1 else "")
        for label, t in (("", m), ("  small tile", m["small_tile"])):
            tt = t["tile"]
            lines.append(
                f"{(m['name'] if not label else label)[:34]:<34} {shape if not label else '':<22} "
                f"{tt['tm']},{tt['tn']},{tt['tk']:<10} {_b(t['working_set_bytes']):>12} {_b(t['offchip_bytes']):>12} "
                f"{t['intensity']:>8.1f} {format_seconds(t['time_s']):>11}  {t['bound']}"
            )
    return lines


def energy_lines(d: dict[str, Any], top: int = 10) -> list[str]:
    """``dfx energy`` as text: totals per model and the nodes with the most eager energy."""
    lines = [
        f"{d.get('model', '')} on {d['hardware']}: energies at {d['process']}"
        + (f"; device built in {d['device_process']}" if d.get("device_process") else "")
    ]
    for name in ("eager", "dataflow"):
        e = d[name]
        moves = ", ".join(f"{lv} {j * 1e3:.3f} mJ ({_b(e['bytes'][lv])})" for lv, j in e["movement_j"].items())
        lines.append(f"  {name:<9} total {e['total_j'] * 1e3:.3f} mJ = compute {e['compute_j'] * 1e3:.3f} mJ + {moves}")
    lines.append(
        f"  ratio eager / dataflow = {d['ratio']:.2f}x (weights on chip: {'yes' if d['weights_on_chip'] else 'no'})"
    )
    lt = d.get("lifetime")
    if lt:
        lines.append(
            f"  activations: peak live {_b(lt['peak_bytes'])}, peak on chip {_b(lt['peak_onchip_bytes'])} "
            f"of {_b(lt['capacity_bytes'])} free, spilled {_b(lt['spilled_bytes'])}"
        )
    nodes = sorted(d["nodes"], key=lambda n: -n["eager_j"])[:top]
    lines.append(f"  {'node':<32} {'eager':>11} {'dataflow':>11}")
    lines += [f"  {n['name'][:32]:<32} {n['eager_j'] * 1e6:>9.2f}uJ {n['dataflow_j'] * 1e6:>9.2f}uJ" for n in nodes]
    return lines
