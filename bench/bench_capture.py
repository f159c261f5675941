"""Benchmark: dfx.analyze against a bare torch.export.export of the same model, in the same run.

For a whole Llama-2-7B (32 layers, shipped config) and a Llama-2-70B-shaped config (80 layers),
both built on the meta device, each measurement runs in a fresh Python process (so neither side
inherits the other's caches or memory), after the same small warm-up export. Reported:

- time ratio = time(dfx.analyze(model, hardware=[])) / time(torch.export.export(model, strict=False))
  (goal: under 1.5x);
- peak resident memory of each process (goal: under 2 GiB for the 70B shape), and of the dfx
  process minus the torch.export process, which is what dfx itself adds.

The bare export runs under ``torch.no_grad()``, as dfx's capture does, so both sides trace the
same program. Each side is measured ``--repeat`` times (fresh processes, alternating) and the fastest run kept,
the usual defence against a busy machine; run it on a quiet machine all the same.

Usage: python bench/bench_capture.py [--seq 128] [--configs hf:llama-2-7b hf:llama-2-70b]
This is a benchmark, not a test: it prints numbers, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
import torch
import dfx
from dfx.models import resolve

which, spec, seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.export.export(torch.nn.Linear(4, 4), (torch.randn(2, 4),), strict=False)  # warm-up, both sides
model = resolve(spec, batch=1, seq=seq, dtype="float16", input_shapes=None)
t0 = time.perf_counter()
if which == "export":
    with torch.no_grad():  # as dfx captures: grad mode changes what export traces and how fast
        torch.export.export(model.model, model.args, model.kwargs, strict=False)
else:
    a = dfx.analyze(model.model, model.args, kwargs=model.kwargs, hardware=[])
    assert a.costed.total.flops > 0
elapsed = time.perf_counter() - t0
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(json.dumps({"time_s": elapsed, "peak_rss_bytes": peak_kib * 1024}))
"""


def _run(which: str, spec: str, seq: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, which, spec, str(seq)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{which} on {spec} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=["hf:llama-2-7b", "hf:llama-2-70b"])
    ns = parser.parse_args()
    print(
        f"{'model':<28} {'export s':>9} {'dfx s':>8} {'ratio':>6} {'export peak':>12} {'dfx peak':>9} {'dfx extra':>10}"
    )
    for spec in ns.configs:
        runs: dict[str, list[dict]] = {"export": [], "dfx": []}
        for _ in range(ns.repeat):
            for which in runs:
                runs[which].append(_run(which, spec, ns.seq))
        ref = min(runs["export"], key=lambda r: r["time_s"])
        ours = min(runs["dfx"], key=lambda r: r["time_s"])
        gib = 2**30
        print(
            f"{Path(spec).name:<28} {ref['time_s']:9.2f} {ours['time_s']:8.2f} {ours['time_s'] / ref['time_s']:6.2f} "
            f"{ref['peak_rss_bytes'] / gib:10.2f} G {ours['peak_rss_bytes'] / gib:7.2f} G "
            f"{(ours['peak_rss_bytes'] - ref['peak_rss_bytes']) / gib:8.2f} G"
        )


if __name__ == "__main__":
    main()
