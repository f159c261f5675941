"""Benchmark: sweep points per second after capture, 1 process and the local pool, and the Ray path.

The sweep is the test suite's: 3 models (gpt2-block, bert-layer, llama3-8b-layer) x 6 profiles x
4 sequence lengths x 3 batch sizes = 216 points, 36 graphs. Reported:

1. capture: seconds to get the 36 graphs once (in this process, first capture's warm-up included),
   and how: symbolic exports (one per model and bucket), concrete captures (the first size of each
   bucket, which also names the symbolic graph's nodes), substitutions (every other size);
2. points per second after capture, evaluating every point from the captured graphs
   (``dfx.sweep.evaluate.run_group`` on the in-process cache; goal: at least 1,000 per second),
   in this process, best of ``--repeat`` passes, each with the plan caches emptied (GEMM autotunes,
   fusion runs, scratchpad tiles: ``_forget_plans``), as one sweep meets each point the first time;
3. where a point's time goes (cProfile of one pass, cumulative seconds of the stages);
4. the whole sweep from a fresh folder holding only the captured graphs (``graphs/``): one worker
   (in-process) against ``--workers`` local processes forked from this process (which holds torch
   and the captures), and against Ray on ``--workers`` CPUs started by dfx, Ray's speed-up
   = time(1 worker) / time(Ray), Ray's start-up included; and the same without the graph cache,
   where each process captures (``--with-capture``; slow);
5. ``dfx sweep`` as it runs on cached graphs, on larger sweeps (:data:`POOL_AXES`, 576 points, and
   :data:`LARGE_AXES`, 864) so the pool's start-up is spread: a fresh process running ``run_sweep``
   with 1 worker, and with ``--workers`` local processes; points per second and the pool's speed-up;
   and what a worker pays once (its first group, imports on first use, against a later group).

Usage: python bench/bench_sweep.py [--repeat 3] [--workers 2] [--with-capture] [--no-ray] [--no-freeze]

Like ``dfx sweep``, this process freezes what each capture leaves (``dfx.heap``) unless ``--no-freeze``.
This is a benchmark, not a test: it prints numbers, it asserts nothing.

Measured on the project's 2-core machine, 2026-12-01 (``--repeat 3 --no-ray``, quiet machine, load
1.0 to 1.7; docs/sweeps.md, "Speed", has the history and what each change bought). The two 18:20
columns: the code at 337e554 (after the 18:05 changes) measured again, and the worker start-up cut
(no networkx or numpy imported to evaluate a point), one bench run each; the 864-point rows from three
interleaved fresh-process runs each:

=====================================================  ==============  ==========  ==========  ==========  ==========  ==========  =============
figure (points per second)                             17:15, f04c48e  18:05       18:20 bef.  18:20 aft.  19:10       21:05 bef.  21:05 aft.
=====================================================  ==============  ==========  ==========  ==========  ==========  ==========  =============
2. after capture, 1 process (plan caches emptied)      273 to 281      506 to 528  505         505         524, 531    469         593, 641
5. dfx sweep, 576 points, --workers 1 (fresh process)  206 to 207      344 to 345  350         387         399, 395    360         409, 415
5. dfx sweep, 576 points, --workers 2 (fresh process)  338             547 to 552  549         668         658, 677    589         687, 657
5. dfx sweep, 864 points, --workers 1 (fresh process)                              350 to 354  381 to 385  397, 392    337         422, 414
5. dfx sweep, 864 points, --workers 2 (fresh process)                              596 to 608  697 to 703  753, 747    601 to 627  744 to 778
5. a worker's first group / a later one (ms)                                       267 / 12    150 / 11    153 / 11    171 / 12    193, 180 / 10
=====================================================  ==============  ==========  ==========  ==========  ==========  ==========  =============

The 19:10 column: the GPU GEMM autotune made cheaper (6c37d9d: candidates timed without a kernel
record, occupancy and fitting configs memoized, branch and bound), two runs; the code before it
(a934114), run between them: 508 in 1 process; 576 points, 397 and 668; 864 points, 397 and 709
(docs/sweeps.md, "Late evening: the GPU GEMM autotune").

The two 21:05 columns: the code of 19:36 (bd34d10) and main at fb4719e (the evaluation side made
cheaper, docs/sweeps.md "Night: the evaluation side", with the compile-side changes merged beside it),
one bench run each, back to back, on a machine then about a fifth slower than at 19:10 (bd34d10 had
measured 521 in 1 process), and a second run of main at 21:15 (d76144f, one more program-timing
change); the 864-point, 2-worker cells add three interleaved fresh-process runs each.
A worker's first group is the same in both (183 and 186 ms in two runs each; the 171 / 193 of one
bench run each is noise): imports.

The goal of 1,000 points per second is not met on this machine, in 1 process (600 to 640 at 21:05) or
with 2 workers (about 760 on 864 points at 21:05, against about 615 for the 19:36 code run beside it;
this machine sets PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

AXES = {
    "models": ["gpt2-block", "bert-layer", "llama3-8b-layer"],
    "hardware": ["nvidia-h100-sxm", "nvidia-a100-sxm-80gb", "google-tpu-v4", "groq-lpu", "cerebras-wse-3", "ibm-spyre"],
    "seq": [8, 16, 24, 32],
    "batch": [1, 2, 4],
}


# The sweep the local pool is timed on: the same models and machines at more sizes (8 x 4 = 32 per
# model, 576 points), so the pool's start-up (forking, each worker reading its graphs) is spread over
# enough points to show its rate. The extra sizes are substitutions into the same buckets' exports.
POOL_AXES = {**AXES, "seq": [8, 16, 24, 32, 40, 48, 56, 64], "batch": [1, 2, 4, 8]}
# A larger one still (8 x 6 = 48 sizes per model, 864 points, 144 graphs), so the start-up each
# worker pays once (fork, its imports on first use) is a smaller part of what 2 cores can give.
LARGE_AXES = {**POOL_AXES, "batch": [1, 2, 3, 4, 6, 8]}


def _timed_sweep(spec, out: Path, graphs: Path | None, **kwargs) -> float:
    from dfx.sweep import run_sweep

    if graphs is not None:
        shutil.copytree(graphs, out / "graphs")
    _forget_plans()  # an in-process run (1 worker) and the forked workers start without plans
    t0 = time.perf_counter()
    run = run_sweep(spec, out, **kwargs)
    assert run.ran == spec.n_points
    return time.perf_counter() - t0


_STAGES = {  # a stage's entry points, as cProfile names them (file:function)
    "compile passes (dfx.compile.compile_program)": ("compile/__init__.py", "compile_program"),
    "program and node timing (roofline.evaluate, less compile)": ("roofline/evaluate.py", "evaluate"),
    "architecture models' export fields (extras)": ("arch/", "extras"),
    "architecture models' node timers": ("arch/", "node_timer"),
    "placement over chips (analysis._placed)": ("analysis.py", "_placed"),
}


def _forget_plans() -> None:
    """Empty the process-wide plan caches: GEMM autotunes, the compile stage's (pipelines, fusion runs and
    eager kernels, scratchpad tiles), and the facts derived from each graph alone (:mod:`dfx.roofline.per_graph`).

    A pass then makes every plan as one sweep's process does the first time it meets a GEMM or a
    graph (the costed graphs and their data flow stay: reading and costing a graph is counted by the
    whole-sweep figures)."""
    from dfx.arch.gpu.plan import clear_gemm_plans
    from dfx.roofline.per_graph import clear_per_graph
    from dfx.targets import clear_caches

    clear_gemm_plans()
    clear_caches()  # the targets' pipelines, fusion runs and eager kernels, scratchpad tiles
    clear_per_graph()


def _where_time_goes(tasks, cache: str) -> None:
    """Cumulative seconds per stage over one pass of every point (cProfile; it slows everything alike)."""
    import cProfile
    import pstats

    from dfx.sweep.evaluate import run_group

    _forget_plans()
    prof = cProfile.Profile()
    prof.enable()
    for t in tasks:
        run_group(t, cache)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[3] for (f, _, fn), v in stats.items() if fn == "run_group")
    cum = {}
    for stage, (path, fn) in _STAGES.items():
        cum[stage] = sum(v[3] for (f, _, name), v in stats.items() if name == fn and path in f)
    cum["program and node timing (roofline.evaluate, less compile)"] -= cum[
        "compile passes (dfx.compile.compile_program)"
    ]
    print(f"where a point's time goes (cProfile, {total:.2f} s over the pass):")
    for stage, sec in cum.items():
        print(f"  {stage}: {sec:.2f} s ({100 * sec / total:.0f}%)")


_POOL_RUN = """
import json, shutil, sys, tempfile, time
from pathlib import Path
from dfx.sweep import load_spec, run_sweep
axes, graphs, workers = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
spec = load_spec(None, axes)
out = Path(tempfile.mkdtemp(prefix="dfx-bench-pool-"))
shutil.copytree(graphs, out / "graphs")
t0 = time.perf_counter()
run = run_sweep(spec, out, workers=workers)
print(time.perf_counter() - t0, run.ran)
shutil.rmtree(out, ignore_errors=True)
"""


_START_UP = """
import json, sys, time
from dfx.sweep import load_spec
from dfx.sweep.evaluate import run_group
tasks = [g.to_task() for g in load_spec(None, json.loads(sys.argv[1])).groups()]
seconds = []
for t in tasks[:6]:
    t0 = time.perf_counter()
    run_group(t, sys.argv[2])
    seconds.append(time.perf_counter() - t0)
print(seconds[0], sorted(seconds[1:])[2])
"""


def _capture_pool_graphs(tmp: Path) -> Path:
    """The graphs of :data:`LARGE_AXES` (a superset of :data:`POOL_AXES`'s) in a cache folder."""
    from dfx.sweep import load_spec
    from dfx.sweep.evaluate import run_group

    spec = load_spec(None, LARGE_AXES)
    graphs = tmp / "pool-graphs"
    t0 = time.perf_counter()
    for t in (g.to_task() for g in spec.groups()):
        run_group(t, str(graphs))  # captures (substitutions, mostly) into graphs/
    print(f"pool sweeps' graphs: {len(spec.groups())} (captured in {time.perf_counter() - t0:.1f} s)")
    return graphs


def _pool_rate(graphs: Path, axes: dict, workers: int, repeat: int) -> None:
    """Points per second of ``dfx sweep`` from cached graphs on a larger sweep (``axes``), 1 worker
    against ``workers`` local processes, best of ``repeat`` runs each. Each run is a fresh Python process
    running :func:`dfx.sweep.run_sweep` on a fresh folder holding the graphs, as ``dfx sweep`` on
    cached graphs does (no torch; the pool forks from that small process): profile loading, each
    worker's imports on first use, every plan made afresh, reading and costing each graph, and the
    pool's start-up are all counted (the process's own ``import dfx.sweep`` and the spec are not)."""
    import json
    import subprocess
    import sys

    from dfx.sweep import load_spec

    spec = load_spec(None, axes)
    print(f"pool sweep: {spec.n_points} points, {len(spec.groups())} graphs")
    rates = {}
    for n in (1, workers):
        best = float("inf")
        for _ in range(repeat):
            args = [sys.executable, "-c", _POOL_RUN, json.dumps(axes), str(graphs), str(n)]
            seconds, ran = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
            assert int(ran) == spec.n_points
            best = min(best, float(seconds))
        rates[n] = spec.n_points / best
        print(
            f"after capture, dfx sweep --workers {n} (a fresh process, {'in it' if n == 1 else 'local processes'}): "
            f"{rates[n]:,.0f} points/s ({best:.2f} s; goal >= 1,000 points/s)"
        )
    print(f"  speed-up of {workers} local processes over 1: {rates[workers] / rates[1]:.2f}x")


def _bytecode() -> None:
    """Compile dfx's modules to bytecode (``python -m compileall``, into each package's ``__pycache__``,
    which git ignores), as ``pip install`` does for an installed package, before the fresh-process timings.

    This machine's environment sets ``PYTHONDONTWRITEBYTECODE=1``, and dfx is installed editable, so
    without it every fresh process, each worker included, compiles dfx's sources again (about 0.06 s
    a worker: 794 against 884 points/s on the 864-point sweep with 2 workers, measured 2026-12-01).
    The dependencies were compiled by pip. Python reads the bytecode whatever the variable says."""
    import subprocess
    import sys

    import dfx

    package = Path(dfx.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    print(f"dfx's modules compiled to bytecode in {package} (as pip install does; see _bytecode)")


def _start_up(graphs: Path) -> None:
    """What a worker pays once: its first group (6 points) in a fresh process, imports on first use
    included, against a later group's (the median of the next five)."""
    import json
    import subprocess
    import sys

    args = [sys.executable, "-c", _START_UP, json.dumps(LARGE_AXES), str(graphs)]
    first, later = map(float, subprocess.run(args, check=True, capture_output=True, text=True).stdout.split())
    print(
        f"a worker's start-up: its first group {first * 1e3:.0f} ms (imports on first use), a later one "
        f"{later * 1e3:.0f} ms: about {(first - later) * 1e3:.0f} ms once per worker"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--with-capture", action="store_true", help="also time 1 worker vs Ray with captures")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray timings")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="time fresh processes without compiling dfx's modules first (each compiles them again here)",
    )
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="keep the collector as a library caller does (no gc.freeze after capture, dfx.heap)",
    )
    args = parser.parse_args()
    if not args.no_freeze:
        from dfx.heap import freeze_after_capture

        freeze_after_capture()  # as `dfx sweep` and its workers do

    import os

    from dfx.sweep import graphs, load_spec
    from dfx.sweep.evaluate import run_group

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (other jobs slow every number)")

    spec = load_spec(None, AXES)
    tmp = Path(tempfile.mkdtemp(prefix="dfx-bench-sweep-"))
    cache = str(tmp / "graphs")
    tasks = [g.to_task() for g in spec.groups()]
    t0 = time.perf_counter()
    for t in tasks:
        run_group(t, cache)  # captures each graph once, keeps it in this process and in graphs/
    capture_s = time.perf_counter() - t0
    print(f"sweep: {spec.n_points} points, {len(tasks)} graphs")
    print(
        f"capture: {capture_s:.1f} s for {len(tasks)} graphs ({capture_s / len(tasks):.2f} s each): "
        f"{graphs.CAPTURES['symbolic']} symbolic exports, {graphs.CAPTURES['concrete']} concrete captures, "
        f"{graphs.CAPTURES['substituted']} substitutions"
    )

    best = float("inf")
    for _ in range(args.repeat):
        _forget_plans()  # every pass autotunes, fuses and tiles afresh, as one sweep does
        t0 = time.perf_counter()
        n = sum(len(run_group(t, cache)) for t in tasks)
        best = min(best, time.perf_counter() - t0)
    print(
        f"after capture, 1 process: {n / best:,.0f} points/s ({best * 1e3 / n:.2f} ms per point; goal >= 1,000 points/s)"
    )

    _where_time_goes(tasks, cache)
    one = _timed_sweep(spec, tmp / "one", tmp / "graphs", workers=1)
    print(f"whole sweep from cached graphs, 1 worker: {one:.2f} s ({spec.n_points / one:,.0f} points/s)")
    pool = _timed_sweep(spec, tmp / "pool", tmp / "graphs", workers=args.workers)
    print(f"whole sweep from cached graphs, {args.workers} local processes: {pool:.2f} s (speed-up {one / pool:.2f}x)")
    pool_graphs = _capture_pool_graphs(tmp)
    if not args.no_bytecode:
        _bytecode()
    _start_up(pool_graphs)
    for axes in (POOL_AXES, LARGE_AXES):
        _pool_rate(pool_graphs, axes, args.workers, args.repeat)
    try:
        if args.no_ray:
            raise ImportError("--no-ray")
        import ray  # noqa: F401
    except ImportError as exc:
        print(
            "ray: skipped (--no-ray)"
            if str(exc) == "--no-ray"
            else "ray: not installed (pip install dfx[ray]); no Ray numbers"
        )
        ray_ok = False
    else:
        ray_ok = True
        r = _timed_sweep(spec, tmp / "ray", tmp / "graphs", workers=args.workers, ray=True)
        print(
            f"whole sweep from cached graphs, Ray on {args.workers} CPUs: {r:.2f} s (speed-up over 1 worker {one / r:.2f}x, start-up included)"
        )
    if args.with_capture:
        one = _timed_sweep(spec, tmp / "one-c", None, workers=1)
        print(f"whole sweep with captures, 1 worker: {one:.1f} s")
        if ray_ok:
            r = _timed_sweep(spec, tmp / "ray-c", None, workers=args.workers, ray=True)
            print(f"whole sweep with captures, Ray on {args.workers} CPUs: {r:.1f} s (speed-up {one / r:.2f}x)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
