"""Was the machine quiet enough to trust what was measured? Load probes before and after, and one verdict.

A probe (:func:`probe_load`) reads the 1-minute load average and runs a short **spin**: ``torch.mm``
on ``[256, 256]`` operands, back to back for about 50 ms on torch's threads. Two figures come out:

- ``cpu_share``: the CPU time the process got over ``wall time x threads``. On a quiet machine
  each thread runs the whole time (OpenMP workers spin between calls, which counts as running),
  so the share is about 1; a thread that waits for a CPU another process holds gets less.
- ``spin_per_s``: the spin's calls per second, compared before and after: a machine whose
  speed moved during the measurement moved every figure with it.

:func:`verdict` turns the two probes, the CPU and thread counts, and any figures that still
contradict each other after being measured again into one line. It is pure arithmetic, so it is
tested with injected probes.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

__all__ = ["LoadProbe", "Verdict", "probe_load", "verdict"]

SHARE_MIN = 0.8  # a thread that got under 80% of a CPU while spinning was waiting for one
RATE_MOVE = 0.25  # the spin's rate after within 25% of before: the machine held still
LOAD_SLACK = 0.5  # load average (runnable processes) above the CPUs our threads leave free, by this much, is others' work
_SPIN_S = 0.05
_SPIN_SIDE = 256


@dataclass(frozen=True)
class LoadProbe:
    """One probe: ``load_1min`` (os.getloadavg), ``cpu_share`` (0..1), ``spin_per_s`` (spin calls per second)."""

    load_1min: float
    cpu_share: float
    spin_per_s: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """Whether to trust the figures: ``busy`` and the line that says why, with the probes behind it."""

    busy: bool
    line: str
    reasons: tuple[str, ...]
    before: LoadProbe | None
    after: LoadProbe | None

    def to_dict(self) -> dict[str, Any]:
        return {"busy": self.busy, "line": self.line, "reasons": list(self.reasons),
                "before": self.before.to_dict() if self.before else None,
                "after": self.after.to_dict() if self.after else None}  # fmt: skip


def probe_load(threads: int, seconds: float = _SPIN_S, clock: Callable[[], float] = time.perf_counter,
               cpu_clock: Callable[[], float] = time.process_time) -> LoadProbe:  # fmt: skip
    """Read the load average and spin ``torch.mm`` on torch's threads for about ``seconds``."""
    import torch

    a = torch.rand(_SPIN_SIDE, _SPIN_SIDE)
    out = torch.empty_like(a)
    torch.mm(a, a, out=out)  # warm
    start, cpu0, calls = clock(), cpu_clock(), 0
    while clock() - start < seconds:
        torch.mm(a, a, out=out)
        calls += 1
    wall, cpu = clock() - start, cpu_clock() - cpu0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return LoadProbe(load, min(1.0, cpu / (wall * max(threads, 1))) if wall > 0 else 1.0, calls / wall if wall > 0 else 0.0)


def verdict(before: LoadProbe | None, after: LoadProbe | None, cpus: int, threads: int,
            contradictions: Sequence[str] = (), own_load: float = 0.0) -> Verdict:  # fmt: skip
    """Judge a measurement by its probes (module docstring).

    Busy when: another process's load was there before we started (``load_1min - own_load`` over
    the ``cpus - threads`` CPUs our threads leave free, plus :data:`LOAD_SLACK`); a probe's thread
    got under :data:`SHARE_MIN` of a CPU; the spin's rate moved by more than :data:`RATE_MOVE`
    between the probes; or figures still contradict each other (``contradictions``, one line each).
    ``own_load`` is the load our own process added just before (a capture, a compile).

    Examples
    --------
    >>> quiet = LoadProbe(0.1, 0.98, 1000.0)
    >>> verdict(quiet, LoadProbe(1.9, 0.97, 980.0), cpus=2, threads=2).line
    'verdict: quiet: figures can be trusted (load 0.10 before on 2 CPUs, 2 threads; a thread got 98% then 97% of a CPU; spin rate -2%)'
    >>> v = verdict(LoadProbe(1.3, 0.6, 600.0), LoadProbe(2.9, 0.5, 500.0), cpus=2, threads=2)
    >>> v.busy, v.reasons[0]
    (True, 'load average 1.30 before measuring, over the 0.5 our 2 threads leave on 2 CPUs: other processes were running')
    """
    reasons = []
    free = max(cpus - threads, 0) + LOAD_SLACK
    if before is not None and before.load_1min - own_load > free:
        reasons.append(f"load average {before.load_1min:.2f} before measuring, over the {free:.1f} our {threads} threads "
                       f"leave on {cpus} CPUs: other processes were running")  # fmt: skip
    for when, probe in (("before", before), ("after", after)):
        if probe is not None and probe.cpu_share < SHARE_MIN:
            reasons.append(f"a spinning thread got {probe.cpu_share:.0%} of a CPU {when} (under {SHARE_MIN:.0%}): it waited for one")
    move = None
    if before is not None and after is not None and before.spin_per_s > 0:
        move = after.spin_per_s / before.spin_per_s - 1
        if abs(move) > RATE_MOVE:
            reasons.append(f"the spin ran {move:+.0%} faster after than before: the machine's speed moved while measuring")
    reasons += list(contradictions)
    shares = " then ".join(f"{p.cpu_share:.0%}" for p in (before, after) if p is not None)
    facts = (f"load {before.load_1min:.2f} before on {cpus} CPUs, {threads} threads" if before else f"{cpus} CPUs, {threads} threads")
    facts += f"; a thread got {shares} of a CPU" if shares else ""
    facts += f"; spin rate {move:+.0%}" if move is not None else ""
    if reasons:
        line = f"verdict: TOO BUSY to trust these figures: {reasons[0]} ({facts}); measure again on a quiet machine"
    else:
        line = f"verdict: quiet: figures can be trusted ({facts})"
    return Verdict(bool(reasons), line, tuple(reasons), before, after)
