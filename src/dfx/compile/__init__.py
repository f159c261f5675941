"""The compile stage: from a costed graph to a machine's program (fusion, tiling, placement, schedule).

``compile_program(costed, profile)`` lowers the graph to the eager program (one kernel per node)
and runs the target's passes over it (:func:`passes_for`; see ``docs/compile.md``). Torch-free: a
saved graph compiles without torch installed.
"""

from __future__ import annotations

from dfx.compile.lower import lower_eager
from dfx.compile.passes import Pass, PassResult, run_passes
from dfx.compile.placement import core_count, placement_pass
from dfx.compile.program import SCHEMA, Kernel, KernelKind, Program, StageRecord
from dfx.compile.schedule import KernelSchedule, Policy, list_schedule, policy_for, schedule_pass
from dfx.compile.targets import LATE_PASSES, UNFUSED_SKIPS, clear_pipelines, passes_for, target_of
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = [
    "LATE_PASSES",
    "SCHEMA",
    "Kernel",
    "KernelKind",
    "KernelSchedule",
    "Pass",
    "PassResult",
    "Policy",
    "Program",
    "StageRecord",
    "clear_compile_caches",
    "compile_program",
    "core_count",
    "eager_program",
    "list_schedule",
    "lower_eager",
    "passes_for",
    "placement_pass",
    "policy_for",
    "run_passes",
    "schedule_pass",
    "target_of",
]


def compile_program(costed: CostedGraph, profile: HardwareProfile, passes: tuple[Pass, ...] | None = None) -> Program:
    """Compile ``costed`` for ``profile``: lower to the eager program, then run the target's passes.

    ``passes`` overrides the target's pipeline (:func:`passes_for`: fusion, tiling, then
    :data:`LATE_PASSES`, placement and scheduling); ``()`` gives the eager program, unplaced.
    """
    program = lower_eager(costed, profile)
    return run_passes(program, costed, profile, passes if passes is not None else passes_for(profile))


def clear_compile_caches() -> None:
    """Forget everything the compile stage keeps between calls in this process: pipelines, eager kernels
    and fusion runs, scratchpad tile choices, resident-weight bytes (benchmarks that time points as if seen the first time)."""
    from dfx.compile.fusion import clear_fusion_cache
    from dfx.compile.residency import clear_residency
    from dfx.compile.tiling import clear_tile_choices

    clear_pipelines()
    clear_fusion_cache()
    clear_tile_choices()
    clear_residency()


def eager_program(costed: CostedGraph, profile: HardwareProfile) -> Program:
    """The eager program on ``profile``'s kernel model: the target's pipeline without fusion or residency.

    One kernel per operator, every tensor and every weight through off-chip memory (design.md's
    degenerate program), then the same tiling, placement and schedule passes as
    :func:`compile_program`, so eager and compiled are timed by one kernel model and differ only by
    what fusion (and, on chips that keep weights on chip, residency) changed.
    """
    return compile_program(costed, profile, passes=tuple(p for p in passes_for(profile) if p.name not in UNFUSED_SKIPS))
