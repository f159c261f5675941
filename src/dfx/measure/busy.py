"""Was the machine quiet enough to trust what was measured? Load probes before and after, a share per benchmark family, and one verdict.

A probe (:func:`probe_load`) reads the 1-minute load average and runs a short **spin**: ``torch.mm``
on ``[256, 256]`` operands, back to back for about 50 ms on torch's threads. Two figures come out:

- ``cpu_share``: the CPU time the process got over ``wall time x threads``. On a quiet machine
  each thread runs the whole time (OpenMP workers spin between calls, which counts as running),
  so the share is about 1; a thread that waits for a CPU another process holds gets less.
- ``spin_per_s``: the spin's calls per second, compared before and after: a machine whose
  speed moved during the measurement moved every figure with it.

The probes only see the moments before and after. A process that starts after the first and
ends before the second (or one that slows every benchmark alike, so that no figure contradicts
another) is seen by the **family share** (:func:`left_share`): over each benchmark family's wall
time, the CPU seconds the whole machine spent (``/proc/stat``) less our own process's
(``time.process_time``) are other processes' work, and ``(cpus - others) / threads`` is the share
of a CPU they left each of our threads. One at 100% of a CPU on 2 CPUs leaves our 2 threads 50%
each: under :data:`SHARE_MIN`, that family is measured again, and the verdict is TOO BUSY if it
is still so. (It is an upper bound on what our threads lost: a family that runs on one thread
while the others sleep loses nothing to one other process, and is still measured again.)

:func:`verdict` turns the two probes, the family shares, the CPU and thread counts, and any figures that still
contradict each other after being measured again into one line. It is pure arithmetic, so it is
tested with injected probes.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "CpuClocks",
    "LoadProbe",
    "Verdict",
    "left_share",
    "other_load",
    "own_load",
    "probe_load",
    "read_cpu_clocks",
    "steal_cpus",
    "verdict",
    "watch_load",
]

SHARE_MIN = 0.8  # a thread that got under 80% of a CPU while spinning was waiting for one
RATE_MOVE = 0.25  # the spin's rate after within 25% of before: the machine held still
LOAD_SLACK = (
    0.5  # load average (runnable processes) above the CPUs our threads leave free, by this much, is others' work
)
_SPIN_S = 0.05
# A warm-up spin as long as the timed one: the first probe of a process timed OpenMP's threads starting
# and the CPU's clock rising, and the second then read 85% faster on a quiet machine (issue 36).
_WARM_PARTS = 1.0
_SPIN_SIDE = 256


_WINDOW_S = 60.0  # the load average's window (the 1-minute figure)


def own_load(samples: Sequence[tuple[float, float]], now_s: float, cpu_s: float, window_s: float = _WINDOW_S) -> float:
    """Our own process's share of the 1-minute load average: its CPU seconds over the last minute / a minute.

    ``samples`` are ``(wall seconds, process CPU seconds)`` readings, oldest first (the process's
    start, then each probe); the newest one at least ``window_s`` old is the reference, else the
    oldest. An approximation (the load average decays exponentially, this counts the minute
    evenly), but it keeps a calibration or a model run of our own from reading as another process.

    Examples
    --------
    >>> own_load([(0.0, 0.0)], now_s=30.0, cpu_s=45.0)  # 45 CPU-seconds in the 30 s since start: 1.5 CPUs for half a minute
    0.75
    >>> own_load([(0.0, 0.0), (50.0, 80.0)], now_s=120.0, cpu_s=140.0)  # since 50 s (the newest 60 s old or more): 60 / 70 x 1
    0.8571428571428571
    """
    old = [s for s in samples if s[0] <= now_s - window_s]
    wall, cpu = old[-1] if old else samples[0]
    span = now_s - wall
    return 0.0 if span <= 0 else (cpu_s - cpu) / span * min(1.0, span / window_s)


def _process_start() -> tuple[float, float]:
    """``(perf_counter at the process's start, 0.0)`` from Linux's /proc; now and the CPU used so far elsewhere."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / ticks
        uptime = float(open("/proc/uptime").read().split()[0])
        return time.perf_counter() - (uptime - start), 0.0
    except (OSError, ValueError, IndexError):
        return time.perf_counter(), time.process_time()


_HISTORY: list[tuple[float, float]] = []  # (perf_counter, process_time) at the start and at each probe


@dataclass(frozen=True)
class CpuClocks:
    """One reading of the clocks :func:`left_share` compares: ``wall_s`` (perf_counter), ``own_cpu_s``
    (this process's CPU seconds, all threads) and ``machine_busy_s`` (every CPU's non-idle seconds
    since boot, ``/proc/stat``; ``None`` where the OS does not say)."""

    wall_s: float
    own_cpu_s: float
    machine_busy_s: float | None
    steal_s: float | None = None  # seconds the hypervisor ran other guests on our CPUs (/proc/stat's steal)


_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # /proc/stat's cpu line: user nice system [idle iowait] irq softirq steal
_STEAL_FIELD = 7  # proc(5): "steal: stolen time, which is the time spent in other operating systems" (a VM's host)


def read_cpu_clocks(stat_path: str = "/proc/stat") -> CpuClocks:
    """Now: wall, our CPU and the machine's busy CPU seconds (user, nice, system, irq, softirq and steal ticks / SC_CLK_TCK)."""
    wall, own = time.perf_counter(), time.process_time()
    steal: float | None = None
    try:
        with open(stat_path) as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
        tick_s = os.sysconf("SC_CLK_TCK")
        busy: float | None = sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks)) / tick_s
        steal = ticks[_STEAL_FIELD] / tick_s if len(ticks) > _STEAL_FIELD else None
    except (OSError, ValueError, IndexError, AttributeError):
        busy = None
    return CpuClocks(wall, own, busy, steal)


def left_share(start: CpuClocks, end: CpuClocks, cpus: int, threads: int) -> float | None:
    """The share of a CPU other processes left each of our ``threads`` between two readings (0..1), or ``None``.

    ``others = (machine busy seconds - our CPU seconds) / wall seconds`` (at least 0) CPUs were
    other processes'; ``min(1, (cpus - others) / threads)`` is what was left per thread. ``None``
    without the machine's figure or with no wall time between the readings.

    Examples
    --------
    >>> a = CpuClocks(0.0, 0.0, 100.0)
    >>> round(left_share(a, CpuClocks(2.0, 3.8, 105.8), cpus=2, threads=2), 6)  # others: (5.8 - 3.8) / 2 = 1 CPU; (2 - 1) / 2
    0.5
    >>> round(left_share(a, CpuClocks(2.0, 3.8, 104.0), cpus=2, threads=2), 6)  # others: 0.1 CPU; 1.9 / 2
    0.95
    >>> left_share(a, CpuClocks(2.0, 1.0, 101.0), cpus=2, threads=2)  # nothing but us: all of it
    1.0
    """
    wall = end.wall_s - start.wall_s
    if start.machine_busy_s is None or end.machine_busy_s is None or wall <= 0:
        return None
    others = max(0.0, (end.machine_busy_s - start.machine_busy_s) - (end.own_cpu_s - start.own_cpu_s)) / wall
    return max(0.0, min(1.0, (cpus - others) / max(threads, 1)))


@dataclass(frozen=True)
class LoadProbe:
    """One probe: ``load_1min`` (os.getloadavg), ``cpu_share`` (0..1), ``spin_per_s`` (spin calls per second),
    and ``own_load`` (our own process's part of ``load_1min``, :func:`own_load`)."""

    load_1min: float
    cpu_share: float
    spin_per_s: float
    own_load: float = 0.0

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
        return {
            "busy": self.busy,
            "line": self.line,
            "reasons": list(self.reasons),
            "before": self.before.to_dict() if self.before else None,
            "after": self.after.to_dict() if self.after else None,
        }


def probe_load(
    threads: int,
    seconds: float = _SPIN_S,
    clock: Callable[[], float] = time.perf_counter,
    cpu_clock: Callable[[], float] = time.process_time,
) -> LoadProbe:
    """Read the load average (and how much of it is our own process) and spin ``torch.mm`` on torch's threads for about ``seconds``."""
    import torch

    if not _HISTORY:
        _HISTORY.append(_process_start())
    now, used = time.perf_counter(), time.process_time()
    mine = own_load(_HISTORY, now, used)
    _HISTORY.append((now, used))

    a = torch.rand(_SPIN_SIDE, _SPIN_SIDE)
    out = torch.empty_like(a)
    warm_until = time.perf_counter() + seconds * _WARM_PARTS
    torch.mm(a, a, out=out)
    while time.perf_counter() < warm_until:  # threads started and clocks up before the timed spin
        torch.mm(a, a, out=out)
    start, cpu0, calls = clock(), cpu_clock(), 0
    while clock() - start < seconds:
        torch.mm(a, a, out=out)
        calls += 1
    wall, cpu = clock() - start, cpu_clock() - cpu0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return LoadProbe(
        load, min(1.0, cpu / (wall * max(threads, 1))) if wall > 0 else 1.0, calls / wall if wall > 0 else 0.0, mine
    )


def verdict(
    before: LoadProbe | None,
    after: LoadProbe | None,
    cpus: int,
    threads: int,
    contradictions: Sequence[str] = (),
    own_load: float = 0.0,
    family_shares: Mapping[str, float] | None = None,
) -> Verdict:
    """Judge a measurement by its probes (module docstring).

    Busy when a probe's thread got under :data:`SHARE_MIN` of a CPU; the spin's rate moved by more
    than :data:`RATE_MOVE` between the probes (only without family shares showing every family got its
    CPUs: the short spin is noisier than that on a quiet VM, the shares watch the whole measurement); a benchmark family, after being measured again,
    still ran while other processes left our threads under :data:`SHARE_MIN` of a CPU
    (``family_shares``: family -> :func:`left_share`); or figures still contradict each other
    (``contradictions``, one line each). Another process's load before we started
    (``load_1min - own_load`` over the ``cpus - threads`` CPUs our threads leave free, plus
    :data:`LOAD_SLACK`) is the first reason given when one of those holds, and a note otherwise:
    the 1-minute average lags (it still reads 1.5 a minute after a job on 2 CPUs has ended), while
    the spins measure whether our threads got their CPUs. The load our own process added in the
    last minute (``before.own_load``, plus ``own_load``) is not another process's.

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
    mine = own_load + (before.own_load if before is not None else 0.0)
    load_reason = None
    if before is not None and before.load_1min - mine > free:
        ours = f" ({mine:.2f} of it ours)" if mine >= 0.005 else ""
        load_reason = (
            f"load average {before.load_1min:.2f}{ours} before measuring, over the {free:.1f} our {threads} threads "
            f"leave on {cpus} CPUs: other processes were running"
        )
    for when, probe in (("before", before), ("after", after)):
        if probe is not None and probe.cpu_share < SHARE_MIN:
            reasons.append(
                f"a spinning thread got {probe.cpu_share:.0%} of a CPU {when} (under {SHARE_MIN:.0%}): it waited for one"
            )
    move = None
    shares_by_family = dict(family_shares or {})
    # Every family measured with its CPUs: the spins' rates are then facts, not reasons. A 50 ms spin is
    # noisier than RATE_MOVE on a quiet VM (this project's 2-CPU machine, nothing else running, every
    # family at >= 98% of a CPU: +64%, +40% and -46% in 10 calibrations), while the family shares watch
    # the whole measurement; the spins decide only where no family share was taken.
    got_cpus = bool(shares_by_family) and min(shares_by_family.values()) >= SHARE_MIN
    if before is not None and after is not None and before.spin_per_s > 0:
        move = after.spin_per_s / before.spin_per_s - 1
        if abs(move) > RATE_MOVE and not got_cpus:
            reasons.append(
                f"the spin ran {abs(move):.0%} {'faster' if move > 0 else 'slower'} after than before: "
                "the machine's speed moved while measuring"
            )
    reasons += [
        f"other processes left our threads {share:.0%} of a CPU while "
        f"{family if family.startswith('the ') else f'the {family} benchmarks'} ran (under {SHARE_MIN:.0%})"
        for family, share in shares_by_family.items()
        if share < SHARE_MIN
    ]
    reasons += list(contradictions)
    if load_reason is not None and reasons:
        reasons.insert(0, load_reason)
    shares = " then ".join(f"{p.cpu_share:.0%}" for p in (before, after) if p is not None)
    facts = (
        f"load {before.load_1min:.2f} before on {cpus} CPUs, {threads} threads"
        if before
        else f"{cpus} CPUs, {threads} threads"
    )
    facts += f"; a thread got {shares} of a CPU" if shares else ""
    facts += f"; spin rate {move:+.0%}" if move is not None else ""
    if shares_by_family:
        facts += f"; at least {min(shares_by_family.values()):.0%} of a CPU left per thread in every benchmark family"
    if reasons:
        line = f"verdict: TOO BUSY to trust these figures: {reasons[0]} ({facts}); measure again on a quiet machine"
    elif load_reason is not None:
        line = (
            f"verdict: quiet: figures can be trusted ({facts}); the load average of "
            f"{before.load_1min:.2f} is others' work of the last minute, but our threads got their CPUs"
        )
    else:
        line = f"verdict: quiet: figures can be trusted ({facts})"
    return Verdict(bool(reasons), line, tuple(reasons), before, after)


STEAL_MAX = 0.05  # CPUs the hypervisor gave other guests while we measured, beyond which that is other load


def steal_cpus(start: CpuClocks, end: CpuClocks) -> float | None:
    """CPUs' worth of steal time between two readings (steal seconds / wall seconds), or ``None``.

    >>> steal_cpus(CpuClocks(0.0, 0.0, 0.0, 10.0), CpuClocks(2.0, 0.0, 0.0, 10.4))  # 0.4 s stolen in 2 s
    0.2
    """
    wall = end.wall_s - start.wall_s
    if start.steal_s is None or end.steal_s is None or wall <= 0:
        return None
    return round(max(0.0, end.steal_s - start.steal_s) / wall, 12)


def other_load(
    what: str,
    share: float | None,
    steal: float | None,
    spin_before: LoadProbe | None,
    spin_after: LoadProbe | None,
) -> tuple[str, ...]:
    """Evidence that other processes (or other guests) ran while ``what`` was measured: one line each, empty when none.

    Four kinds, each read off the machine rather than inferred from the figures themselves:

    - ``share`` (:func:`left_share`) under :data:`SHARE_MIN`: other processes' CPU time, from ``/proc/stat``;
    - ``steal`` (:func:`steal_cpus`) over :data:`STEAL_MAX`: the hypervisor ran other guests on our CPUs;
    - a spin probe's ``cpu_share`` under :data:`SHARE_MIN`: a spinning thread waited for a CPU;
    - the spin's rate slower after than before by more than :data:`RATE_MOVE`: the machine slowed under us.

    Examples
    --------
    >>> quiet = LoadProbe(0.1, 0.98, 1000.0)
    >>> other_load("the bandwidths", 0.95, 0.0, quiet, LoadProbe(0.3, 0.97, 990.0))
    ()
    >>> other_load("the bandwidths", 0.5, 0.2, quiet, quiet)[1]
    'the hypervisor ran other guests on 0.20 of our CPUs (steal time) while the bandwidths were measured'
    """
    out = []
    if share is not None and share < SHARE_MIN:
        out.append(f"other processes left our threads {share:.0%} of a CPU while {what} were measured")
    if steal is not None and steal > STEAL_MAX:
        out.append(
            f"the hypervisor ran other guests on {steal:.2f} of our CPUs (steal time) while {what} were measured"
        )
    for when, probe in (("before", spin_before), ("after", spin_after)):
        if probe is not None and probe.cpu_share < SHARE_MIN:
            out.append(f"a spinning thread got {probe.cpu_share:.0%} of a CPU {when} {what}: it waited for one")
    if spin_before is not None and spin_after is not None and spin_before.spin_per_s > 0:
        move = spin_after.spin_per_s / spin_before.spin_per_s - 1
        if move < -RATE_MOVE:
            out.append(f"the spin ran {-move:.0%} slower after {what} than before: the machine slowed while measuring")
    return tuple(out)


def watch_load(
    what: str,
    cpus: int,
    threads: int,
    probe: Callable[[int], LoadProbe] | None = None,
    clocks: Callable[[], CpuClocks] | None = None,
) -> Callable[[], tuple[str, ...]]:
    """Start watching for other load now; the returned function stops and returns :func:`other_load`'s lines.

    ``probe`` is :func:`probe_load` (a short spin) and ``clocks`` :func:`read_cpu_clocks` unless given;
    each is read at the start and at the stop.
    """
    spin, read = probe or probe_load, clocks or read_cpu_clocks
    start, before = read(), spin(threads)

    def stop() -> tuple[str, ...]:
        end, after = read(), spin(threads)
        return other_load(what, left_share(start, end, cpus, threads), steal_cpus(start, end), before, after)

    return stop
