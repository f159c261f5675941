"""Benchmark: dfx's per-node and per-kernel error on this machine's CPU, eager and compiled (the tables of docs/validation.md).

One run: each model is measured eagerly once (the first measurement, kept only for the repeat
floor), this machine is calibrated (``dfx.measure.calibration``), and every model is measured
again, eagerly (node by node, ``dfx validate``) and compiled (Inductor's C++ kernels one by one,
``dfx validate --compiled``). Each measurement is predicted two ways:

- ``calibrated``: the calibrated profile, its machine model's tables included: what
  ``dfx analyze --hw my-cpu.yaml`` and ``dfx validate --hw my-cpu.yaml`` predict;
- ``roofline``: the same profile without its tables (one peak, one bandwidth per level, one overhead);

and the eager table has a ``repeat`` floor: the first measurement taken as the prediction of the
second, how much the machine itself moved in between. No model can be expected to beat it.

Goals (issue 21), on a quiet machine: eager median |per-node error| <= 15% and |end-to-end error| <=
10%; compiled median |per-kernel error| <= 20% and |end-to-end error| <= 15%. Every measurement
carries the busy-machine verdict (``dfx.measure.busy``); a row whose verdict is BUSY says nothing
about the model.

Usage: python bench/bench_validate.py [--budget-s 45] [--repeat 20] [--models mlp,gpt2-block] [--threads N] [--json-out cal.json] [--out DIR]
About 3 minutes on a quiet 2-core machine (45 s of calibration; the four Inductor compiles take most
of the rest). This is a benchmark, not a test: it prints numbers (Markdown tables), it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from dfx.hardware import parse_profile
from dfx.measure.calibration import calibrate
from dfx.measure.comparison import Validation
from dfx.viz.scatter import scatter_png
from dfx.measure.validation import Measured, measure, measure_compiled, predict

# (model, seq): seq is tokens for the transformer layers; None: the model's own (ResNet block 56 x 56, MLP 1 image)
CASES = (("mlp", None), ("gpt2-block", 64), ("llama-layer", 64), ("resnet-block", None))
GOALS = {"eager": (0.15, 0.10), "compiled": (0.20, 0.15)}  # (median |per-unit error|, |end-to-end error|)


def describe_machine() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        name = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "")
    except OSError:
        name = platform.processor()
    return (
        f"{name}, nproc {os.cpu_count()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"load average {os.getloadavg()[0]:.2f}"
    )


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _size(seq: int | None) -> str:
    return "default" if seq is None else f"seq {seq}"


def _machine(m: Measured) -> str:
    v = m.run.get("verdict")
    return "-" if not v else ("BUSY" if v["busy"] else "quiet")


def _met(median: float, e2e: float, execution: str) -> str:
    node_goal, e2e_goal = GOALS[execution]
    return "yes" if median <= node_goal and abs(e2e) <= e2e_goal else "no"


def _spread(m: Measured) -> str:
    """The whole graph's runs, 10th to 90th percentile, and how many (``run["whole_runs"]``)."""
    w = m.run.get("whole_runs")
    return "-" if not w else f"{w['p10_s'] * 1e6:,.0f} to {w['p90_s'] * 1e6:,.0f} us ({w['runs']:,} runs)"


def _row(model: str, seq: int | None, m: Measured, doc: dict, roof: dict, execution: str, floor: str = "") -> str:
    e = doc["end_to_end"]
    units = sum(n["counted"] for n in doc["nodes"])
    return (
        f"| {model} | {_size(seq)} | {units} | {doc['median_abs_error']:.0%} | {doc['p90_abs_error']:.0%} | "
        f"{e['predicted_s'] * 1e6:,.0f} us | {e['measured_s'] * 1e6:,.0f} us | {_spread(m)} | {e['error']:+.0%} | "
        f"{_met(doc['median_abs_error'], e['error'], execution)} | {roof['median_abs_error']:.0%} / {roof['end_to_end']['error']:+.0%} | "
        f"{floor}{' | ' if execution == 'eager' else ''}{_machine(m)} |"
    )


def _write(out: str | None, stem: str, validation: Validation) -> None:
    if out:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        record = validation.to_record()
        (folder / f"{stem}.json").write_text(json.dumps(record.to_dict(), indent=1))
        (folder / f"{stem}.png").write_bytes(scatter_png(record))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=45.0)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", help="comma-separated subset of " + ",".join(m for m, _ in CASES))
    ap.add_argument(
        "--threads", type=int, help="torch threads for the calibration and every run (default: torch's own)"
    )
    ap.add_argument("--json-out", help="write the calibration document (dfx.calibration/1) here")
    ap.add_argument("--out", help="write each validation document and scatter plot into this folder")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.models or c[0] in a.models.split(",")]
    if a.threads:
        torch.set_num_threads(a.threads)  # before the calibration, which pins and reports it
    start = time.perf_counter()
    print(f"machine: {describe_machine()}")
    first = {}
    for model, seq in cases:
        _log(f"measuring {model} (eager, before calibrating: the repeat floor)")
        first[model] = measure(model, seq=seq, repeat=a.repeat)
    cal = calibrate(budget_s=a.budget_s, on_step=lambda s: _log(f"  calibrating: {s}"))
    doc = cal.to_dict()
    if a.json_out:
        Path(a.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json_out).write_text(json.dumps(doc, indent=1))
    hw = parse_profile(cal.to_profile(), "calibrated")  # with its machine model's tables
    plain = hw.model_copy(update={"calibrated": None})  # the same figures without them
    print(f"calibration ({doc['date']}): {cal.verdict.line if cal.verdict else 'no verdict'}")
    for warning in doc["warnings"]:
        print(f"warning: {warning}")
    eager, compiled = [], []
    for model, seq in cases:
        _log(f"measuring {model} (eager)")
        m = measure(model, seq=seq, repeat=a.repeat)
        calibrated = predict(m, hw, "cache-aware")
        v, r = calibrated.to_dict(), predict(m, plain, "roofline").to_dict()
        counted = [n["name"] for n in r["nodes"] if n["counted"] and m.node_s.get(n["name"])]
        errors = sorted(abs(first[model].node_s[n] - m.node_s[n]) / m.node_s[n] for n in counted)
        rep = (
            f"{errors[len(errors) // 2]:.0%} / {(first[model].whole_s - m.whole_s) / m.whole_s:+.0%}" if errors else "-"
        )
        eager.append(_row(model, seq, m, v, r, "eager", rep))
        _write(a.out, f"{model}-eager", calibrated)
        _log(f"measuring {model} (compiled: Inductor, CPU)")
        mc = measure_compiled(model, seq=seq, repeat=a.repeat)
        calibrated = predict(mc, hw, "cache-aware")
        vc, rc = calibrated.to_dict(), predict(mc, plain, "roofline").to_dict()
        compiled.append(_row(model, seq, mc, vc, rc, "compiled"))
        _write(a.out, f"{model}-compiled", calibrated)
    head = (
        "| model | size | {unit}s | median abs err | p90 | end-to-end predicted | measured | runs p10 to p90 | error | goal met | "
        "roofline median / end to end |{extra} machine |"
    )
    print(
        f"\n## Eager (one operator at a time), goal <= {GOALS['eager'][0]:.0%} per node, <= {GOALS['eager'][1]:.0%} end to end\n"
    )
    print(head.format(unit="node", extra=" repeat floor |"))
    print("|---" * 13 + "|")
    print("\n".join(eager))
    print(
        f"\n## Compiled (Inductor, C++ on the CPU), goal <= {GOALS['compiled'][0]:.0%} per kernel, <= {GOALS['compiled'][1]:.0%} end to end\n"
    )
    print(head.format(unit="kernel", extra=""))
    print("|---" * 12 + "|")
    print("\n".join(compiled))
    print(f"\nafter: {describe_machine()}; {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
