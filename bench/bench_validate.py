"""Benchmark: dfx's per-node and end-to-end error on this machine's CPU (the figures of docs/validation.md).

Calibrates this machine (``dfx.measure.calibration``), then runs ``dfx.measure.validation`` on the
three models of issue 10 at sizes that run in seconds on a small CPU, with both predictions:

- ``roofline``: exactly what ``dfx analyze --hw <calibrated profile>`` predicts (eager: every byte
  at DRAM bandwidth);
- ``cache-aware``: the same formula with each node's bytes at the bandwidth of the cache that holds
  its working set (``dfx.measure.cache_model``);
- ``cache-aware + vector``: and elementwise / normalization FLOPs at the calibrated vector rate;
- ``cache-aware + vector + GEMM curve``: and each matmul at the measured rate of a GEMM of its size
  (what ``dfx validate --calibration cal.json`` does).

The peer is the measurement itself: each node's median over ``--repeat`` runs, in the same process.
Goal (issue 10): median |per-node error| <= 25% and |end-to-end error| <= 15% after calibration.

Usage: python bench/bench_validate.py [--budget-s 45] [--repeat 30] [--profile-out cal.yaml] [--json-out cal.json] [--out DIR]
This is a benchmark, not a test: it prints numbers (a Markdown table), it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import torch
import yaml

from dfx.hardware import parse_profile
from dfx.measure.calibration import calibrate
from dfx.measure.plot import scatter_png
from dfx.measure.validation import measure, predict

# (model, seq): seq is tokens for gpt2-block, the image side for resnet-block, images per sample for mlp
CASES = (("mlp", 1), ("gpt2-block", 64), ("resnet-block", 28))


def machine() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        name = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "")
    except OSError:
        name = platform.processor()
    return (f"{name}, nproc {os.cpu_count()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=45.0)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json-out", help="write the calibration document (dfx.calibration/1) here")
    ap.add_argument("--profile-out", help="write the calibrated profile here")
    ap.add_argument("--calibration", help="use this `dfx calibrate --json` document instead of calibrating now")
    ap.add_argument("--out", help="write each validation document and scatter plot into this folder")
    a = ap.parse_args()
    print(f"machine: {machine()}")
    if a.calibration:
        doc = json.loads(Path(a.calibration).read_text())
    else:
        doc = calibrate(budget_s=a.budget_s, on_step=lambda s: print(f"  calibrating: {s}", file=sys.stderr)).to_dict()
        for w in doc["warnings"]:
            print(f"warning: {w}")
    profile, vector = doc["profile"], doc["vector_flop_per_s"]
    curve = tuple((p["flops"], p["flop_per_s"]) for p in doc["gemm_curve"])
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(doc, indent=1))
    if a.profile_out:
        Path(a.profile_out).write_text(yaml.safe_dump(profile, sort_keys=False))
    hw = parse_profile(profile, "calibrated")
    print(f"profile: peak fp32 {hw.peak('float32').flop_per_s / 1e9:.1f} GFLOP/s, "
          + ", ".join(f"{lv.name} {lv.bandwidth_bytes_per_s / 1e9:.1f} GB/s" for lv in hw.memory)
          + f", overhead {hw.op_overhead_s * 1e6:.2f} us, vector ops {(vector or 0) / 1e9:.2f} GFLOP/s, GEMM curve "
          + ", ".join(f"{f / 1e6:.0f} MFLOP {r / 1e9:.0f}" for f, r in curve) + " GFLOP/s")  # fmt: skip
    print()
    print("| model | size | prediction | median abs err | p90 abs err | end-to-end predicted | measured | error |")
    print("|---|---|---|---|---|---|---|---|")
    variants = [("roofline", None, (), "roofline"), ("cache-aware", None, (), "cache-aware"),
                ("cache-aware", vector, (), "cache-aware + vector"), ("cache-aware", vector, curve, "cache-aware + vector + GEMM curve")]
    for model, seq in CASES:
        run = measure(model, seq=seq, repeat=a.repeat)  # measured once, predicted every way
        for prediction, rate, gemms, label in variants:
            v = predict(run, hw, prediction, rate, gemms)
            doc = v.to_dict()
            e = doc["end_to_end"]
            print(f"| {model} | seq {seq} | {label} | {doc['median_abs_error']:.0%} | {doc['p90_abs_error']:.0%} | "
                  f"{e['predicted_s'] * 1e6:,.0f} us | {e['measured_s'] * 1e6:,.0f} us | {e['error']:+.0%} |")  # fmt: skip
            if a.out:
                out = Path(a.out)
                out.mkdir(parents=True, exist_ok=True)
                stem = f"{model}-{label.replace(' + ', '-').replace(' ', '-')}"
                (out / f"{stem}.json").write_text(json.dumps(doc, indent=1))
                (out / f"{stem}.png").write_bytes(scatter_png(doc))
    print(f"\nafter: {machine()}")


if __name__ == "__main__":
    main()
