"""Benchmark: does ``dfx calibrate`` succeed on this machine, run after run, and is each refusal right?

Runs ``dfx calibrate --out DIR/host-N.yaml --json-out DIR/cal-N.json`` ``--runs`` times (5 by
default), each as a whole process, one after another, and prints per run: the 1-minute load
average before it (``/proc/loadavg``), its exit status and wall time, its verdict (the last line
starting ``verdict:`` or ``error: calibrate refused``), its memory levels' bandwidths (GB/s, from
the document) and any warning that two levels measured alike. Then the count of runs kept.

On a quiet machine every run should be kept (issue 36: 5 in 5); a refusal must name evidence of
other load (other processes' CPU time, steal time, a spin probe) that was really there, so quote
the load averages with the verdicts. Do not run it on a machine others are using and call the
refusals wrong.

Usage: python bench/bench_calibrate.py [--runs 5] [--budget-s 45] [--out DIR]
This is a benchmark, not a test: it prints verdicts, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _load_1min() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def _verdict(stderr: str, stdout: str) -> str:
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines()]
    for ln in reversed(lines):
        if ln.startswith(("verdict:", "error: calibrate refused", "error:")):
            return ln
    return "(no verdict line)"


def _levels(doc_path: Path) -> str:
    if not doc_path.exists():
        return "-"
    doc = json.loads(doc_path.read_text())
    figures = {
        k.split(".")[1]: v["value"]
        for k, v in doc.get("measurements", {}).items()
        if k.startswith("memory.") and k.endswith("bandwidth_bytes_per_s")
    }
    return ", ".join(f"{level} {value / 1e9:.0f}" for level, value in figures.items()) + " GB/s"


def run_once(i: int, out: Path, budget_s: float) -> bool:
    doc = out / f"cal-{i}.json"
    cmd = [sys.executable, "-m", "dfx.cli", "calibrate", "--out", str(out / f"host-{i}.yaml"), "--json-out", str(doc)]
    cmd += ["--budget-s", str(budget_s)]
    load = _load_1min()
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    alike = [ln for ln in proc.stderr.splitlines() if "measure alike" in ln]
    print(f"run {i}: load {load} before, exit {proc.returncode}, {wall:.0f} s; {_levels(doc)}")
    print(f"  {_verdict(proc.stderr, proc.stdout)}")
    for ln in alike:
        print(f"  {ln}")
    return proc.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=45.0)
    parser.add_argument(
        "--out", type=Path, default=None, help="Folder for the profiles and documents (default: a temporary one)."
    )
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="dfx-bench-calibrate-"))
    out.mkdir(parents=True, exist_ok=True)
    kept = sum(run_once(i, out, args.budget_s) for i in range(1, args.runs + 1))
    print(f"kept {kept} of {args.runs} calibrations (files in {out})")


if __name__ == "__main__":
    main()
