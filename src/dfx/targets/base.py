"""What one machine family is to dfx: its compiler's pipeline, its timers, its residency, its extras.

A :class:`Target` is chosen once per profile (:func:`dfx.targets.target_for`, from the profile's
``kind``) and owns everything that makes that family behave as it does. The stages below it are
mechanisms that know no machine family: fusion takes the target's rules, placement its
:class:`~dfx.compile.placement.TileGrain`, tiling whether it is SIMT, residency its
:meth:`Target.weights_resident`, the roofline its node timer and program. ``tests/test_architecture.py``
enforces that no module outside ``dfx/targets`` tests a profile's kind or vendor.

The stages run in one direction (``docs/architecture.md``): capture -> costs -> compile (the target's
passes) -> evaluate (the roofline, given the compiled program) -> parallel -> report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from dfx.compile import Pass, Program, compile_program, lower_eager, run_passes
from dfx.compile.fusion import FusionRules, fusion_pass
from dfx.compile.placement import TileGrain, placement_pass_for
from dfx.compile.residency import residency_pass_for
from dfx.compile.schedule import schedule_pass
from dfx.compile.tiling import CoreMemory, core_memory, tiling_pass_for
from dfx.costs.record import CostedGraph
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile, Kind

if TYPE_CHECKING:
    from dfx.arch import ArchModel
    from dfx.roofline import HardwareResult

__all__ = ["UNFUSED_SKIPS", "Target"]

# The passes the eager program skips (:meth:`Target.eager_program`): it keeps every tensor and weight off chip.
UNFUSED_SKIPS = ("fusion", "residency")

# id(profile) -> (the profile, its pipeline). A pipeline reads only the profile (its on-chip level, whether
# its architecture model applies), which is frozen, so it is built once per profile object: a sweep
# compiles each profile's graphs hundreds of times. The entry holds the profile, so its id is not recycled
# for another while the entry lives.
_PIPELINES: dict[int, tuple[HardwareProfile, tuple[Pass, ...]]] = {}
_PIPELINES_MAX = 256  # profiles; beyond, the cache starts again (a long-lived process loading many)


def clear_pipelines() -> None:
    """Forget every profile's pipeline built in this process (benchmarks that evaluate afresh)."""
    _PIPELINES.clear()


@dataclass(frozen=True)
class Target:
    """One machine family's compiler and machine model (subclassed per family in ``dfx/targets/``).

    Attributes
    ----------
    kind : Kind
        The profiles' ``kind`` this target serves.
    compiler : str
        The compiler whose rules dfx follows: ``inductor`` (GPUs, CPUs), ``xla`` (TPUs) or ``dataflow``
        (Groq, Cerebras, Spyre); the compiled program's ``target``.
    static_shapes : bool
        Shapes are fixed at compile time (XLA, the dataflow compilers): an MoE layer gets a capacity per
        expert (:mod:`dfx.compile.moe`), a server batches statically.
    grain : TileGrain or None
        Kernels take ``min(tiles, cores)`` cores, their tiles estimated by this grain (GPU thread
        blocks, CPU threads); ``None``: every kernel on every core (:mod:`dfx.compile.placement`).
    simt : bool
        Kernels are SIMT programs (Triton on a GPU): tiled by :mod:`dfx.arch.gpu.plan`, elementwise in
        ``XBLOCK`` blocks, the on-chip level the one closest to compute (:mod:`dfx.compile.tiling`).
    eager_contrast : bool
        ``dfx analyze`` reports the eager (unfused) latency beside the compiled one: the machine is also
        run eagerly (PyTorch on a GPU).
    runs_inductor : bool
        ``dfx compile`` runs ``torch.compile`` for this family's real artefacts by default.
    measured_on : str or None
        The torch device ``dfx validate`` measures this family on (``cuda``, ``cpu``); ``None``: none.
    """

    kind: Kind
    compiler: str
    static_shapes: bool
    grain: TileGrain | None = None
    simt: bool = False
    eager_contrast: bool = False
    runs_inductor: bool = False
    measured_on: str | None = None

    # --- the compiler ----------------------------------------------------------------------------
    def fusion_rules(self, profile: HardwareProfile) -> FusionRules:
        """The fusion rules of this family's compiler for ``profile``."""
        raise NotImplementedError

    def arch_model(self, profile: HardwareProfile) -> ArchModel | None:
        """The architecture model that re-times ``profile``'s nodes (:mod:`dfx.arch`), or ``None``
        (the roofline alone). A model needs figures some profiles of the family may lack."""
        return None

    def keeps_weights_on_chip(self, profile: HardwareProfile) -> bool:
        """Whether this family may keep a model's weights on chip (a residency pass in its pipeline)."""
        return False

    def weights_resident(self, costed: CostedGraph, profile: HardwareProfile) -> bool:
        """Whether ``costed``'s weights stay on chip between runs on ``profile`` (the steady state)."""
        return False

    def toolchain(self, profile: HardwareProfile) -> tuple[Any, ...]:
        r"""The compiler stages below dfx's compile stage on ``profile`` (``dfx compile`` lists them), as
        :class:`dfx.compile.toolchain.ToolchainStage`\ s; ``()`` where dfx does not model them."""
        return ()

    def late_fusion_passes(self, profile: HardwareProfile) -> tuple[Pass, ...]:
        """Passes this family's compiler runs after fusion (and residency), before tiling: Spyre's
        decompositions (:mod:`dfx.targets.spyre`); none by default. The eager program runs them too."""
        return ()

    def core_memory(self, profile: HardwareProfile) -> CoreMemory:
        """One core's on-chip memory as this family's tiling sees it (:func:`dfx.compile.tiling.core_memory`)."""
        return core_memory(profile, self.simt)

    def passes(self, profile: HardwareProfile) -> tuple[Pass, ...]:
        """The compile pipeline for ``profile``: fusion, (residency), tiling, placement, schedule.

        >>> from dfx.hardware import load_profile
        >>> from dfx.targets import target_for
        >>> h100, groq = load_profile("h100"), load_profile("groq-lpu")
        >>> [p.name for p in target_for(h100).passes(h100)]
        ['fusion', 'tiling', 'placement', 'schedule']
        >>> [p.name for p in target_for(groq).passes(groq)]
        ['fusion', 'residency', 'tiling', 'placement', 'schedule']
        """
        hit = _PIPELINES.get(id(profile))
        if hit is not None and hit[0] is profile:
            return hit[1]
        passes: tuple[Pass, ...] = (Pass("fusion", fusion_pass(self.fusion_rules(profile))),)
        if self.keeps_weights_on_chip(profile):
            passes += (residency_pass_for(self.weights_resident),)
        passes += self.late_fusion_passes(profile)
        passes += (tiling_pass_for(self.simt), placement_pass_for(self.grain), schedule_pass)
        if len(_PIPELINES) >= _PIPELINES_MAX:
            _PIPELINES.clear()
        _PIPELINES[id(profile)] = (profile, passes)
        return passes

    def eager_passes(self, profile: HardwareProfile) -> tuple[Pass, ...]:
        """:meth:`passes` without fusion or residency (the eager program's)."""
        return tuple(p for p in self.passes(profile) if p.name not in UNFUSED_SKIPS)

    def compile(self, costed: CostedGraph, profile: HardwareProfile) -> Program:
        """``costed`` compiled for ``profile``: the eager program, then :meth:`passes`."""
        return compile_program(costed, profile, self.passes(profile))

    def eager_program(self, costed: CostedGraph, profile: HardwareProfile) -> Program:
        """The eager program on ``profile``'s kernel model: the pipeline without fusion or residency.

        One kernel per operator, every tensor and every weight through off-chip memory (design.md's
        degenerate program), then the same tiling, placement and schedule passes as :meth:`compile`,
        so eager and compiled are timed by one kernel model and differ only by what fusion (and, on
        chips that keep weights on chip, residency) changed.
        """
        return compile_program(costed, profile, self.eager_passes(profile))

    def fused(self, costed: CostedGraph, profile: HardwareProfile) -> tuple[Program, Any] | None:
        """``(the fused program, a function running the later passes on it)``, or ``None`` where the
        pipeline does not start with fusion: an operator-timed family's evaluation prices the fused
        program's kernels before the later passes run (:func:`dfx.roofline.evaluate`'s ``finish``)."""
        passes = self.passes(profile)
        if not passes or passes[0].name != "fusion":
            return None
        fused = run_passes(lower_eager(costed, profile), costed, profile, passes[:1])

        def finish(program: Program) -> Program:
            return run_passes(program, costed, profile, passes[1:])  # compile's, after its fusion

        return fused, finish

    # --- the machine model -----------------------------------------------------------------------
    def check_execution_model(self, profile: HardwareProfile, execution_model: Any) -> None:
        """Refuse an execution model ``profile``'s machine cannot run (eager where the architecture model
        times every operator whole, on chip, in the compiler's schedule).

        Raises
        ------
        DfxError
            ``eager`` on such a profile, in one line naming the value and the fix.
        """
        from dfx.roofline import ExecutionModel, parse_execution_model

        if parse_execution_model(execution_model) is not ExecutionModel.EAGER:
            return
        arch = self.arch_model(profile)
        if arch is not None and getattr(arch, "times_operators", False):
            raise DfxError(
                f"execution model 'eager' on {profile.id}: its architecture model ({arch.name}) times every "
                "operator whole, on chip, in the compiler's schedule (the machine has no eager runtime), so eager "
                f"would repeat the compiled latency; use execution model 'compiled' (the default) on {profile.id}, "
                "or compare eager with compiled on a GPU, TPU or Spyre profile"
            )

    def evaluate(
        self,
        costed: CostedGraph,
        profile: HardwareProfile,
        *,
        execution_model: Any = None,
        runtime: str | None = None,
        eager: bool = True,
        per_operator: bool = False,
        machine_model: Callable[[bool], dict[str, Any]] | None = None,
    ) -> HardwareResult:
        """``costed`` on one chip of ``profile``: compiled (or eager) by this target, then timed.

        ``execution_model``: ``compiled`` (the default of :func:`dfx.analyze`), ``eager`` or
        ``scratchpad``; ``runtime``: a profile's runtime (achieved fractions, fixed costs per kernel);
        ``eager``: add the eager latency beside a compiled one where :attr:`eager_contrast`;
        ``per_operator``: node-level timings (validation), no refusal of eager; ``machine_model``: where
        the profile carries its own measured machine model (``dfx calibrate --out``) and this family has
        no architecture model, ``machine_model(eager)`` gives its node and kernel timers
        (:func:`dfx.analysis.evaluate_one_chip` passes the calibrated one).

        Raises
        ------
        DfxError
            An execution model the machine cannot run (:meth:`check_execution_model`).
        """
        from dfx.roofline import ExecutionModel, evaluate, parse_execution_model

        model = parse_execution_model(execution_model) or ExecutionModel.COMPILED
        if not per_operator:
            self.check_execution_model(profile, model)
        arch = self.arch_model(profile)
        timer: dict[str, Any] = (
            {}
            if arch is None
            else {
                "node_timer": arch.node_timer(costed, profile),
                "arch_model": arch.name,
                "operator_times": getattr(arch, "times_operators", False),
            }
        )
        operator_times = arch is not None and getattr(arch, "times_operators", False)
        calibrated = arch is None and machine_model is not None
        if calibrated:
            timer = machine_model(model is ExecutionModel.EAGER)
        extras = {} if arch is None else dict(arch.extras(costed, profile))
        if model is ExecutionModel.COMPILED and self.weights_resident(costed, profile):
            extras["weight_load_s"] = weight_load_s(costed, profile)  # once, before the steady state quoted
        per_op = per_operator or calibrated  # a runtime times the kernel model too

        def unfused() -> Program | None:
            return None if per_op else self.eager_program(costed, profile)

        def compiled() -> dict[str, Any]:
            if operator_times and not per_op:
                fused = self.fused(costed, profile)
                if fused is not None:
                    return {"program": fused[0], "finish": fused[1]}
            return {"program": self.compile(costed, profile)}

        if eager and model is ExecutionModel.COMPILED and self.eager_contrast:
            extras["eager"] = _eager_summary(
                evaluate(
                    costed, profile, execution_model=ExecutionModel.EAGER, program=unfused(), runtime=runtime, **timer
                )
            )
        if model is ExecutionModel.EAGER:
            program: dict[str, Any] = {"program": unfused()}
        elif model is ExecutionModel.COMPILED:
            program = compiled()
        else:
            program = {}
        return evaluate(costed, profile, execution_model=model, extras=extras, runtime=runtime, **program, **timer)


def weight_load_s(costed: CostedGraph, profile: HardwareProfile) -> float:
    """Seconds to load the unique weights once over the profile's off-chip level (Groq: its C2C links,
    Cerebras: MemoryX); 0 when the profile has no off-chip level with a bandwidth."""
    off = profile.off_chip_level()
    if off is None or not off.bandwidth_bytes_per_s:
        return 0.0
    return costed.unique_parameter_bytes() / off.bandwidth_bytes_per_s


def _eager_summary(result: Any) -> dict[str, Any]:
    """The eager numbers a GPU's compiled result is shown beside (``hardware.<id>.eager``): the eager
    program (one kernel per operator) on the same kernel model as the compiled one (under a runtime,
    the per-operator model)."""
    off = result.profile.off_chip_level()
    if result.program is not None:
        kernels, offchip = len(result.program.program.kernels), result.program.program.offchip_bytes
    else:
        kernels = sum(1 for t in result.nodes if t.flops or t.bytes)
        offchip = sum(t.bytes_by_level.get(off.name, 0) for t in result.nodes) if off else None
    return {
        "execution_model": result.execution_model.value,
        "serial_time_s": result.serial_time_s,
        "critical_path_s": result.critical_path.time_s,
        "makespan_s": result.latency_s,
        "kernels": kernels,
        "offchip_bytes": offchip if off else None,
    }
