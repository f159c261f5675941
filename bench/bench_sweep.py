"""Benchmark: sweep points per second after capture, and the Ray path against one worker.

The sweep is the test suite's: 3 models (gpt2-block, bert-layer, llama3-8b-layer) x 6 profiles x
4 sequence lengths x 3 batch sizes = 216 points, 36 graphs. Reported:

1. capture: seconds to get the 36 graphs once (in this process, first capture's warm-up included),
   and how: symbolic exports (one per model and bucket), concrete captures (the first size of each
   bucket, which also names the symbolic graph's nodes), substitutions (every other size);
2. points per second after capture, evaluating every point from the captured graphs
   (``dfx.sweep.evaluate.run_group`` on the in-process cache; goal: at least 1,000 per second),
   in this process, best of ``--repeat`` passes, each with the GEMM-plan and fusion caches emptied;
3. the whole sweep from a fresh folder holding only the captured graphs (``graphs/``): one worker
   (in-process) against Ray on ``--workers`` CPUs started by dfx, and Ray's speed-up
   = time(1 worker) / time(Ray), Ray's start-up included; and the same without the graph cache,
   where each process captures (``--with-capture``; slow).

4. where a point's time goes (cProfile of one pass, cumulative seconds of the stages).

Usage: python bench/bench_sweep.py [--repeat 3] [--workers 2] [--with-capture] [--no-ray] [--no-freeze]

Like ``dfx sweep``, this process freezes what each capture leaves (``dfx.heap``) unless ``--no-freeze``.
This is a benchmark, not a test: it prints numbers, it asserts nothing.
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


def _timed_sweep(spec, out: Path, graphs: Path | None, **kwargs) -> float:
    from dfx.sweep import run_sweep

    if graphs is not None:
        shutil.copytree(graphs, out / "graphs")
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


def _where_time_goes(tasks, cache: str) -> None:
    """Cumulative seconds per stage over one pass of every point (cProfile; it slows everything alike)."""
    import cProfile
    import pstats

    from dfx.sweep.evaluate import run_group

    from dfx.arch.gpu.plan import clear_gemm_plans
    from dfx.compile.fusion import clear_fusion_cache

    clear_gemm_plans()
    clear_fusion_cache()
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


def _pool_rate(tmp: Path, workers: int, repeat: int) -> None:
    """Points per second of ``dfx sweep`` from cached graphs on the larger :data:`POOL_AXES` sweep: 1 worker
    (in this process) against ``workers`` local processes, best of ``repeat`` runs each, every run a fresh
    folder holding only the graphs (each worker reads and costs the graphs of its groups)."""
    from dfx.sweep import load_spec
    from dfx.sweep.evaluate import run_group

    from dfx.arch.gpu.plan import clear_gemm_plans
    from dfx.compile.fusion import clear_fusion_cache

    spec = load_spec(None, POOL_AXES)
    graphs = tmp / "pool-graphs"
    t0 = time.perf_counter()
    for t in (g.to_task() for g in spec.groups()):
        run_group(t, str(graphs))  # captures (substitutions, mostly) into graphs/
    print(
        f"pool sweep: {spec.n_points} points, {len(spec.groups())} graphs (captured in {time.perf_counter() - t0:.1f} s)"
    )
    rates = {}
    for n in (1, workers):
        best = float("inf")
        for i in range(repeat):
            clear_gemm_plans()  # the in-process run (and the forked workers) start with empty caches
            clear_fusion_cache()
            best = min(best, _timed_sweep(spec, tmp / f"pool-{n}-{i}", graphs, workers=n))
        rates[n] = spec.n_points / best
        where = "in this process" if n == 1 else "local processes"
        print(
            f"after capture, {n} {'worker' if n == 1 else 'workers'} ({where}, dfx sweep --workers {n}): "
            f"{rates[n]:,.0f} points/s ({best:.2f} s; goal >= 1,000 points/s)"
        )
    print(f"  speed-up of {workers} local processes over 1: {rates[workers] / rates[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--with-capture", action="store_true", help="also time 1 worker vs Ray with captures")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray timings")
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

    from dfx.arch.gpu.plan import clear_gemm_plans
    from dfx.compile.fusion import clear_fusion_cache

    best = float("inf")
    for _ in range(args.repeat):
        clear_gemm_plans()  # every pass sees its GEMMs for the first time, as one sweep does
        clear_fusion_cache()  # and fuses each graph afresh (the cache serves only profiles with equal rules)
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
    _pool_rate(tmp, args.workers, args.repeat)
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
