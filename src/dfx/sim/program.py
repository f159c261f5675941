"""The simulator's tasks from a compiled program: each kernel split into its tiles or core shares.

An analysis evaluated under the ``compiled`` execution model exports its program
(``hardware.<id>.program.kernels``: each kernel's ``cores`` and ``tiles``, its time on those cores
and the kernels it reads). The simulator runs it with **one PE per core**: ``--pes N`` is ``N`` of
the machine's cores (``--pes 32`` is a whole Spyre, ``--pes 132`` a whole H100), so with fewer PEs
than a kernel's cores its shares queue and the makespan grows accordingly.

- A kernel on ``c`` cores taking ``t`` seconds is ``c * t`` core-seconds of work, cut into
  ``n = min(max(tiles, c), 8 * pes)`` equal tasks (its tiles, or one share per core; at most eight
  per PE, so a 900,000-core wafer kernel stays a few tasks), each ``c * t / n`` seconds long. With
  ``n == c`` every task takes the kernel's own time. A collective (0 cores) is one task of ``t``.
- A zero-time *join* ``<kernel>:done`` collects the tasks of a kernel that has more than one, and
  every task waits for the joins (or single tasks) of the kernels it reads: a kernel starts once
  all of its producers' tiles are done.

This is where static and dynamic scheduling part: a compiler's static work division fixes which
PE runs which tiles (Spyre's planner), while a run-time ready list (a GPU's block scheduler) hands
the next tile to whichever PE frees first. Under run-time variation the fixed division waits for
its slowest PE at every join; the ready list rebalances (``docs/simulation.md``).
"""

from __future__ import annotations

from typing import Any, Mapping

import networkx as nx

from dfx.schema.analysis import AnalysisDoc
from dfx.sim.dag import _output_bytes, analysis_record
from dfx.sim.errors import SimulationError

__all__ = ["MAX_TASKS_PER_PE", "dag_from_program", "has_program", "task_count"]

MAX_TASKS_PER_PE = 8  # over-decomposition cap: enough tasks per PE to rebalance, few enough to stay small

_CATEGORY = {
    "gemm": "matmul",
    "attention": "matmul",
    "pointwise": "elementwise",
    "reduction": "normalization",
    "memory": "memory",
    "collective": "memory",
}


def has_program(doc: Mapping[str, Any] | AnalysisDoc, hw_id: str) -> bool:
    """Whether ``doc`` holds a compiled program for ``hw_id``."""
    hardware = analysis_record(doc).hardware
    return hw_id in hardware and hardware[hw_id].program is not None


def task_count(cores: int, tiles: int, pes: int) -> int:
    """Tasks of a kernel on ``cores`` cores with ``tiles`` tiles, for ``pes`` PEs: ``min(max(tiles, cores), 8 * pes)``.

    >>> task_count(32, 1, 4), task_count(4, 4, 4), task_count(132, 256, 4), task_count(0, 1, 4)
    (32, 4, 32, 1)
    """
    if cores <= 0:
        return 1
    return max(1, min(max(tiles, cores), MAX_TASKS_PER_PE * pes))


def dag_from_program(doc: Mapping[str, Any] | AnalysisDoc, hw_id: str, pes: int) -> nx.DiGraph:
    """The task DAG of ``doc``'s compiled program on ``hw_id``, for ``pes`` PEs (see the module docstring).

    Returns
    -------
    networkx.DiGraph
        Tasks carry ``duration_s``, ``category`` (from the kernel's kind), ``output_bytes`` (the
        kernel's output, on its join or single task) and ``kernel``; graph attributes ``hardware``,
        ``model``, ``untimed`` (empty) and ``kernels``.

    Raises
    ------
    SimulationError
        If the profile's entry has no program (an analysis run with ``--execution-model eager``).
    """
    record = analysis_record(doc)
    program = record.hardware[hw_id].program if hw_id in record.hardware else None
    if program is None:
        raise SimulationError(
            f"the analysis of {hw_id!r} has no compiled program; analyse with --execution-model compiled"
        )
    nodes = {n.name: n for n in record.nodes}
    g = nx.DiGraph(hardware=hw_id, model=record.model_name, untimed=[], kernels=len(program.kernels))
    done: dict[str, str] = {}  # kernel -> the node its readers wait for
    for k in program.kernels:
        name, cores = k.name, k.cores
        n = task_count(cores, k.tiles, pes)
        seconds = k.time_s * (cores / n if cores else 1.0)
        last = nodes[k.nodes[-1]] if k.nodes and k.nodes[-1] in nodes else None
        out = _output_bytes(last) if last else 0
        category = _CATEGORY[k.kind]  # every kernel kind of dfx.compile (KernelKind) has its category
        tasks = [name] if n == 1 else [f"{name}#{i}" for i in range(n)]
        for task in tasks:
            g.add_node(
                task,
                duration_s=seconds,
                category=category,
                kernel=name,
                output_bytes=out if n == 1 else 0,
                aliases_inputs=False,
            )
            for dep in k.deps:
                if dep in done:
                    g.add_edge(done[dep], task)
        if n == 1:
            done[name] = name
        else:
            join = f"{name}:done"
            g.add_node(join, duration_s=0.0, category=category, kernel=name, output_bytes=out, aliases_inputs=False)
            g.add_edges_from((task, join) for task in tasks)
            done[name] = join
    return g
