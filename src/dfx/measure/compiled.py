"""``dfx validate --compiled``: run a model through Inductor (CPU) for real and time each generated kernel.

Steps:

1. The exported graph dfx captures (:func:`dfx.measure.realrun.export_real`) is handed to
   Inductor's ``compile_fx`` (as :func:`dfx.capture.inductor.inductor_kernels` does, but to the
   end: C++ is generated and built), with ``trace.provenance_tracking_level = 1``. The compiled
   graph then carries ``inductor_provenance_mapping_str``: for each *call* of a kernel in the
   generated wrapper (its debug handle ``cpp_fused_gelu_view_2:7``, ``extern_kernels.addmm:8``),
   the post-grad nodes it computes (``cppCodeToPost``), and for each post-grad node the nodes of
   the graph given to Inductor (``postToPre``): dfx's own node names.
2. The wrapper's Python source (``source_code``) is copied with a clock stamp inserted before its
   first statement and after every kernel call (:func:`stamp_source`), as
   :class:`dfx.measure.timing.StampedGraph` does for an fx graph, and loaded again: its C++ kernels
   come from Inductor's on-disk cache, so nothing is rebuilt. A call's time is the time between the
   stamp before it and the stamp after it: the call, plus the wrapper's glue since the previous
   call (buffer allocation, ``del``), so the calls' times add up to the run.
3. The whole compiled graph (the wrapper's uninstrumented ``call``) is timed alone: the measured
   end-to-end time.

Only this module and :mod:`dfx.capture` touch Inductor; the pairing with dfx's kernels is
torch-free (:mod:`dfx.measure.kernel_match`).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from dfx.errors import DfxError

__all__ = ["CompiledRun", "compile_real", "kernel_call_seconds", "kernel_sources", "stamp_source", "time_kernel_calls"]

_HANDLE = re.compile(r"^(\s*)# \[Provenance debug handles\] (\S+)\s*$")
_CALL_DEF = re.compile(r"^(\s*)def call\(self, args\):\s*$")
STAMP = "_dfx_stamp"


def _statement_end(lines: Sequence[str], start: int) -> int:
    """The index of the last line of the statement that starts at ``lines[start]`` (brackets balanced)."""
    depth, i = 0, start
    while i < len(lines):
        depth += sum(lines[i].count(c) for c in "([{") - sum(lines[i].count(c) for c in ")]}")
        if depth <= 0:
            return i
        i += 1
    return len(lines) - 1


def stamp_source(source: str) -> tuple[str, tuple[str, ...]]:
    """Insert ``_dfx_stamp(0)`` as the first statement of the wrapper's ``call`` and ``_dfx_stamp(i)``
    after the ``i``-th kernel call (the statement after each ``# [Provenance debug handles] NAME:N``).

    Returns the new source and the handles, in call order.

    Examples
    --------
    >>> src = '''class Runner:
    ...     def call(self, args):
    ...         a, = args
    ...         # [Provenance debug handles] extern_kernels.mm:1
    ...         extern_kernels.mm(a,
    ...                           a, out=b)
    ...         return (b, )'''
    >>> text, handles = stamp_source(src)
    >>> handles
    ('extern_kernels.mm:1',)
    >>> print(text)
    class Runner:
        def call(self, args):
            _dfx_stamp(0)
            a, = args
            # [Provenance debug handles] extern_kernels.mm:1
            extern_kernels.mm(a,
                              a, out=b)
            _dfx_stamp(1)
            return (b, )
    """
    lines = source.splitlines()
    out: list[str] = []
    handles: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        if (m := _CALL_DEF.match(line)) is not None:
            indent = re.match(r"\s*", lines[i + 1]).group(0) if i + 1 < len(lines) else m.group(1) + "    "
            out.append(f"{indent}{STAMP}(0)")
        elif (m := _HANDLE.match(line)) is not None and i + 1 < len(lines):
            end = _statement_end(lines, i + 1)
            out.extend(lines[i + 1 : end + 1])
            handles.append(m.group(2))
            out.append(f"{m.group(1)}{STAMP}({len(handles)})")
            i = end
        i += 1
    return "\n".join(out), tuple(handles)


def kernel_sources(
    mapping: Mapping[str, Any], handles: Sequence[str], graph_nodes: Sequence[str]
) -> list[tuple[str, tuple[str, ...]]]:
    """Each kernel call's nodes of dfx's graph: ``cppCodeToPost`` then ``postToPre`` of Inductor's provenance mapping.

    A post-grad node with no pre-grad entry stands for itself when dfx's graph has a node of that name.

    Examples
    --------
    >>> m = {"cppCodeToPost": {"k:1": ["relu", "view_2"]}, "postToPre": {"relu": ["relu"], "view_2": ["linear"]}}
    >>> kernel_sources(m, ["k:1"], ["linear", "relu"])
    [('k:1', ('linear', 'relu'))]
    """
    known = set(graph_nodes)
    order = {n: i for i, n in enumerate(graph_nodes)}
    to_post, to_pre = mapping.get("cppCodeToPost") or {}, mapping.get("postToPre") or {}
    out = []
    for handle in handles:
        names = {pre for post in to_post.get(handle, ()) for pre in (to_pre.get(post) or [post])}
        out.append((handle, tuple(sorted((n for n in names if n in known), key=order.__getitem__))))
    return out


@dataclass(frozen=True)
class CompiledRun:
    """A model compiled by Inductor: its wrapper's ``call``, the stamped copy, and each call's dfx nodes."""

    call: Callable[[list], Any]
    stamped: Callable[[list], Any]
    readings: list  # the stamped copy's clock readings, refilled on each run
    calls: tuple[tuple[str, tuple[str, ...]], ...]  # (handle, dfx nodes), in call order
    source: str


def compile_real(
    gm: Any, inputs: list, graph_nodes: Sequence[str], clock: Callable[[], float] = time.perf_counter
) -> CompiledRun:
    """Compile an exported graph module with Inductor (CPU, C++), keep its provenance, and stamp its wrapper.

    Raises
    ------
    DfxError
        If Inductor fails, or its compiled graph carries no wrapper source or provenance mapping.
    """
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    from dfx.capture.trace import capture_context

    try:
        with (
            inductor_config.patch({"fx_graph_cache": False, "trace.provenance_tracking_level": 1}),
            capture_context(),
            torch.no_grad(),
        ):
            compiled = compile_fx(gm, inputs)
    except Exception as exc:  # noqa: BLE001 - Inductor raises many kinds; one line for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DfxError(
            f"torch.compile (Inductor, CPU) failed on this model: {type(exc).__name__}: {first[:200]}"
        ) from None
    source = getattr(compiled, "source_code", None)
    mapping_text = getattr(compiled, "inductor_provenance_mapping_str", None)
    call = getattr(compiled, "current_callable", None)
    if not source or not mapping_text or call is None:
        raise DfxError(
            f"this torch ({torch.__version__}) gives no Inductor wrapper source or kernel provenance; "
            "dfx validate --compiled needs torch 2.9 or later"
        )
    text, handles = stamp_source(source)
    readings = [0.0] * (len(handles) + 1)

    def stamp(i: int) -> None:
        readings[i] = clock()

    namespace: dict[str, Any] = {"__name__": "dfx_stamped_inductor_wrapper", STAMP: stamp}
    exec(compile(text, "<dfx: Inductor wrapper with clock stamps>", "exec"), namespace)  # noqa: S102 - Inductor's own code
    calls = kernel_sources(json.loads(mapping_text), handles, graph_nodes)
    return CompiledRun(call, namespace["call"], readings, tuple(calls), source)


def kernel_call_seconds(run: CompiledRun, inputs: list) -> list[float]:
    """One stamped run of ``run``: each kernel call's seconds, in the order of ``run.calls``."""
    run.stamped(list(inputs))
    r = run.readings
    return [r[j + 1] - r[j] for j in range(len(run.calls))]


def time_kernel_calls(run: CompiledRun, inputs: list, *, repeat: int = 10, warmup: int = 3) -> dict[str, float]:
    """Each kernel call's median seconds over ``repeat`` stamped runs (after ``warmup``), keyed by its handle."""
    import torch

    samples: list[list[float]] = []
    with torch.no_grad():
        for i in range(warmup + repeat):
            seconds = kernel_call_seconds(run, inputs)
            if i >= warmup:
                samples.append(seconds)
    return {handle: statistics.median(s[j] for s in samples) for j, (handle, _) in enumerate(run.calls)}
