"""A compiled program as a Chrome/Perfetto trace: kernels on cores, chips as processes, collectives on links.

Read from the export document (``hardware.<id>.program.kernels[]``, each kernel's ``start_s``,
``end_s`` and core count from the schedule; ``hardware.<id>.parallel.timeline`` where the result is
spread over chips), written by :func:`dfx.sim.trace.spans_trace`. ``dfx analyze --trace FILE`` and
``dfx compile --trace FILE`` write it; open it in ui.perfetto.dev.

Cores: the schedule says how many cores each kernel holds and when, not which. Each kernel is
given the lowest run of free cores at its start (first fit over the kernels running then), and
drawn on the track of the first core of its run (``args.cores`` names the whole run), so that no
two kernels overlap on a track where the schedule kept to the chip's cores.
"""

from __future__ import annotations

from typing import Any, Mapping

from dfx.schema.analysis import AnalysisDoc, ProgramRecord
from dfx.sim.trace import Span, spans_trace

__all__ = ["analysis_trace", "assign_cores", "program_spans", "write_trace"]

_EPS_S = 1e-15  # a kernel that starts as another ends does not overlap it (float rounding of sums)


def assign_cores(program: ProgramRecord) -> dict[str, tuple[int, int]]:
    """Kernel name -> ``(first, last + 1)``: the run of cores it holds, first fit at its start.

    A kernel asking for more cores than are free at its start (or than the chip has) gets the run
    starting at core 0, overlapping; the schedule's own check keeps that from happening.
    """
    active: list[tuple[float, int, int]] = []  # (end_s, first, stop) of kernels running
    out: dict[str, tuple[int, int]] = {}
    cores = max(program.cores, 1)
    for k in sorted(program.kernels, key=lambda k: (k.start_s, k.end_s, k.name)):
        active = [a for a in active if a[0] > k.start_s + _EPS_S]
        want = max(1, min(k.cores, cores))
        first = 0
        for end_s, lo, hi in sorted(active, key=lambda a: a[1]):
            del end_s
            if first + want <= lo:
                break
            first = max(first, hi)
        if first + want > cores:
            first = 0
        out[k.name] = (first, first + want)
        active.append((k.end_s, first, first + want))
    return out


def program_spans(program: ProgramRecord, process: str) -> list[Span]:
    """One span per kernel of ``program`` on the track ``core N`` of ``process``, ordered by core then start."""
    runs = assign_cores(program)
    spans = []
    for k in sorted(program.kernels, key=lambda k: (runs[k.name][0], k.start_s, k.name)):
        first, stop = runs[k.name]
        spans.append(
            Span(
                name=k.name,
                start_s=k.start_s,
                end_s=k.end_s,
                process=process,
                thread=f"core {first}",
                category=k.kind,
                args={
                    "nodes": list(k.nodes),
                    "bound": str(k.bound),
                    "cores": f"{first}" if stop - first == 1 else f"{first}-{stop - 1}",
                    "flops": k.flops,
                    "offchip_bytes": k.offchip_bytes,
                    "time_s": k.time_s,
                },
            )
        )
    return spans


def _parallel_spans(hw_id: str, timeline: Any) -> list[Span]:
    """The split's timeline: compute stages on each chip's ``compute`` track, collectives on their link."""
    spans = []
    for entry in timeline:
        chips = [int(c) for c in entry["chips"]]
        comm = entry["kind"] == "communication"
        thread = "link " + "-".join(str(c) for c in chips) if comm else "compute"
        for c in chips:
            spans.append(
                Span(
                    name=str(entry["name"]),
                    start_s=float(entry["start_s"]),
                    end_s=float(entry["end_s"]),
                    process=f"{hw_id} chip {c}",
                    thread=thread,
                    category=str(entry["kind"]),
                    args={"chips": chips},
                )
            )
    return spans


def analysis_trace(doc: Mapping[str, Any] | AnalysisDoc) -> dict[str, Any]:
    """The trace of every compiled program in an analysis document (``Analysis.to_dict()``).

    One process per profile and chip: ``<id> chip 0`` holds the program's kernels, one track per
    core they start on. A result spread over chips (``hardware.<id>.parallel``) adds a process per
    chip with its compute stages and, on ``link A-B`` tracks, the collectives between those chips;
    its kernels are then one chip's compiled program, named so. Profiles evaluated without a
    compiled program (``--execution-model eager``) have no kernels and are left out.

    Raises
    ------
    SimulationError, SchemaError
        If ``doc`` is not an analysis document, or lacks a key.
    """
    from dfx.sim.dag import analysis_record

    record = analysis_record(doc)
    spans: list[Span] = []
    for hw_id, h in record.hardware.items():
        if h.program is None:
            continue
        spread = h.parallel is not None and (h.parallel.plan.chips or 1) > 1
        name = f"{hw_id}: one chip's compiled program" if spread else f"{hw_id} chip 0"
        spans += program_spans(h.program, name)
        if spread and "timeline" in h.parallel.more:  # the split's timeline, where its model wrote one
            spans += _parallel_spans(hw_id, h.parallel.more["timeline"])
    other = {"schema": record.schema, "model": record.model_name, "hardware": list(record.hardware)}
    return spans_trace(spans, other=other)


def write_trace(path: Any, doc: Mapping[str, Any] | AnalysisDoc, *, force: bool = False) -> str:
    """Write :func:`analysis_trace` of ``doc`` to ``path`` (atomically; an existing file only with ``force``).

    Returns the line to tell the user: the path, the span count and where to open it.

    Raises
    ------
    DfxError
        If the file exists and ``force`` is false, or its folder cannot be written.
    """
    import json
    from pathlib import Path

    from dfx.report.files import write_outputs

    data = analysis_trace(doc)
    spans = sum(1 for e in data["traceEvents"] if e["ph"] == "X")
    target = Path(path).expanduser()
    write_outputs(target.parent, {target.name: json.dumps(data)}, force=force)
    return f"wrote {target} ({spans} spans; open it in ui.perfetto.dev)"
