"""The compile stage: from a costed graph to a machine's program (fusion, tiling, placement, schedule).

``compile_program(costed, profile, passes)`` lowers the graph to the eager program (one kernel per
node) and runs a target's passes over it (see ``docs/compile.md``). The passes here are mechanisms
that know no machine family: each family's pipeline is its target's (:meth:`dfx.targets.Target.passes`;
``dfx.targets.compile_for(costed, profile)``). Torch-free: a saved graph compiles without torch installed.
"""

from __future__ import annotations

from dfx.compile.lower import lower_eager
from dfx.compile.passes import Pass, PassResult, run_passes
from dfx.compile.placement import core_count, placement_pass_for
from dfx.compile.program import SCHEMA, Kernel, KernelKind, Program, PassRecord
from dfx.compile.schedule import KernelSchedule, Policy, list_schedule, policy_for, schedule_pass
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = [
    "SCHEMA",
    "Kernel",
    "KernelKind",
    "KernelSchedule",
    "Pass",
    "PassResult",
    "Policy",
    "Program",
    "PassRecord",
    "clear_compile_caches",
    "compile_program",
    "core_count",
    "list_schedule",
    "lower_eager",
    "placement_pass_for",
    "policy_for",
    "run_passes",
    "schedule_pass",
]


def compile_program(costed: CostedGraph, profile: HardwareProfile, passes: tuple[Pass, ...]) -> Program:
    """Compile ``costed`` for ``profile``: lower to the eager program, then run ``passes``.

    ``passes``: a target's pipeline (:meth:`dfx.targets.Target.passes`: fusion, tiling, placement,
    schedule); ``()`` gives the eager program, unplaced.
    """
    program = lower_eager(costed, profile)
    return run_passes(program, costed, profile, passes)


def clear_compile_caches() -> None:
    """Forget everything the compile stage keeps between calls in this process: eager kernels and fusion
    runs, scratchpad tile choices, resident-weight bytes (benchmarks that time points as if seen the first
    time; :func:`dfx.targets.clear_caches` clears the targets' pipelines too)."""
    from dfx.compile.fusion import clear_fusion_cache
    from dfx.compile.residency import clear_residency
    from dfx.compile.tiling import clear_tile_choices

    clear_fusion_cache()
    clear_tile_choices()
    clear_residency()
