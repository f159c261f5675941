"""Benchmark: dfx's analytical systolic model against SCALE-Sim 3.0.0 on the same grid of layers.

The grid: GEMMs and conv layers (a few ResNet- and transformer-shaped ones, scaled so SCALE-Sim
finishes in about a minute) on 8x8 to 32x32 arrays, under os, ws and is. SCALE-Sim runs in its own
venv (``tests/arch/systolic/scalesim_env.py``: scalesim 3.0.0 needs numpy 1.26), in CALC mode with
large SRAMs, one process for the whole grid; its time per layer is measured inside that process
(the import is not counted). dfx's time is the best of ``--repeat`` passes over the grid.

Printed: per layer, both cycle counts (dfx's count vs SCALE-Sim's last-cycle index + 1) and
whether they are identical; then the total times and the speed ratio.
Goal (issue 7): at least 1000x faster, identical cycles.

Usage: python bench/bench_systolic.py [--repeat 50]
This is a benchmark, not a test: it prints numbers, it asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dfx.arch.systolic import ConvLayer, conv, gemm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "arch" / "systolic"))
from scalesim_env import run_scalesim  # noqa: E402

_CONV_FIELDS = ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride")
GEMMS = [((128, 64, 64), (16, 16)), ((256, 128, 64), (32, 32)), ((64, 256, 96), (8, 8)), ((197, 64, 192), (32, 32))]
CONVS = [
    ((28, 28, 3, 3, 16, 32, 1), (16, 16)),
    ((56, 56, 1, 1, 16, 16, 1), (16, 16)),
    ((15, 15, 3, 3, 32, 32, 2), (8, 8)),
    ((32, 32, 7, 7, 3, 16, 2), (32, 32)),
]


def grid() -> list[dict]:
    out = []
    for dataflow in ("os", "ws", "is"):
        out += [
            {"kind": "gemm", "m": m, "k": k, "n": n, "rows": r, "cols": c, "dataflow": dataflow}
            for (m, k, n), (r, c) in GEMMS
        ]
        out += [
            {"kind": "conv", **dict(zip(_CONV_FIELDS, layer)), "rows": r, "cols": c, "dataflow": dataflow}
            for layer, (r, c) in CONVS
        ]
    return out


def run_dfx(case: dict):
    arr = dict(rows=case["rows"], cols=case["cols"], dataflow=case["dataflow"])
    if case["kind"] == "gemm":
        return gemm(case["m"], case["k"], case["n"], **arr)
    return conv(ConvLayer(*(case[f] for f in _CONV_FIELDS)), **arr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    cases = grid()
    print(f"SCALE-Sim on {len(cases)} layers (its own venv, one process) ...", flush=True)
    refs = run_scalesim(cases)
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        ours = [run_dfx(c) for c in cases]
        best = min(best, time.perf_counter() - start)
    same = 0
    print(f"{'layer':<44} {'df':<3} {'dfx cycles':>11} {'SCALE-Sim':>10} {'same':>5} {'SCALE-Sim s':>12}")
    for case, ref, res in zip(cases, refs, ours):
        dims = (
            f"gemm {case['m']}x{case['k']}x{case['n']}"
            if case["kind"] == "gemm"
            else "conv " + ",".join(str(case[f]) for f in _CONV_FIELDS)
        )
        theirs = ref["compute_cycles_reported"] + 1  # SCALE-Sim prints the index of the last cycle
        ok = theirs == res.compute_cycles
        same += ok
        print(
            f"{dims + ' on ' + str(case['rows']) + 'x' + str(case['cols']):<44} {case['dataflow']:<3} "
            f"{res.compute_cycles:>11} {theirs:>10} {'yes' if ok else 'NO':>5} {ref['seconds']:>12.3f}"
        )
    scalesim_s = sum(r["seconds"] for r in refs)
    print(f"\nidentical cycles: {same}/{len(cases)}")
    print(
        f"SCALE-Sim: {scalesim_s:.2f} s   dfx: {best * 1e3:.3f} ms (best of {args.repeat})   "
        f"speed ratio: {scalesim_s / best:,.0f}x (goal >= 1000x)"
    )


if __name__ == "__main__":
    main()
