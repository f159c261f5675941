"""Run a sweep: skip the points already in the table, run the rest by group, append rows in batches.

Three executors run the same :func:`dfx.sweep.evaluate.run_group` on the same tasks: in this process
(``workers=1``), a pool of local worker processes (``workers>1``, the default when there is more
than one group), or Ray (``ray=True`` starts a local Ray; ``ray_address`` joins a cluster).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from dfx.errors import DfxError
from dfx.heap import held, start_worker
from dfx.schema.errors import SchemaError
from dfx.schema.ids import SWEEP_SCHEMA
from dfx.schema.sweep import SweepDoc, read_sweep
from dfx.sweep.evaluate import graph_on_disk, run_group
from dfx.sweep.spec import AUTO, FORWARD, Group, SweepSpec, fingerprint
from dfx.sweep.table import ResultsTable

__all__ = ["SweepRun", "run_sweep", "check_workers", "SPEC_FILE", "CACHE_DIR", "MAX_WORKERS_PER_CPU"]

SPEC_FILE = "sweep.json"  # the spec a folder's table belongs to (the union of the sweeps it holds)
_RAY_STORE_BYTES = 128 * 1024**2  # a local Ray's object store (Ray's minimum is 75 MiB)
_RAY_CONNECT_S = 5.0  # how long a Ray cluster's address may take to accept a TCP connection
MAX_WORKERS_PER_CPU = 4  # local workers (pool processes, a local Ray's actors) beyond this are refused
# Rows are written in batches: a Parquet part file (or a CSV fsync) per group made the table's writes
# a cost per point comparable with evaluating it. A batch goes out at this many rows or this many
# seconds after the last, and whatever is buffered when the sweep stops or is interrupted.
_FLUSH_ROWS = 5000
_FLUSH_S = 2.0
CACHE_DIR = "graphs"  # captured graphs (dfx.graph/1 JSON), so a resumed sweep does not capture again


@dataclass(frozen=True)
class SweepRun:
    """What one invocation did: points in the sweep, found done, run now; groups run; wall time."""

    points: int
    already_done: int
    ran: int
    groups_ran: int
    wall_s: float
    executor: str
    table: Path


# Settings of a spec that are not axes: a point's id does not name them, so rows computed under
# other values would pass for this sweep's. Axes may differ: a sweep into a folder extends it.
FIXED_SETTINGS = ("output_len", "method")


def _merged(theirs: Mapping[str, Any], mine: Mapping[str, Any]) -> dict[str, Any]:
    """The folder's spec after this sweep: each axis the union of both (theirs first), settings as mine."""
    out = dict(mine)
    for k in dict.fromkeys([*theirs, *mine]):
        a, b = theirs.get(k), mine.get(k)
        if isinstance(a, list) or isinstance(b, list):
            out[k] = list(dict.fromkeys([*(a or []), *(b or [])]))
        elif isinstance(a, Mapping) or isinstance(b, Mapping):  # profiles: id -> digest, mine last
            out[k] = {**(a or {}), **(b or {})}
    if "parallel" in out and "parallel" not in theirs:  # written only when not just auto (SweepSpec.to_dict)
        out["parallel"] = list(dict.fromkeys([AUTO, *out["parallel"]]))
    if "parallel" in theirs and "parallel" not in mine:
        out["parallel"] = list(dict.fromkeys([*theirs["parallel"], AUTO]))
    return out


def _prepare(spec: SweepSpec, out: Path, force: bool) -> ResultsTable:
    """The folder's table, after checking it can hold this sweep's points (or ``force`` clears it).

    A folder holding a sweep with the same fixed settings (:data:`FIXED_SETTINGS`) is resumed and
    extended: its rows stay, only the points its table lacks run, and ``sweep.json`` records the
    union of both specs' axes. Other settings, or an unreadable ``sweep.json``, are refused.
    """
    import shutil

    if out.exists() and not out.is_dir():
        raise DfxError(f"--out {out} is a file, not a folder; choose a folder path")
    spec_path = out / SPEC_FILE
    mine_spec = spec.to_dict()
    table = ResultsTable(out)
    if spec_path.is_file():
        try:
            theirs: SweepDoc | None = read_sweep(json.loads(spec_path.read_text(encoding="utf-8")), str(spec_path))
        except (OSError, ValueError, SchemaError):  # unreadable or another document: not this sweep's
            theirs = None
        differ = [k for k in FIXED_SETTINGS if theirs.spec.get(k) != mine_spec.get(k)] if theirs is not None else ["?"]
        # a profile whose figures changed since its rows were made (an edited file; older folders say nothing)
        before = dict(theirs.spec["profiles"]) if theirs is not None and "profiles" in theirs.spec else {}
        changed = [p for p, d in mine_spec["profiles"].items() if before.get(p, d) != d]
        if changed and not force:
            raise DfxError(
                f"--out {out} holds rows of hardware {changed[0]!r} made with other figures (its profile has "
                f"changed since; {spec_path}): they would pass for this sweep's; pass --force to replace the "
                "results, give the changed profile another id, or choose another --out"
            )
        differ += changed
        if differ and not force:
            if theirs is None:
                raise DfxError(
                    f"--out {out} holds a {SPEC_FILE} dfx cannot read ({spec_path}); pass --force to replace its "
                    "results or choose another --out"
                )
            k = differ[0]
            raise DfxError(
                f"--out {out} holds a sweep with {k} {theirs.spec.get(k)!r} ({spec_path}) and this one has {k} "
                f"{mine_spec.get(k)!r}: their rows would pass for this sweep's; use {k} {theirs.spec.get(k)!r} to "
                "extend it, pass --force to replace its results, or choose another --out"
            )
        if differ:
            for p in (out / "results.csv", out / "results.parquet"):
                shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
            table = ResultsTable(out)
        else:
            mine_spec = _merged(theirs.spec, mine_spec)
    elif table.path.exists() and not force:
        raise DfxError(
            f"{table.path} already exists and no {SPEC_FILE} says which sweep wrote it; "
            "pass --force to replace it or choose another --out"
        )
    elif table.path.exists():
        shutil.rmtree(table.path) if table.path.is_dir() else table.path.unlink()
    mine = SweepDoc(schema=SWEEP_SCHEMA, fingerprint=fingerprint(mine_spec), spec=MappingProxyType(mine_spec))
    try:
        out.mkdir(parents=True, exist_ok=True)
        spec_path.write_text(json.dumps(mine.to_dict(), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:  # a read-only or missing mount, a full disk: before any point runs
        raise DfxError(
            f"cannot write into --out {out}: {exc.strerror or exc}; choose a folder you can write to"
        ) from None
    return table


def _inline(tasks: list[dict[str, Any]], cache: str) -> Iterator[list[dict[str, Any]]]:
    for t in tasks:
        yield run_group(t, cache)


def _pool(tasks: list[dict[str, Any]], cache: str, workers: int) -> Iterator[list[dict[str, Any]]]:
    import multiprocessing as mp
    import threading
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # fork: the workers start with dfx (and torch, if imported) already loaded; capture runs on
    # fake tensors, so nothing a forked child inherits is in use
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    # Groups whose graphs are already in the cache folder capture nothing: they need no warm-up, and
    # they are quick enough to travel several to a future (_chunks)
    cached = [graph_on_disk(t, cache) for t in tasks]
    chunks = None
    if ctx is not None and tasks:
        # The first capture in a process pays torch.export's one-time start-up: pay it here, on a
        # one-op module, so the forked workers start warm. Then each bucket's tasks
        # (dfx.sweep.graphs: one symbolic export, its points substituted or interpolated) travel as
        # one chunk, so that one worker exports it once and its graphs fill the bucket's grid,
        # instead of each worker exporting it.
        if not all(cached):
            from dfx.capture.build import warm_up

            warm_up()
        chunks = _bucket_chunks(tasks, workers, cached)
    if not tasks:
        return
    if chunks is None:
        chunks = _chunks(tasks, workers, cached)
    workers = min(workers, len(chunks))  # no idle forks: a bucket's groups are one chunk
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=start_worker)
    closing = None
    futures = []
    try:
        futures = [pool.submit(_run_chunk, chunk, cache) for chunk in chunks]
        for left, f in enumerate(as_completed(futures), 1 - len(futures)):
            if left == 0:  # the last future: the workers exit while the caller writes its rows
                closing = threading.Thread(target=pool.shutdown, name="dfx-sweep-pool-shutdown")
                closing.start()
            yield from f.result()
    finally:
        for f in futures:
            f.cancel()
        if closing is None:
            pool.shutdown()  # waits for the chunks already running (a stopped sweep)
        else:
            closing.join()


_CHUNK_MAX = 16  # groups a future carries at most: a stopped sweep waits for the chunks already running


def _chunks(tasks: list[dict[str, Any]], workers: int, cached: list[bool] | None = None) -> list[list[dict[str, Any]]]:
    """The tasks in consecutive chunks, one future each, shrinking as the queue empties (guided scheduling).

    Each chunk is a quarter of one worker's share of the tasks left (``ceil(left / (4 x workers))``),
    at most :data:`_CHUNK_MAX`, so the early futures are large and the last ones single groups that
    even out the workers' finish: 144 groups on 2 workers make 27 futures (16, 16, 14, 13, ..., 1). A
    future per group cost the sweep's process about 0.3 ms of CPU each (pickling, the executor's
    threads), taken from the workers on a machine with a core per worker (docs/sweeps.md, "Speed").
    A task whose ``cached`` is false (its graph is to be captured: seconds, not milliseconds) is a
    chunk of its own.
    """
    out: list[list[dict[str, Any]]] = []
    i = 0
    while i < len(tasks):
        n = min(_CHUNK_MAX, max(1, math.ceil((len(tasks) - i) / (4 * workers))))
        if cached is not None:  # the chunk ends before the first task to capture, which goes alone
            capture = next((j for j in range(i, min(i + n, len(tasks))) if not cached[j]), None)
            if capture is not None:
                n = max(1, capture - i)
        out.append(tasks[i : i + n])
        i += n
    return out


def _bucket_chunks(tasks: list[dict[str, Any]], workers: int, cached: list[bool]) -> list[list[dict[str, Any]]]:
    """The tasks to capture as one chunk per bucket (:func:`dfx.sweep.graphs.bucket_key`; a concrete
    capture alone), largest first so the workers finish together (longest processing time first,
    Graham 1969); then the cached tasks in :func:`_chunks`' shrinking chunks."""
    from dfx.costs.precision import Precision
    from dfx.sweep.graphs import bucket_key

    by_bucket: dict[Any, list[dict[str, Any]]] = {}
    alone: list[list[dict[str, Any]]] = []
    for t, c in zip(tasks, cached):
        if c:
            continue
        key = None
        if t["phase"] == FORWARD:
            key = bucket_key(t["model"], t["batch"], t["seq"], Precision.of(t["dtype"]).capture, t["method"])
        if key is None:
            alone.append([t])
        else:
            by_bucket.setdefault(key, []).append(t)
    warm = [t for t, c in zip(tasks, cached) if c]
    to_capture = sorted(by_bucket.values(), key=len, reverse=True) + alone
    return to_capture + (_chunks(warm, workers) if warm else [])


def _run_chunk(tasks: list[dict[str, Any]], cache: str) -> list[list[dict[str, Any]]]:
    """A worker's chunk: each group's rows, in the chunk's order."""
    return [_run_in_worker(t, cache) for t in tasks]


def _run_in_worker(task: dict[str, Any], cache: str) -> list[dict[str, Any]]:
    """:func:`run_group` in a worker process (pool or Ray actor), which owns its collector (dfx.heap).

    A forward group whose graph is in the cache folder captures nothing: it runs with the cyclic
    collector off, then freezes what it made without collecting (:func:`dfx.heap.held`: such a group
    leaves no reference cycles), so the graph read and the plans made are never scanned. A group
    that captures runs with the collector on (a capture's garbage is large), and collects and
    freezes after its capture (:func:`dfx.heap.after_capture`).
    """
    if not graph_on_disk(task, cache):
        return run_group(task, cache)
    with held():
        return run_group(task, cache)


class _RayWorker:
    """A Ray actor running :func:`run_group` (the same function as the local executors)."""

    def __init__(self) -> None:
        start_worker()

    def run(self, task: dict[str, Any], cache: str) -> list[dict[str, Any]]:
        return _run_in_worker(task, cache)


def check_workers(workers: int | None, ray_address: str | None = None) -> None:
    """Refuse a worker count that is not positive, or (on this machine) more than :data:`MAX_WORKERS_PER_CPU` per CPU.

    The local pool forks all its workers at once (and a local Ray starts an actor per worker): 100,000
    workers is a fork bomb, not a sweep. A Ray cluster (``ray_address``) counts its own CPUs.

    Raises
    ------
    DfxError
        One line naming the value and the most this machine takes.
    """
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers <= 0:
        raise DfxError(f"--workers must be a positive integer, got {workers!r}")
    cpus = os.cpu_count() or 1
    if ray_address is None and workers > MAX_WORKERS_PER_CPU * cpus:
        raise DfxError(
            f"--workers {workers:,} is more than {MAX_WORKERS_PER_CPU} per CPU of this machine "
            f"({MAX_WORKERS_PER_CPU * cpus} for its {cpus}); give at most {MAX_WORKERS_PER_CPU * cpus} "
            "(default: one per CPU), or --ray-address for a cluster"
        )


def _ray_endpoint(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address (``ray://host:10001``, ``host:6379``); None for ``auto``/``local``."""
    text = address.strip()
    client = text.startswith("ray://")
    text = text.removeprefix("ray://").split("/", 1)[0]
    if not text or text in ("auto", "local"):
        return None
    host, sep, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not sep:
        return host, 10001 if client else 6379  # Ray Client's and the GCS's default ports
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise DfxError(f"--ray-address {address!r}: the port {port!r} is not a number; give host:port") from None


def _check_ray(address: str | None) -> None:
    """Ray importable, and a cluster's address reachable, before anything is written.

    ``ray.init`` retries an unreachable address without end (and ignores Ctrl-C while it does), so
    the address is first tried with a plain TCP connection, :data:`_RAY_CONNECT_S` seconds at most.
    """
    import socket

    try:
        import ray  # noqa: F401
    except ImportError:
        raise DfxError("--ray needs Ray; install it with `pip install dfx[ray]`") from None
    endpoint = _ray_endpoint(address) if address else None
    if endpoint is None:
        return
    try:
        socket.create_connection(endpoint, timeout=_RAY_CONNECT_S).close()
    except OSError as exc:
        raise DfxError(
            f"cannot reach Ray at {address!r} ({exc.strerror or exc}); check the head's address "
            "(host:port of its GCS, or ray://host:10001 for Ray Client) and that it is running"
        ) from None


def _ray(tasks: list[dict[str, Any]], cache: str, workers: int, address: str | None) -> Iterator[list[dict[str, Any]]]:
    import ray

    started = not ray.is_initialized()
    if started:
        env = {"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
        try:
            if address:
                ray.init(address=address, runtime_env=env, log_to_driver=False)
            else:
                # a small object store: rows are a few KB, and a default store (30% of memory in
                # /dev/shm) fails on small containers and CI runners
                ray.init(
                    num_cpus=workers,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env=env,
                    object_store_memory=_RAY_STORE_BYTES,
                )
        except Exception as exc:  # noqa: BLE001 - Ray's connection errors have no common base
            from dfx.errors import one_line

            raise DfxError(
                f"cannot start Ray{' at ' + address if address else ''}: {one_line(str(exc), 200)}"
            ) from None
    try:
        from ray.util import ActorPool

        # One long-lived actor per CPU: each imports dfx and warms torch.export once (about 20 s
        # here), then runs group after group; a task per group would pay that in every new worker.
        worker = ray.remote(num_cpus=1)(_RayWorker)
        size = max(1, min(workers, len(tasks)))
        pool = ActorPool([worker.remote() for _ in range(size)])
        yield from pool.map_unordered(lambda actor, task: actor.run.remote(task, cache), tasks)
    finally:
        if started:
            ray.shutdown()


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    workers: int | None = None,
    ray: bool = False,
    ray_address: str | None = None,
    force: bool = False,
    on_rows: Callable[[list[dict[str, Any]]], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    capture_cache: Any = None,
) -> SweepRun:
    """Run the points of ``spec`` that ``out``'s table lacks, appending each group's rows as it finishes.

    Parameters
    ----------
    spec : SweepSpec
        A checked spec.
    out : str or Path
        The sweep's folder: ``sweep.json``, the results table, ``graphs/``.
    workers : int, optional
        Worker processes (local) or Ray CPUs (``ray=True``). Default: one per CPU; never more than
        one per group; 1 runs in this process. More than 4 per CPU is refused unless ``ray_address``
        (:func:`check_workers`).
    ray, ray_address : optional
        Run on a local Ray started here, or on the Ray cluster at ``ray_address``.
    force : bool
        Replace the results of a different sweep in ``out``.
    on_rows : callable, optional
        Called with each group's rows as they arrive (progress bars; tests stop a sweep by raising
        from it). Rows reach the table in batches (every 5,000 rows or 2 s) and when the sweep stops,
        interrupted or not.
    on_start : callable, optional
        Called once with (points to run, points already done) before any work.
    capture_cache : dfx.cache.CaptureCache, optional
        The capture cache forward graphs are read from and written to (``dfx sweep`` passes the
        user's unless ``--no-cache``); default: captures only in ``out``'s ``graphs/``.

    Raises
    ------
    DfxError
        ``out`` holds another sweep's results (without ``force``), a bad ``workers``, or Ray is missing
        or its address unreachable (each before anything is written).
    """
    out = Path(out)
    use_ray = ray or ray_address is not None
    check_workers(workers, ray_address)
    if use_ray:
        _check_ray(ray_address)
    table = _prepare(spec, out, force)
    done = table.done_ids()
    todo = [p for p in spec.points() if p.point_id not in done]
    groups: list[Group] = spec.groups(todo)
    if on_start is not None:
        on_start(len(todo), spec.n_points - len(todo))
    tasks = [g.to_task() for g in groups]
    if capture_cache is not None:
        for t in tasks:
            t["capture_cache"] = str(capture_cache.root)
    cache = str(out / CACHE_DIR)
    # at most one worker per group: a pool forks every worker at its start, busy or not
    n = max(1, min(workers if workers is not None else os.cpu_count() or 1, len(tasks)))
    if use_ray:
        stream, executor = _ray(tasks, cache, n, ray_address), "ray"
    elif n == 1 or len(tasks) <= 1:
        stream, executor = _inline(tasks, cache), "inline"
    else:
        stream, executor = _pool(tasks, cache, n), f"processes:{n}"
    start = time.perf_counter()
    ran = 0
    buffered: list[dict[str, Any]] = []
    flushed = time.perf_counter()
    try:
        for done, rows in enumerate(stream, 1):
            buffered.extend(rows)
            ran += len(rows)
            if len(buffered) >= _FLUSH_ROWS or time.perf_counter() - flushed >= _FLUSH_S:
                table.append(buffered)  # one CSV write and fsync, or one Parquet part, per batch
                buffered, flushed = [], time.perf_counter()
            if on_rows is not None:
                on_rows(rows)
            if done == len(tasks):  # the last group: write it now, while the pool's workers exit
                break
    finally:
        try:
            table.append(buffered)  # what an interrupted sweep finished is kept
        finally:
            stream.close()  # stops the pool, or shuts down the Ray dfx started, even when interrupted
    return SweepRun(
        spec.n_points, spec.n_points - len(todo), ran, len(tasks), time.perf_counter() - start, executor, table.path
    )
