"""Each profile's compiler pipeline: which fusion rules, then tiling (placement and scheduling follow).

``passes_for(profile)`` is what :func:`dfx.compile.compile_program` runs by default. The target is
chosen by the profile's ``kind``: GPUs and CPUs compile with Inductor (``torch.compile``'s default
backend, Triton on GPUs and C++ on CPUs), TPUs with XLA, dataflow chips with their own
graph compilers, which place operators so they stream into each other on chip.
"""

from __future__ import annotations

from dfx.compile.decompose import decompose_pass, decompositions_for
from dfx.compile.fusion import FusionRules, fusion_pass
from dfx.compile.passes import Pass
from dfx.compile.placement import placement_pass
from dfx.compile.residency import residency_pass
from dfx.compile.rules import DataflowRules, InductorRules, XlaRules
from dfx.compile.schedule import schedule_pass
from dfx.compile.tiling import tiling_pass
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.hardware.schema import Kind

__all__ = ["LATE_PASSES", "TARGETS", "UNFUSED_SKIPS", "clear_pipelines", "fusion_rules_for", "passes_for", "target_of"]

# The passes every target ends with, after its fusion and tiling: kernels onto cores, then the policy.
LATE_PASSES: tuple[Pass, ...] = (placement_pass, schedule_pass)

# The passes the eager program skips (:func:`dfx.compile.eager_program`): it keeps every tensor and weight off chip.
UNFUSED_SKIPS = ("fusion", "residency")

TARGETS = {Kind.GPU: "inductor", Kind.CPU: "inductor", Kind.TPU: "xla", Kind.DATAFLOW: "dataflow"}


def target_of(profile: HardwareProfile) -> str:
    """The compiler whose rules dfx follows for ``profile``: ``inductor``, ``xla`` or ``dataflow``."""
    return TARGETS[profile.kind]


def fusion_rules_for(profile: HardwareProfile) -> FusionRules:
    """The fusion rules of ``profile``'s compiler.

    Raises
    ------
    DfxError
        A dataflow profile without an on-chip level of known capacity (nothing to keep tensors in).
    """
    target = target_of(profile)
    if target == "inductor":
        return InductorRules()
    if target == "xla":
        return XlaRules()
    level = profile.on_chip_level()
    if level is None or level.capacity_bytes is None:
        raise DfxError(f"profile {profile.id!r}: a dataflow chip needs an on-chip memory level with capacity_bytes")
    return DataflowRules(capacity_bytes=level.capacity_bytes)


# id(profile) -> (the profile, its pipeline). A pipeline reads only the profile (its kind, its on-chip
# level, whether a spatial model applies), which is frozen, so it is built once per profile object: a
# sweep compiles each profile's graphs hundreds of times. The entry holds the profile, so its id is not
# recycled for another while the entry lives.
_PIPELINES: dict[int, tuple[HardwareProfile, tuple[Pass, ...]]] = {}
_PIPELINES_MAX = 256  # profiles; beyond, the cache starts again (a long-lived process loading many)


def clear_pipelines() -> None:
    """Forget every profile's pipeline built in this process (benchmarks that evaluate afresh)."""
    _PIPELINES.clear()


def passes_for(profile: HardwareProfile) -> tuple[Pass, ...]:
    """The compile pipeline for ``profile``: fusion, tiling, then :data:`LATE_PASSES`.

    On the chips whose architecture model can keep weights on chip (Groq, Cerebras), a residency
    pass follows fusion (:mod:`dfx.compile.residency`).

    >>> from dfx.hardware import load_profile
    >>> [p.name for p in passes_for(load_profile("h100"))]
    ['fusion', 'tiling', 'placement', 'schedule']
    >>> [p.name for p in passes_for(load_profile("groq-lpu"))]
    ['fusion', 'residency', 'tiling', 'placement', 'schedule']
    """
    hit = _PIPELINES.get(id(profile))
    if hit is not None and hit[0] is profile:
        return hit[1]
    passes = _pipeline(profile)
    if len(_PIPELINES) >= _PIPELINES_MAX:
        _PIPELINES.clear()
    _PIPELINES[id(profile)] = (profile, passes)
    return passes


def _pipeline(profile: HardwareProfile) -> tuple[Pass, ...]:
    from dfx.arch.spatial.residency import spatial_model  # arch builds on the roofline, which imports compile

    fusion = (Pass("fusion", fusion_pass(fusion_rules_for(profile))),)
    if spatial_model(profile) is not None:
        fusion += (residency_pass,)
    if decompositions_for(profile):  # TARGET: operators the compiler splits into kernels (dfx.compile.decompose)
        fusion += (decompose_pass,)
    return fusion + (Pass("tiling", tiling_pass),) + LATE_PASSES
