"""Scheduling: the kernel DAG on the machine's finite cores, static or dynamic, as a list schedule.

Each kernel ``k`` needs ``Kernel.cores`` = ``c_k`` of the ``C`` cores of its chip for its whole
duration ``d_k`` (from the roofline, :mod:`dfx.roofline.program`). Kernels start no earlier than
every kernel they depend on has finished. Both policies rank kernels by their *upward rank* on the
predicted durations (HEFT, Topcuoglu et al., IEEE TPDS 2002, eq. 5, without communication)::

    rank(k) = d_k + max over kernels s that read k of rank(s)      (d_k if none)

higher first, ties to the earlier kernel in program order; since ``d >= 0`` this order is
topological.

- **static** (the compiler fixes the order: Groq, Cerebras, Spyre, TPU): kernels *issue in that
  order*. Kernel ``i`` starts at the earliest time that is no earlier than kernel ``i - 1``'s start,
  after its inputs are ready, and when ``c_i`` cores are free. A kernel never overtakes an earlier
  one, even when it could fill idle cores.
- **dynamic** (the run time decides: GPUs, CPUs; also ``mixed``, whose firing is decided at run
  time): a ready list. Whenever a kernel finishes, the ready kernels are taken in rank order and each
  one that fits on the free cores starts (so a small kernel may fill cores a larger one cannot use).
  No core is idle while a ready kernel fits (Graham's list scheduling).

Neither policy ever leaves the whole machine idle while a kernel is ready, and every ``c_k <= C``,
so the makespan is at most the serial sum of the durations; it is at least the critical path (the
infinite-resource lower bound) and, because a kernel on ``c`` cores has only ``c / C`` of the
machine, at least ``sum(c_k * d_k) / C``.

Examples
--------
Two independent 1 s kernels on a 2-core machine: each needing both cores, they run one after the
other; each needing one core, side by side.

>>> from dfx.compile.program import Kernel, KernelKind, Program
>>> def prog(cores):
...     ks = tuple(Kernel(n, (n,), KernelKind.GEMM, 0, 0, cores=cores) for n in ("a", "b"))
...     return Program("g", "p", "eager", "dynamic", ks)
>>> list_schedule(prog(2), {"a": 1.0, "b": 1.0}, 2, Policy.DYNAMIC).makespan_s
2.0
>>> list_schedule(prog(1), {"a": 1.0, "b": 1.0}, 2, Policy.DYNAMIC).makespan_s
1.0
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from dfx.compile.passes import Pass, PassResult
from dfx.compile.program import Program
from dfx.costs.record import CostedGraph
from dfx.hardware import Commitment, HardwareProfile
from dfx.schedule.rank import priority_order as rank_order
from dfx.schedule.rank import upward_rank as upward_rank_of

__all__ = [
    "KernelSchedule",
    "Policy",
    "Slot",
    "list_schedule",
    "policy_for",
    "priority_order",
    "schedule_pass",
    "upward_rank",
]


class Policy(str, Enum):
    """Who decides when a kernel runs."""

    STATIC = "static"  # the compiler: a fixed issue order
    DYNAMIC = "dynamic"  # the run time: a ready list

    def __str__(self) -> str:
        return self.value


def policy_for(commitment: str | Commitment) -> Policy:
    """``static`` commitment -> :attr:`Policy.STATIC`; ``dynamic`` and ``mixed`` (firing at run time) -> DYNAMIC."""
    return Policy.STATIC if Commitment(commitment) is Commitment.STATIC else Policy.DYNAMIC


@dataclass(frozen=True)
class Slot:
    """One kernel in a schedule: when it runs, on how many cores of which chip."""

    kernel: str
    start_s: float
    end_s: float
    cores: int
    chip: int = 0

    @classmethod
    def of(cls, kernel: str, start_s: float, end_s: float, cores: int, chip: int) -> Slot:
        """``Slot(kernel, start_s, end_s, cores, chip)`` without the frozen ``__init__``'s
        ``object.__setattr__`` per field (a schedule makes one per kernel; the class validates nothing)."""
        new = object.__new__(cls)
        new.__dict__.update(kernel=kernel, start_s=start_s, end_s=end_s, cores=cores, chip=chip)
        return new

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "cores": self.cores,
            "chip": self.chip,
        }


@dataclass(frozen=True)
class KernelSchedule:
    """A list schedule of a program: one :class:`Slot` per kernel, in program order."""

    policy: Policy
    cores_per_chip: int
    slots: tuple[Slot, ...]

    @property
    def makespan_s(self) -> float:
        """When the last kernel ends (0 for an empty program)."""
        return max((s.end_s for s in self.slots), default=0.0)

    def core_seconds(self) -> float:
        """Sum of cores x duration over the kernels: the area the schedule fills."""
        return sum(s.cores * (s.end_s - s.start_s) for s in self.slots)


def _deps(program: Program) -> list[list[int]]:
    index = {k.name: i for i, k in enumerate(program.kernels)}
    return [[index[d] for d in dict.fromkeys(k.deps) if d in index] for k in program.kernels]


def upward_rank(program: Program, durations_s: Mapping[str, float]) -> list[float]:
    """Each kernel's upward rank (seconds), in program order (see the module docstring).

    Raises
    ------
    KeyError
        If a kernel has no duration in ``durations_s``.
    """
    return upward_rank_of([float(durations_s[k.name]) for k in program.kernels], _deps(program))


def priority_order(program: Program, durations_s: Mapping[str, float]) -> list[int]:
    """Kernel indices by descending upward rank, ties to program order: a topological order."""
    return rank_order(upward_rank(program, durations_s))


def _static(
    program: Program,
    d: list[float],
    deps: list[list[int]],
    cores: list[int],
    chips: list[int],
    total: int,
    order: list[int],
) -> list[tuple[float, float]]:
    """In-order issue: each kernel at the earliest time >= the previous start with its inputs and cores."""
    times: list[tuple[float, float]] = [(0.0, 0.0)] * len(d)
    running: dict[int, list[tuple[float, int]]] = {}  # chip -> heap of (end, cores) of started kernels
    free: dict[int, int] = {}
    last_start = 0.0
    for i in order:
        chip = chips[i]
        heap, avail = running.setdefault(chip, []), free.setdefault(chip, total)
        t = last_start
        for p in deps[i]:
            end = times[p][1]
            if end > t:
                t = end
        while heap and heap[0][0] <= t:  # kernels finished by t give their cores back
            avail += heapq.heappop(heap)[1]
        while avail < cores[i]:  # wait for the earliest ends until enough cores are free
            end, c = heapq.heappop(heap)
            t, avail = max(t, end), avail + c
        times[i] = (t, t + d[i])
        heapq.heappush(heap, (t + d[i], cores[i]))
        free[chip] = avail - cores[i]
        last_start = t
    return times


def _dynamic(
    program: Program,
    d: list[float],
    deps: list[list[int]],
    cores: list[int],
    chips: list[int],
    total: int,
    order: list[int],
) -> list[tuple[float, float]]:
    """A ready list in rank order; at every completion each ready kernel that fits starts."""
    n = len(d)
    key = [0] * n  # kernel index -> its position in order
    for pos, i in enumerate(order):
        key[i] = pos
    waiting = [len(p) for p in deps]
    succs: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(deps):
        for p in ps:
            succs[p].append(i)
    ready = [key[i] for i in range(n) if waiting[i] == 0]
    heapq.heapify(ready)
    events: list[tuple[float, int]] = []
    free: dict[int, int] = {}
    times: list[tuple[float, float]] = [(0.0, 0.0)] * n
    t = 0.0
    while ready or events:
        held = []
        while ready:
            i = order[heapq.heappop(ready)]
            avail = free.setdefault(chips[i], total)
            if cores[i] <= avail:
                free[chips[i]] = avail - cores[i]
                times[i] = (t, t + d[i])
                heapq.heappush(events, (t + d[i], i))
            else:
                held.append(key[i])
        for h in held:
            heapq.heappush(ready, h)
        if not events:
            break
        t = events[0][0]
        while events and events[0][0] <= t:
            _, i = heapq.heappop(events)
            free[chips[i]] += cores[i]
            for s in succs[i]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    heapq.heappush(ready, key[s])
    return times


def list_schedule(
    program: Program, durations_s: Mapping[str, float], cores_per_chip: int, policy: Policy | str
) -> KernelSchedule:
    """Schedule ``program``'s kernels on chips of ``cores_per_chip`` cores under ``policy``.

    Parameters
    ----------
    program : Program
        Kernels in topological order, each with ``cores`` (0 <= cores <= ``cores_per_chip``) and ``chip``.
    durations_s : mapping
        Kernel name -> its duration on its cores, seconds (>= 0).
    cores_per_chip : int
        ``C``, the cores of one chip.
    policy : Policy or str
        ``static`` (fixed issue order) or ``dynamic`` (ready list); see the module docstring.

    Returns
    -------
    KernelSchedule

    Raises
    ------
    ValueError
        If a kernel needs more cores than a chip has, a duration is negative or missing, or a kernel
        reads one that comes after it (the kernels are not in topological order).
    """
    policy = policy if policy.__class__ is Policy else Policy(policy)
    kernels = program.kernels
    index = {k.name: i for i, k in enumerate(kernels)}
    d = [float(durations_s[k.name]) for k in kernels]
    cores: list[int] = []
    chips: list[int] = []
    deps: list[list[int]] = []  # _deps(program)
    for k, dk in zip(kernels, d):
        if not dk >= 0:
            raise ValueError(f"kernel {k.name!r} has duration {dk!r}; durations must be >= 0 seconds")
        c = k.cores
        if not 0 <= c <= cores_per_chip:
            raise ValueError(f"kernel {k.name!r} needs {c} cores; a chip has {cores_per_chip}")
        cores.append(c)
        chips.append(k.chip)
        ps = [index[n] for n in (dict.fromkeys(k.deps) if len(k.deps) > 1 else k.deps) if n in index]
        deps.append(ps)
    for i, ps in enumerate(deps):  # a kernel reading a later one's output: a cycle, never a silent 0
        if ps and max(ps) >= i:
            late = [kernels[p].name for p in ps if p >= i]
            raise ValueError(
                f"kernel {kernels[i].name!r} reads {', '.join(map(repr, late))}, which come(s) after it: "
                "the program's kernels are not in topological order (a fusion formed a cycle)"
            )
    order = rank_order(upward_rank_of(d, deps))  # priority_order, the durations and deps read once
    run = _static if policy is Policy.STATIC else _dynamic
    times = run(program, d, deps, cores, chips, cores_per_chip, order)
    new_slot = object.__new__
    slots = []
    for k, c, chip, (s, e) in zip(kernels, cores, chips, times):  # Slot.of, inlined
        slot = new_slot(Slot)
        slot.__dict__.update(kernel=k.name, start_s=s, end_s=e, cores=c, chip=chip)
        slots.append(slot)
    return KernelSchedule(policy, cores_per_chip, tuple(slots))


def _schedule(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
    policy = policy_for(profile.scheduling.commitment)
    why = (
        "the compiler fixes the issue order (static commitment)"
        if policy is Policy.STATIC
        else f"the run time picks ready kernels ({profile.scheduling.commitment.value} commitment)"
    )
    new = program.with_(meta={**program.meta, "schedule_policy": policy.value})
    return PassResult(new, program.meta.get("schedule_policy") != policy.value, (f"{policy.value}: {why}",))


schedule_pass = Pass("schedule", _schedule)
