"""One target per machine family: what makes a GPU, a TPU, Groq's TSP, the Cerebras wafer, Spyre or a
CPU behave as it does, in one place each.

:func:`target_for` picks a profile's :class:`Target` from its ``kind`` (``gpu``, ``tpu``, ``tsp``,
``wafer``, ``spyre``, ``dataflow``, ``cpu``); compile, evaluate, analysis and parallel ask it and never test a
kind or a vendor themselves (``tests/test_architecture.py``). Adding a machine family is one module
here and one entry in :data:`TARGETS` (``docs/architecture.md``, "Adding a machine family").

>>> from dfx.hardware import load_profile
>>> [(p, target_for(load_profile(p)).compiler) for p in ("h100", "tpu-v4", "groq", "cerebras-wse-3", "spyre")]
[('h100', 'inductor'), ('tpu-v4', 'xla'), ('groq', 'dataflow'), ('cerebras-wse-3', 'dataflow'), ('spyre', 'dataflow')]
"""

from __future__ import annotations

from types import MappingProxyType

from dfx.compile import Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile, Kind
from dfx.targets.base import UNFUSED_SKIPS, Target, clear_pipelines, weight_load_s
from dfx.targets.cpu import CPU
from dfx.targets.dataflow import DATAFLOW
from dfx.targets.simt import SIMT
from dfx.targets.spyre import SPYRE
from dfx.targets.systolic import SYSTOLIC
from dfx.targets.tsp import TSP
from dfx.targets.wafer import WAFER

__all__ = [
    "TARGETS",
    "UNFUSED_SKIPS",
    "Target",
    "clear_caches",
    "compile_for",
    "eager_program",
    "target_for",
    "weight_load_s",
]

# Every family's target, by the profile kind it serves.
TARGETS: MappingProxyType[Kind, Target] = MappingProxyType(
    {t.kind: t for t in (SIMT, CPU, SYSTOLIC, TSP, WAFER, SPYRE, DATAFLOW)}
)


def target_for(profile: HardwareProfile) -> Target:
    """The target of ``profile``'s machine family (its ``kind``)."""
    return TARGETS[profile.kind]


def compile_for(costed: CostedGraph, profile: HardwareProfile) -> Program:
    """``costed`` compiled for ``profile`` by its target (:meth:`Target.compile`)."""
    return target_for(profile).compile(costed, profile)


def eager_program(costed: CostedGraph, profile: HardwareProfile) -> Program:
    """The eager (unfused) program of ``costed`` on ``profile`` (:meth:`Target.eager_program`)."""
    return target_for(profile).eager_program(costed, profile)


def clear_caches() -> None:
    """Forget every pipeline and everything the compile stage keeps between calls in this process
    (benchmarks that time points as if seen the first time)."""
    from dfx.compile import clear_compile_caches

    clear_pipelines()
    clear_compile_caches()
