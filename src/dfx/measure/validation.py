"""``dfx validate``: run a model for real, time every node, and put the measurement beside dfx's prediction.

Steps: capture the model on the meta device (as ``dfx analyze`` does) and estimate what running
it for real needs (:func:`estimate_run_bytes`); refuse it if that is over the limit; build it with
real random weights; ``torch.export`` it and check the exported nodes are the captured ones; time
each node (:mod:`dfx.measure.timing`) and the whole graph; predict each node on the profile; and
compare (:mod:`dfx.measure.comparison`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import torch

from dfx.errors import DfxError
from dfx.ir import Graph
from dfx.measure.comparison import Validation, compare

if TYPE_CHECKING:
    from dfx.measure.timing import InterleavedRuns

__all__ = [
    "MAX_RUN_S",
    "PREDICTIONS",
    "Measured",
    "estimate_run_bytes",
    "machine_drift",
    "measure",
    "measure_compiled",
    "overhead_drift",
    "memory_limit_bytes",
    "predict",
    "validate",
]

PREDICTIONS = ("cache-aware", "roofline")
_FREE_FRACTION = 0.5  # use at most half the memory free now: the run's allocator and the OS need the rest
# A floor on what the device sustains, for refusing runs that would take too long, not for prediction:
# a slow laptop CPU core does about 1e10 FLOP/s in fp32, any recent GPU over 1e12.
_SLOW_FLOP_PER_S = {"cpu": 1e10, "cuda": 1e12}
MAX_RUN_S = 600.0  # refuse a validation whose runs would take longer than this at the floor above
# the packaged profile of a server CPU (profiles/host-cpu.yaml): not the machine validate runs on
REFERENCE_CPU = "host-cpu"
_REFERENCE_S = 0.2  # seconds for the reference GEMM before and after the model's runs
# the least time the timed runs take, past --repeat: a model of tens of microseconds is timed over
# half a second of the machine, not one millisecond (dfx.measure.timing.time_interleaved_runs)
MIN_WINDOW_S = 0.5


def estimate_run_bytes(graph: Graph) -> int:
    """Bytes a real run needs at most: parameters and buffers once, plus every node's outputs (none freed)."""
    from dfx.measure.machine import model_footprint_bytes

    return model_footprint_bytes(graph)


def memory_limit_bytes(device: str) -> int:
    """Half the memory free now on ``device`` (``MemAvailable`` on Linux, ``mem_get_info`` on a GPU)."""
    if device == "cuda":
        return int(torch.cuda.mem_get_info()[0] * _FREE_FRACTION)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(int(line.split()[1]) * 1024 * _FREE_FRACTION)
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES") * _FREE_FRACTION)


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


@dataclass(frozen=True)
class Measured:
    """A model run for real: its costed graph, each node's median seconds, the whole graph's median."""

    costed: Any  # dfx.costs.CostedGraph of the graph that ran
    node_s: Mapping[str, float]
    whole_s: float
    model: Mapping[str, Any]
    run: Mapping[str, Any]
    # compiled runs (``measure_compiled``): node_s is keyed by kernel call; each call's dfx nodes, in call order
    kernel_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()
    compiled: bool = False


def _check_compiled_device(device: str) -> None:
    if device != "cpu":
        raise DfxError(
            f"--compiled runs Inductor's C++ backend on the CPU only, not --device {device}; drop --compiled or use --device cpu"
        )


def _check_args(repeat: int, warmup: int, device: str) -> None:
    if repeat < 1:
        raise DfxError(f"--repeat must be at least 1, got {repeat}")
    if (
        warmup < 0
    ):  # the message named --repeat too: "--repeat must be at least 1 and warm-up at least 0, got 10 and -1"
        raise DfxError(f"--warmup must be at least 0, got {warmup}")
    if device not in ("cpu", "cuda"):
        raise DfxError(f"unknown --device {device!r}; expected cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise DfxError("--device cuda asked for, but torch sees no CUDA GPU on this machine")


def _refuse_if_too_big(
    model: str, graph: Graph, device: str, runs: int, max_bytes: int | None, max_run_s: float
) -> None:
    from dfx.costs import annotate

    need, limit = estimate_run_bytes(graph), memory_limit_bytes(device) if max_bytes is None else max_bytes
    if need > limit:
        raise DfxError(
            f"{model} is too big to run for real here: about {_gb(need)} of weights and activations, "
            f"over the {_gb(limit)} allowed on {device}; use a smaller --seq or --batch"
        )
    flops = sum(c.cost.flops for c in annotate(graph).nodes)
    if flops * runs / _SLOW_FLOP_PER_S[device] > max_run_s:
        raise DfxError(
            f"{model} is too big to run for real here: {flops / 1e9:,.0f} GFLOP per run x {runs} runs could take over "
            f"{max_run_s:.0f} s on {device}; use a smaller --seq or --batch, or fewer --repeat"
        )


def _probe(device: str) -> Any:
    """A load probe (:func:`dfx.measure.busy.probe_load`) on the CPU, with torch's thread count pinned for the run
    and the allocator settled (:func:`dfx.measure.timing.settle_allocator`)."""
    from dfx.measure.busy import probe_load
    from dfx.measure.timing import settle_allocator

    settle_allocator()

    torch.set_num_threads(torch.get_num_threads())
    return probe_load(torch.get_num_threads()) if device == "cpu" else None


def _judged(device: str, before: Any, runs_clocks: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """``run`` fields: the CPUs the process may use, and the verdict from the probes before and after (CPU only)
    and from the share of a CPU other processes left our threads while the runs were timed
    (``runs_clocks``: :func:`dfx.measure.busy.read_cpu_clocks` before and after them,
    :func:`dfx.measure.busy.left_share`). The probes see only the moments before and after; a
    process that runs for a second between them stalls a two-thread run for whole scheduler time
    slices: an MLP's linears measured 7 ms instead of 14 us (2026-12-02, ``docs/validation.md``)."""
    from dfx.measure.busy import left_share, verdict

    try:
        affinity = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = []
    if device != "cpu":
        return {"affinity": affinity, "verdict": None}
    threads = torch.get_num_threads()
    cpus = os.cpu_count() or 1
    share = left_share(*runs_clocks, cpus, threads) if runs_clocks else None
    shares = {"the model's timed runs": share} if share is not None else None
    judged = verdict(before, _probe(device), cpus, threads, family_shares=shares)
    return {"affinity": affinity, "verdict": judged.to_dict()}


def _real_export(
    model: str,
    dtype: str,
    batch: int | None,
    seq: int | None,
    repeat: int,
    warmup: int,
    device: str,
    max_bytes: int | None,
    max_run_s: float,
    input_shapes: Sequence[tuple[int, ...]] | None,
) -> tuple[Graph, Any, dict]:
    """Check the arguments and the size, build ``model`` with real weights, capture and export it (same node names)."""
    from dfx.analysis import capture_spec, normalize_dtype_or_fail
    from dfx.capture import capture
    from dfx.measure.realrun import check_names, export_real
    from dfx.models import resolve

    _check_args(repeat, warmup, device)
    dtype_name = normalize_dtype_or_fail(
        dtype,
        "fp8, int8 and int4 are storage widths dfx analyze prices with --weight-dtype; validate runs the model itself",
    )
    meta_graph, info = capture_spec(
        model, batch=batch, seq=seq, dtype=dtype_name, method="export", input_shapes=input_shapes
    )
    _refuse_if_too_big(model, meta_graph, device, 2 * (warmup + repeat), max_bytes, max_run_s)
    spec = resolve(
        model,
        batch=batch or 1,
        seq=info.get("seq") if seq is None else seq,
        dtype=dtype_name,
        device=device,
        input_shapes=input_shapes,
    )
    # Capture the real model again: a meta trace can differ from a real one (a meta SDPA output's
    # strides make `.contiguous()` a copy node that a CPU run never executes), and the prediction
    # must be for the graph that runs.
    graph = capture(spec.model, spec.args, spec.kwargs, method="export", name=spec.name)
    exported = export_real(spec.model, spec.args, spec.kwargs)
    check_names(exported.node_names(), [n.name for n in graph.nodes])
    return graph, exported, info


def _time_runs(
    parts: Callable[[], Sequence[float]],
    whole: Callable[[], Any],
    *,
    device: str,
    before: Any,
    repeat: int,
    warmup: int,
    min_window_s: float,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], None] | None = None,
    execution: str | None = None,
) -> tuple[InterleavedRuns, dict[str, Any]]:
    """Time a model's stamped and plain runs, interleaved (:func:`dfx.measure.timing.time_interleaved_runs`:
    the parts and the whole see the same minutes), between the reference GEMM and tiny ops measured
    before and after them; return the runs and the export's ``run`` fields, the verdict over the
    probes and the runs included (:func:`_judged`). ``execution``: written into ``run`` when given."""
    from dfx.measure.busy import read_cpu_clocks
    from dfx.measure.microbench import op_overhead_s, reference_flop_per_s
    from dfx.measure.timing import time_interleaved_runs

    reference_before = reference_flop_per_s(device, _REFERENCE_S, sync)
    overhead_before = op_overhead_s(device, _REFERENCE_S, sync)[0].value
    runs_start = read_cpu_clocks()
    runs = time_interleaved_runs(
        parts, whole, repeat=repeat, warmup=warmup, clock=clock, sync=sync, min_window_s=min_window_s
    )
    runs_clocks = (runs_start, read_cpu_clocks())
    reference_after = reference_flop_per_s(device, _REFERENCE_S, sync)
    overhead_after = op_overhead_s(device, _REFERENCE_S, sync)[0].value
    run = {
        "device": device,
        "threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "repeat": repeat,
        "warmup": warmup,
        "runs": len(runs.whole_s),  # timed pairs: at least repeat, more to fill min_window_s
        "whole_runs": runs.whole_spread(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "reference_flop_per_s": [reference_before, reference_after],
        "reference_overhead_s": [overhead_before, overhead_after],
        **({"execution": execution} if execution else {}),
        **_judged(device, before, runs_clocks),
    }
    return runs, run


def measure(
    model: str = "mlp",
    *,
    dtype: str = "float32",
    batch: int | None = None,
    seq: int | None = None,
    repeat: int = 10,
    warmup: int = 3,
    device: str = "cpu",
    max_bytes: int | None = None,
    max_run_s: float = MAX_RUN_S,
    clock: Callable[[], float] = time.perf_counter,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    min_window_s: float = MIN_WINDOW_S,
) -> Measured:
    """Check the size, build ``model`` with real weights, and time every node and the whole graph.

    See :func:`validate` for the parameters and the errors.
    """
    from dfx.costs import annotate
    from dfx.measure.timing import StampedGraph

    before = _probe(device)
    graph, exported, info = _real_export(
        model, dtype, batch, seq, repeat, warmup, device, max_bytes, max_run_s, input_shapes
    )
    sync = torch.cuda.synchronize if device == "cuda" else None
    stamped = StampedGraph(exported.gm, clock, sync)

    def nodes() -> list[float]:
        stamped.run(*exported.inputs)
        return [stamped.seconds[name] for name in stamped.names]

    runs, run = _time_runs(
        nodes,
        lambda: exported.gm(*exported.inputs),
        device=device,
        before=before,
        repeat=repeat,
        warmup=warmup,
        clock=clock,
        sync=sync,
        min_window_s=min_window_s,
    )
    node_s = dict(zip(stamped.names, runs.part_medians_s))
    return Measured(annotate(graph), node_s, runs.whole_median_s, info, run)


def measure_compiled(
    model: str = "mlp",
    *,
    dtype: str = "float32",
    batch: int | None = None,
    seq: int | None = None,
    repeat: int = 10,
    warmup: int = 3,
    device: str = "cpu",
    max_bytes: int | None = None,
    max_run_s: float = MAX_RUN_S,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    min_window_s: float = MIN_WINDOW_S,
) -> Measured:
    """Compile ``model`` with Inductor (CPU) and time each generated kernel call and the whole compiled graph
    (:mod:`dfx.measure.compiled`). ``node_s`` of the result is keyed by kernel call (``cpp_fused_gelu_view_2:7``).

    Raises
    ------
    DfxError
        As :func:`measure`, and for a device other than the CPU or a model Inductor cannot compile.
    """
    from dfx.costs import annotate
    from dfx.measure.compiled import compile_real, kernel_call_seconds

    _check_compiled_device(device)
    before = _probe(device)
    graph, exported, info = _real_export(
        model, dtype, batch, seq, repeat, warmup, device, max_bytes, max_run_s, input_shapes
    )
    run_ = compile_real(exported.gm, exported.inputs, [n.name for n in graph.nodes])
    runs, run = _time_runs(
        lambda: kernel_call_seconds(run_, exported.inputs),
        lambda: run_.call(list(exported.inputs)),
        device=device,
        before=before,
        repeat=repeat,
        warmup=warmup,
        min_window_s=min_window_s,
        execution="compiled",
    )
    times = {handle: t for (handle, _), t in zip(run_.calls, runs.part_medians_s)}
    return Measured(annotate(graph), times, runs.whole_median_s, info, run, kernel_calls=run_.calls, compiled=True)


def _predict_compiled(measured: Measured, profile: Any, prediction: str, machine: Any) -> Validation:
    """Pair dfx's compiled program with Inductor's kernel calls (:func:`dfx.measure.kernel_match.match_kernels`)
    and compare unit by unit: predicted = the unit's dfx kernels' times, measured = its calls' times."""
    from dfx.analysis import evaluate_on
    from dfx.measure.cache_model import NAME as CACHE, cache_timer, kernel_timer
    from dfx.measure.kernel_match import match_kernels
    from dfx.roofline import evaluate
    from dfx.targets import target_for

    costed = measured.costed
    roof = evaluate_on(costed, profile, execution_model="compiled", split=1)  # the one machine measured
    chosen = roof
    if prediction != "roofline":
        kernels = {} if machine is None else {"kernel_timer": kernel_timer(costed, profile, machine)}
        chosen = evaluate(
            costed,
            profile,
            execution_model="compiled",
            node_timer=cache_timer(costed, profile, machine),
            arch_model=CACHE,
            program=target_for(profile).compile(costed, profile),
            **kernels,
        )
    kernels = chosen.program.program.kernels
    units = match_kernels(
        {k.name: k.nodes for k in kernels}, measured.kernel_calls, {k.name: k.kind.value for k in kernels}
    )

    def per_unit(result: Any, attr: str = "time_s") -> dict[str, float]:
        times = {k.name: getattr(k, attr) for k in result.program.kernels}
        return {u.name: sum(times.get(k, 0.0) for k in u.dfx_kernels) for u in units}

    measured_s = {u.name: sum(measured.node_s[c] for c in u.compiler_calls) for u in units}
    return compare(
        per_unit(chosen),
        measured_s,
        measured.whole_s,
        categories={u.name: u.category for u in units},
        roofline=per_unit(roof),
        overheads=per_unit(chosen, "overhead_s"),
        hardware=profile.id,
        prediction=prediction,
        model=measured.model,
        run={
            **measured.run,
            **_machine_summary(machine if prediction != "roofline" else None),
            "drift": machine_drift(machine, measured.run.get("reference_flop_per_s")),
            "overhead_drift": overhead_drift(machine, measured.run.get("reference_overhead_s")),
        },
        units=units,
    )


def predict(measured: Measured, hardware: Any, prediction: str = "roofline", machine: Any = None) -> Validation:
    """Predict every node of a measured run on ``hardware`` and compare (:func:`dfx.measure.comparison.compare`).

    ``machine`` (a :class:`dfx.measure.machine.MachineModel`) turns ``cache-aware`` into the calibrated prediction.
    """
    from dfx.analysis import evaluate_on
    from dfx.hardware import load_profile
    from dfx.measure.cache_model import NAME as CACHE, cache_timer
    from dfx.roofline import evaluate

    if prediction not in PREDICTIONS:
        raise DfxError(f"unknown prediction {prediction!r}; expected {' or '.join(PREDICTIONS)}")
    profile = hardware if not isinstance(hardware, str) else load_profile(hardware)
    if machine is None and prediction == "cache-aware":
        from dfx.measure.machine import MachineModel

        machine = MachineModel.from_profile(profile)  # a profile from `dfx calibrate --out` carries the tables
    if measured.compiled:
        return _predict_compiled(measured, profile, prediction, machine)
    costed = measured.costed
    # measured: PyTorch eager, op by op, on one machine; so the prediction is per operator too
    roof = evaluate_on(costed, profile, execution_model="eager", split=1, per_operator=True)
    if prediction == "roofline":
        chosen = roof
    else:
        chosen = evaluate(
            costed, profile, node_timer=cache_timer(costed, profile, machine, eager=True), arch_model=CACHE
        )
    return compare(
        {t.name: t.time_s for t in chosen.nodes},
        measured.node_s,
        measured.whole_s,
        categories={c.name: c.category.value for c in costed.nodes},
        roofline={t.name: t.time_s for t in roof.nodes},
        overheads={t.name: t.overhead_s for t in chosen.nodes},
        hardware=profile.id,
        prediction=prediction,
        model=measured.model,
        run={
            **measured.run,
            **_machine_summary(machine if prediction != "roofline" else None),
            "drift": machine_drift(machine, measured.run.get("reference_flop_per_s")),
            "overhead_drift": overhead_drift(machine, measured.run.get("reference_overhead_s")),
        },
    )


def validate(
    model: str = "mlp",
    hardware: Any = "host-cpu",
    *,
    dtype: str = "float32",
    batch: int | None = None,
    seq: int | None = None,
    repeat: int = 10,
    warmup: int = 3,
    device: str = "cpu",
    prediction: str = "roofline",
    machine: Any = None,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    max_bytes: int | None = None,
    max_run_s: float = MAX_RUN_S,
    clock: Callable[[], float] = time.perf_counter,
    compiled: bool = False,
    min_window_s: float = MIN_WINDOW_S,
) -> Validation:
    """Measure ``model`` on this machine and compare every node with its prediction on ``hardware``.

    :func:`measure` then :func:`predict`.

    Parameters
    ----------
    model : str
        A built-in model name or any spec :func:`dfx.models.resolve` accepts; a file model
        (``path/to/file.py:Class``) takes ``input_shapes`` instead of ``batch`` and ``seq``.
    hardware : str or HardwareProfile
        The profile to predict with: ideally one ``dfx calibrate`` wrote for this machine.
    repeat, warmup : int
        Timed and untimed runs; each node keeps its median. Timing goes on past ``repeat`` runs until
        the timed runs have taken ``min_window_s`` seconds (at most 10,000 runs, or ``100 * repeat``).
    min_window_s : float
        Seconds of timed runs at least (default :data:`MIN_WINDOW_S`, 0.5 s): a model of tens of
        microseconds is sampled over the machine's changes of speed, not over one millisecond. The
        whole graph's runs' count and 10th/50th/90th percentiles are in ``run["whole_runs"]``.
    prediction : {"cache-aware", "roofline"}
        ``roofline`` is exactly ``dfx analyze``'s prediction; ``cache-aware`` (:mod:`dfx.measure.cache_model`)
        charges bytes to the cache that holds the node's working set. Both are always exported.
    machine : dfx.measure.machine.MachineModel, optional
        For ``cache-aware``: the measured tables of ``dfx calibrate --json``
        (``MachineModel.from_calibration(doc)``): overhead curve, vector rates, GEMM table, cache residency.
    max_bytes : int, optional
        Refuse a model whose run needs more; default :func:`memory_limit_bytes`.
    max_run_s : float
        Refuse a model whose runs could take longer, at a conservative floor of FLOP/s.
    clock : callable
        Seconds as a float; tests pass a fake one (eager runs only).
    compiled : bool
        Run the model through Inductor (CPU) and compare kernel by kernel with dfx's compiled
        program (:func:`measure_compiled`) instead of node by node in eager mode.

    Raises
    ------
    DfxError
        A one-line message: bad arguments, no GPU, a model too big to run for real, or a graph
        that does not match the captured one.
    """
    from dfx.hardware import load_profile

    if prediction not in PREDICTIONS:
        raise DfxError(f"unknown prediction {prediction!r}; expected {' or '.join(PREDICTIONS)}")
    if compiled:
        _check_compiled_device(device)
    _check_args(repeat, warmup, device)  # before the profile's warning: a refusal is one line
    profile = hardware if not isinstance(hardware, str) else load_profile(hardware)  # fail fast, before running
    from dfx.targets import target_for

    kind = profile.kind.value
    other_machine = None  # warned once the runs are measured: a refusal stays one line
    if (
        target_for(profile).measured_on != device
    ):  # a quick profile (peak=..., bw=...) may stand for this machine: warn, not refuse
        other_machine = (
            f"--hw {profile.id} is a {kind} profile, but validate runs the model on this machine's {device}: "
            "the errors compare two machines; pass a profile from `dfx calibrate --out`"
        )
    elif profile.id == REFERENCE_CPU:
        other_machine = (
            f"--hw {REFERENCE_CPU} is dfx's reference CPU (a 56-core server socket), not this machine: the errors "
            "compare two machines; measure this one with `dfx calibrate --out my-cpu.yaml` and pass --hw my-cpu.yaml"
        )
    if compiled:
        measured = measure_compiled(
            model,
            dtype=dtype,
            batch=batch,
            seq=seq,
            repeat=repeat,
            warmup=warmup,
            device=device,
            input_shapes=input_shapes,
            max_bytes=max_bytes,
            max_run_s=max_run_s,
            min_window_s=min_window_s,
        )
    else:
        measured = measure(
            model,
            dtype=dtype,
            batch=batch,
            seq=seq,
            repeat=repeat,
            warmup=warmup,
            device=device,
            input_shapes=input_shapes,
            max_bytes=max_bytes,
            max_run_s=max_run_s,
            clock=clock,
            min_window_s=min_window_s,
        )
    if other_machine is not None:
        import warnings

        warnings.warn(other_machine, stacklevel=2)
    return predict(measured, profile, prediction, machine)


def _change(now: Any, calibrated: float | None) -> float | None:
    """``mean(now) / calibrated - 1``, or ``None`` without both figures."""
    if not calibrated or not now:
        return None
    return sum(now) / len(now) / calibrated - 1


def machine_drift(machine: Any, measured_reference: Any) -> float | None:
    """How far the machine moved since its calibration: the reference GEMM's FLOP/s now (mean of
    before and after the model's runs) over the calibrated one, minus 1 (negative: slower now).
    ``None`` without both figures.

    Examples
    --------
    >>> from dfx.measure.machine import MachineModel
    >>> round(machine_drift(MachineModel(reference_flop_per_s=100.0), [70.0, 90.0]), 6)  # 20% slower now
    -0.2
    """
    return _change(measured_reference, getattr(machine, "reference_flop_per_s", None))


def overhead_drift(machine: Any, measured_overhead: Any) -> float | None:
    """The tiny ops' median time now (mean of before and after the runs) over the calibrated hot
    overhead (the overhead curve's first point), minus 1 (positive: dispatch is slower now).

    Examples
    --------
    >>> from dfx.measure.machine import MachineModel
    >>> round(overhead_drift(MachineModel(overhead_curve=((1e-5, 5e-6), (1e-3, 5e-5))), [6e-6, 8e-6]), 6)
    0.4
    """
    curve = getattr(machine, "overhead_curve", ())
    return _change(measured_overhead, curve[0][1] if curve else None)


def _machine_summary(machine: Any) -> dict[str, Any]:
    """What the prediction used from the calibration, for ``run`` in the export (empty tables without one)."""
    if machine is None:
        return {"vector_flop_per_s": None, "gemm_curve": [], "calibration": None}
    from dfx.measure.machine import gemm_curve

    return {
        "vector_flop_per_s": machine.median_vector_rate(),
        "gemm_curve": [list(point) for point in gemm_curve(machine.gemm_table)],
        "calibration": {
            "overhead_curve": [list(p) for p in machine.overhead_curve],
            "vector_rates": dict(machine.vector_flop_per_s),
            "gemm_table": [[p.rows, p.k, p.n, p.flop_per_s] for p in machine.gemm_table],
            "attention_rates": [list(p) for p in machine.attention_rates],
            "overhead_by_kind": dict(machine.overhead_by_kind),
            "overhead_mixed": dict(machine.overhead_mixed),
            "overhead_curve_by_kind": {k: [list(p) for p in c] for k, c in machine.overhead_curve_by_kind.items()},
            "overhead_curve_each": {k: [list(p) for p in c] for k, c in machine.overhead_curve_each.items()},
            "resident_bytes": machine.resident_bytes,
            "gemm_cold": [[p.rows, p.k, p.n, p.hot_s, p.cold_s] for p in machine.gemm_cold],
            "after_gemm": [[p.bytes, p.streamed_bytes, p.hot_s, p.after_s] for p in machine.after_gemm],
            "cold_write": [[p.bytes, p.hot_s, p.cold_s] for p in machine.cold_write],
            "gemm_bias": [list(p) for p in machine.gemm_bias],
            "after_gemm_chain": [list(p) for p in machine.after_gemm_chain],
            "compiled_overhead": dict(machine.compiled_overhead),
        },
    }
