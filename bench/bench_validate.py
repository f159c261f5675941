"""Benchmark: dfx's per-node and end-to-end error on this machine's CPU (the figures of docs/validation.md).

Each round measures the three models of issue 10 (at sizes that run in seconds on a small CPU),
calibrates this machine (``dfx.measure.calibration``), measures the models again, and predicts the
second measurement several ways (``dfx.measure.validation.predict``):

- ``roofline``: exactly what ``dfx analyze --hw <calibrated profile>`` predicts (eager: every byte
  at DRAM bandwidth, one peak, one overhead);
- ``cache-aware``: the same formula with each node's bytes at the bandwidth of the cache that holds
  its working set (``dfx.measure.cache_model``);
- ``calibrated``: the cache-aware formula with the calibrated machine model (``dfx.measure.machine``:
  overhead curve and per-kind overheads, vector rates, GEMM table, attention rates, cache
  residency): what ``dfx validate --calibration cal.json`` does;
- ``calibrated - X``: the same with one table left out, to show what each one buys;
- ``repeat``: the first measurement taken as the prediction of the second. No model can be
  expected to beat this floor: it is how much the machine itself moved between two measurements
  one calibration apart, the time between ``dfx calibrate`` and ``dfx validate``.

The peer is the measurement itself: each node's median over ``--repeat`` runs, in the same process.
Goal (issue 10): median |per-node error| <= 25% and |end-to-end error| <= 15% after calibration.

Usage: python bench/bench_validate.py [--rounds 3] [--budget-s 45] [--repeat 30] [--json-out cal.json] [--out DIR]
This is a benchmark, not a test: it prints numbers (Markdown tables), it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import torch

from dfx.hardware import parse_profile
from dfx.measure.calibration import calibrate
from dfx.measure.machine import MachineModel
from dfx.measure.plot import scatter_png
from dfx.measure.validation import Measured, machine_drift, measure, overhead_drift, predict

# (model, seq): seq is tokens for gpt2-block, the image side for resnet-block, images per sample for mlp
CASES = (("mlp", 1), ("gpt2-block", 64), ("resnet-block", 28))


def describe_machine() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        name = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "")
    except OSError:
        name = platform.processor()
    return (f"{name}, nproc {os.cpu_count()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip


def describe_tables(tables: MachineModel, hw) -> str:
    lines = [
        f"profile: peak fp32 {hw.peak('float32').flop_per_s / 1e9:.1f} GFLOP/s, "
        + ", ".join(f"{lv.name} {lv.bandwidth_bytes_per_s / 1e9:.1f} GB/s" for lv in hw.memory)
        + f", overhead {hw.op_overhead_s * 1e6:.2f} us",
        "overheads by kind (us): " + ", ".join(f"{k} {v * 1e6:.1f}" for k, v in tables.overhead_by_kind.items()),
        "overhead curve (ms since the kind last ran: us): " + ", ".join(f"{g * 1e3:.3g}: {o * 1e6:.1f}" for g, o in tables.overhead_curve),
        "vector rates (GFLOP/s): " + ", ".join(f"{k} {v / 1e9:.2f}" for k, v in tables.vector_flop_per_s.items()),
        "attention (GFLOP/s): " + ", ".join(f"{'causal' if c else 'full'} S={n}: {r / 1e9:.0f}" for c, n, r in tables.attention_rates),
        "GEMM table (rows x k x n: GFLOP/s): " + ", ".join(f"{p.rows}x{p.k}x{p.n}: {p.flop_per_s / 1e9:.0f}" for p in tables.gemm_table),
        f"resident bytes: {(tables.resident_bytes or 0) / 2**20:.1f} MiB",
    ]
    return "\n".join(lines)


def repeatability(first: Measured, second: Measured, counted: set[str]) -> tuple[float, float]:
    """(median over counted nodes of |first - second| / second, end-to-end (first - second) / second)."""
    errors = [abs(first.node_s[n] - second.node_s[n]) / second.node_s[n] for n in counted if second.node_s.get(n)]
    return statistics.median(errors), (first.whole_s - second.whole_s) / second.whole_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=45.0)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json-out", help="write the last round's calibration document (dfx.calibration/1) here")
    ap.add_argument("--out", help="write each validation document and scatter plot of the last round into this folder")
    a = ap.parse_args()
    print(f"machine: {describe_machine()}")
    summary: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for rnd in range(1, a.rounds + 1):
        first = {model: measure(model, seq=seq, repeat=a.repeat) for model, seq in CASES}
        doc = calibrate(budget_s=a.budget_s, on_step=lambda s: print(f"  calibrating: {s}", file=sys.stderr)).to_dict()
        second = {model: measure(model, seq=seq, repeat=a.repeat) for model, seq in CASES}
        hw, tables = parse_profile(doc["profile"], "calibrated"), MachineModel.from_calibration(doc)
        print(f"\n## Round {rnd} ({describe_machine()})\n")
        for warning in doc["warnings"]:
            print(f"warning: {warning}")
        print(describe_tables(tables, hw))
        if a.json_out:
            Path(a.json_out).write_text(json.dumps(doc, indent=1))
        variants = [
            ("roofline", None, "roofline"),
            ("cache-aware", None, "cache-aware"),
            ("cache-aware", replace(tables, overhead_curve=(), overhead_by_kind={}), "calibrated - overheads"),
            ("cache-aware", replace(tables, vector_flop_per_s={}), "calibrated - vector rates"),
            ("cache-aware", replace(tables, gemm_table=()), "calibrated - GEMM table"),
            ("cache-aware", replace(tables, attention_rates=()), "calibrated - attention"),
            ("cache-aware", replace(tables, resident_bytes=None), "calibrated - residency"),
            ("cache-aware", tables, "calibrated"),
        ]
        print("\n| model | size | prediction | median abs err | p90 abs err | end-to-end predicted | measured | error |")
        print("|---|---|---|---|---|---|---|---|")
        for model, seq in CASES:
            run = second[model]
            counted: set[str] = set()
            for prediction, model_tables, label in variants:
                record = predict(run, hw, prediction, model_tables).to_record()
                doc_v = record.to_dict()
                counted = {n["name"] for n in doc_v["nodes"] if n["counted"]}
                e = doc_v["end_to_end"]
                summary.setdefault((model, label), []).append((doc_v["median_abs_error"], e["error"]))
                print(f"| {model} | seq {seq} | {label} | {doc_v['median_abs_error']:.0%} | {doc_v['p90_abs_error']:.0%} | "
                      f"{e['predicted_s'] * 1e6:,.0f} us | {e['measured_s'] * 1e6:,.0f} us | {e['error']:+.0%} |")  # fmt: skip
                if a.out and rnd == a.rounds:
                    out = Path(a.out)
                    out.mkdir(parents=True, exist_ok=True)
                    stem = f"{model}-{label.replace(' - ', '-no-').replace(' ', '-')}"
                    (out / f"{stem}.json").write_text(json.dumps(doc_v, indent=1))
                    (out / f"{stem}.png").write_bytes(scatter_png(record))
            node_err, whole_err = repeatability(first[model], run, counted)
            summary.setdefault((model, "repeat"), []).append((node_err, whole_err))
            drifts = [machine_drift(tables, m.run["reference_flop_per_s"]) for m in (first[model], run)]
            summary.setdefault((model, "reference GEMM vs calibration"), []).append(tuple(drifts))  # type: ignore[arg-type]
            slower = [overhead_drift(tables, m.run["reference_overhead_s"]) for m in (first[model], run)]
            summary.setdefault((model, "tiny-op time vs calibration"), []).append(tuple(slower))  # type: ignore[arg-type]
            print(f"| {model} | seq {seq} | repeat | {node_err:.0%} | | {first[model].whole_s * 1e6:,.0f} us | "
                  f"{run.whole_s * 1e6:,.0f} us | {whole_err:+.0%} |")  # fmt: skip
            print(f"| {model} | seq {seq} | reference GEMM FLOP/s vs calibration, first / second | | | | | "
                  f"{drifts[0]:+.0%} / {drifts[1]:+.0%} |")  # fmt: skip
            print(f"| {model} | seq {seq} | tiny-op time vs calibration, first / second | | | | | "
                  f"{slower[0]:+.0%} / {slower[1]:+.0%} |")  # fmt: skip
    print(f"\n## Over {a.rounds} rounds: median |per-node error| and end-to-end error, each round\n")
    print("| model | prediction | median abs err | end-to-end error |")
    print("|---|---|---|---|")
    for (model, label), values in summary.items():
        if label in ("roofline", "calibrated", "repeat"):
            nodes = ", ".join(f"{m:.0%}" for m, _ in values)
            whole = ", ".join(f"{e:+.0%}" for _, e in values)
            print(f"| {model} | {label} | {nodes} | {whole} |")
        elif label.startswith(("reference", "tiny-op")):
            print(f"| {model} | {label} | | " + ", ".join(f"{a:+.0%} / {b:+.0%}" for a, b in values) + " |")
    print(f"\nafter: {describe_machine()}")


if __name__ == "__main__":
    main()
