"""Benchmark: the user's ``dfx analyze MODEL --seq 128 --json``, cold and warm capture cache, against a bare torch.export.

Three kinds of process per model, each timed whole (start to exit: what a user waits for, imports
included) with its peak resident memory:

- ``export``: ``python -c`` importing torch, building the model on the meta device as dfx does
  (:func:`dfx.models.resolve`, the same dtype) and calling ``torch.export.export(strict=False)``
  under ``torch.no_grad()`` (as dfx's capture does): the peer, what any tracing tool pays;
- ``cold``: ``dfx analyze MODEL --seq N --json`` (default profiles) with an empty capture cache
  (``DFX_CACHE_DIR`` a fresh folder): capture, costs, compile, evaluation, the JSON;
- ``warm``: the same command again on the same cache folder: the capture is read from disk.

Printed: seconds and peak GiB of each, and the ratios cold/export and warm/export. The warm and cold
JSON documents are compared (equal but for nothing: the cache must not change an analysis). Each
kind runs ``--repeat`` times, alternating, and the fastest run is kept (the usual defence against
a busy machine); say the machine's load when you quote the numbers.

With ``--sweep``, also the sweep a user runs, as whole ``dfx sweep`` processes: 1,008 points (3
models x 6 profiles x 8 seq x 7 batch, :data:`SWEEP_AXES`) into a fresh ``--out`` with an
empty capture cache (every graph captured: points/s with the capture), then into another fresh
``--out`` on the filled cache (points/s without it).

Usage: python bench/bench_capture.py [--seq 128] [--repeat 2] [--configs hf:llama-2-7b hf:llama-2-70b] [--sweep]
This is a benchmark, not a test: it prints numbers, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_EXPORT = r"""
import sys
import torch
from dfx.models import resolve

spec, seq = sys.argv[1], int(sys.argv[2])
model = resolve(spec, batch=1, seq=seq, dtype="bfloat16")  # dfx analyze's default --dtype
with torch.no_grad():  # as dfx captures: grad mode changes what export traces and how fast
    torch.export.export(model.model, model.args, model.kwargs, strict=False)
"""


def _peak(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run ``cmd`` under a wrapper that reports its own child's peak memory (one process's figure)."""
    wrapper = (
        "import json,resource,subprocess,sys,time\n"
        "t=time.perf_counter();p=subprocess.run(sys.argv[1:],capture_output=True,text=True)\n"
        "e=time.perf_counter()-t\n"
        "sys.stderr.write(p.stderr);sys.stdout.write(p.stdout)\n"
        "print(json.dumps({'rc':p.returncode,'s':e,'peak':resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss*1024}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, env=env)
    lines = proc.stdout.rstrip("\n").rsplit("\n", 1)
    stats = json.loads(lines[-1])
    if stats["rc"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return stats["s"], stats["peak"], lines[0] if len(lines) > 1 else ""


SWEEP_AXES = [
    "-m", "gpt2-block,bert-layer,llama3-8b-layer",
    "--hw", "nvidia-h100-sxm,nvidia-a100-sxm-80gb,google-tpu-v4,groq-lpu,cerebras-wse-3,ibm-spyre",
    "--seq", "8,16,24,32,48,64,96,128",
    "--batch", "1,2,3,4,6,8,16",
]  # fmt: skip
SWEEP_POINTS = 3 * 6 * 8 * 7  # issue 37's "1,000-point sweep of 3 models over 6 profiles": 1,008


def _sweep(repeat: int) -> None:
    """Points/s of whole ``dfx sweep`` processes: cold capture cache, then warm with another --out."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="dfx-bench-sweep-") as tmp:
            env = {**os.environ, "DFX_CACHE_DIR": str(Path(tmp) / "cache")}
            for kind in ("cold", "warm"):
                cmd = [sys.executable, "-m", "dfx.cli", "sweep", *SWEEP_AXES, "--out", str(Path(tmp) / kind)]
                s, _, _ = _peak([*cmd, "--no-report"], env)
                best[kind] = min(best.get(kind, s), s)
    for kind, label in (("cold", "with the capture (empty cache)"), ("warm", "without it (capture cache, new --out)")):
        print(
            f"dfx sweep, {SWEEP_POINTS} points, {label}: {best[kind]:.1f} s, {SWEEP_POINTS / best[kind]:.1f} points/s"
        )


def _doc_numbers(text: str) -> dict:
    doc = json.loads(text)
    return {"totals": doc.get("totals"), "hardware": doc.get("hardware")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--configs", nargs="*", default=["hf:llama-2-7b", "hf:llama-2-70b"])
    parser.add_argument("--sweep", action="store_true", help="Also time dfx sweep cold and warm (1,008 points).")
    ns = parser.parse_args()
    dfx_cmd = [sys.executable, "-m", "dfx.cli", "analyze"]
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    print(
        f"{'model':<16} {'export s':>9} {'cold s':>7} {'warm s':>7} {'cold/exp':>8} {'warm/exp':>8} "
        f"{'export GiB':>10} {'cold GiB':>8} {'warm GiB':>8} {'same JSON':>9}"
    )
    gib = 2**30
    for spec in ns.configs:
        best: dict[str, tuple[float, int]] = {}
        same = True
        for _ in range(ns.repeat):
            with tempfile.TemporaryDirectory(prefix="dfx-bench-cache-") as cache:
                env = {**os.environ, "DFX_CACHE_DIR": cache}
                runs = {
                    "export": _peak([sys.executable, "-c", _EXPORT, spec, str(ns.seq)], env),
                    "cold": _peak([*dfx_cmd, spec, "--seq", str(ns.seq), "--json"], env),
                    "warm": _peak([*dfx_cmd, spec, "--seq", str(ns.seq), "--json"], env),
                }
            same = same and _doc_numbers(runs["cold"][2]) == _doc_numbers(runs["warm"][2])
            for kind, (s, peak, _) in runs.items():
                if kind not in best or s < best[kind][0]:
                    best[kind] = (s, peak)
        e, c, w = best["export"], best["cold"], best["warm"]
        print(
            f"{Path(spec).name:<16} {e[0]:9.2f} {c[0]:7.2f} {w[0]:7.2f} {c[0] / e[0]:8.2f} {w[0] / e[0]:8.2f} "
            f"{e[1] / gib:10.2f} {c[1] / gib:8.2f} {w[1] / gib:8.2f} {'yes' if same else 'NO':>9}"
        )
    if ns.sweep:
        _sweep(ns.repeat)
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
