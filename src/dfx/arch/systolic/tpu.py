"""The systolic-array architecture model for TPU profiles: matmul and conv nodes timed on the MXUs.

For each node with GEMMs (see :mod:`dfx.arch.systolic.nodes`) on a profile whose ``compute``
section gives units and an array size (``kind: tpu``)::

    systolic_time = sum over its GEMMs of chip_gemm(...).time_s       (weight-stationary, pipelined)
    time          = max(systolic_time, roofline memory_time) + op_overhead
    bound         = compute if systolic_time >= memory_time else memory

``compute_time_s`` becomes the systolic time, so padding to the array size (ragged folds) shows as
lost utilization; the roofline's FLOPs, bytes and per-level traffic are kept. Elementwise epilogues
(bias, activation) are taken as fused into the matmul. Other nodes keep their roofline timing.
Export: ``hardware.<id>.systolic`` (documented in ``docs/systolic.md``).
"""

from __future__ import annotations

from typing import Any, Callable

from dfx.arch.systolic.chip import ChipGemm, MxuSpec, chip_gemm, mxu_spec
from dfx.arch.systolic.dataflow import Dataflow
from dfx.arch.systolic.nodes import Gemm, node_gemms
from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile
from dfx.roofline.bound import Bound
from dfx.roofline.latency import NodeTiming

__all__ = ["SystolicArchModel", "TPU_SYSTOLIC", "gemm_time_s", "node_plan"]

_DATAFLOW = Dataflow.WS  # the TPU MXU is weight-stationary (Jouppi et al., ISCA 2017)


def node_plan(costed: CostedNode, spec: MxuSpec) -> tuple[ChipGemm, ...]:
    """The node's GEMMs on the chip (empty when it has none)."""
    return tuple(_planned(g, spec) for g in node_gemms(costed.node.aten_calls))


def gemm_time_s(g: Gemm, spec: MxuSpec) -> float:
    """Seconds of ``g`` (``batch`` x ``[m, k] @ [k, n]``) on the chip's MXUs, as the node timer charges it
    (weight-stationary, pipelined; :func:`dfx.arch.systolic.chip.chip_gemm`): what a tensor-parallel
    split re-plans a node's sharded GEMMs with (:mod:`dfx.parallel.shard`)."""
    return _planned(g, spec).time_s


def _planned(g: Gemm, spec: MxuSpec) -> ChipGemm:
    key = (g.m, g.k, g.n, g.batch, spec)
    plan = _CHIP_GEMMS.get(key)
    if plan is None:
        if len(_CHIP_GEMMS) >= _CHIP_GEMMS_MAX:
            _CHIP_GEMMS.clear()
        plan = _CHIP_GEMMS[key] = chip_gemm(g.m, g.k, g.n, spec, batch=g.batch, dataflow=_DATAFLOW, pipelined=True)
    return plan


# (m, k, n, batch, spec) -> chip_gemm(...): a pure function of these (the spec is a frozen value) and a
# frozen result, so shared; a model's graphs at other sizes repeat its GEMMs (M = batch x seq recurs)
_CHIP_GEMMS: dict[tuple[int, int, int, int, MxuSpec], ChipGemm] = {}
_CHIP_GEMMS_MAX = 4096


def clear_chip_gemms() -> None:
    """Forget every GEMM planned on the MXUs in this process (benchmarks that plan afresh)."""
    _CHIP_GEMMS.clear()


# The node timer and the export fields of one evaluation both plan every node of the same graph on
# the same MXUs: the plans are made once. Kept per graph while the graph lives (dfx.compile.dataflow's
# weak_memo: freed with it), then per spec (a frozen value: everything a plan reads of the profile).
_PLANS: dict[int, tuple[Any, dict[MxuSpec, dict[str, tuple[ChipGemm, ...]]]]] = {}


def _graph_plans(costed: CostedGraph, spec: MxuSpec) -> dict[str, tuple[ChipGemm, ...]]:
    """Node name -> :func:`node_plan` of every node of ``costed`` on ``spec`` (made once per graph and spec)."""
    from dfx.memo import weak_memo

    per_spec = weak_memo(_PLANS, costed, lambda _: {})
    plans = per_spec.get(spec)
    if plans is None:
        plans = per_spec[spec] = {n.name: node_plan(n, spec) for n in costed.nodes}
    return plans


def _summary(plan: tuple[ChipGemm, ...], spec: MxuSpec) -> dict[str, Any]:
    cycles = sum(g.cycles for g in plan)
    macs = sum(g.macs for g in plan)
    return {
        "cycles": cycles,
        "time_s": sum(g.time_s for g in plan),
        "utilization": macs / (spec.units * spec.rows * spec.cols * cycles),
        "mapping_efficiency": min(g.mapping_efficiency for g in plan),
        "folds": sum(g.folds * g.batch for g in plan),
        "gemms": [g.to_dict() for g in plan],
    }


class SystolicArchModel:
    """:class:`dfx.arch.ArchModel` for profiles with systolic matrix units (TPU MXUs)."""

    name = "systolic"

    def applies_to(self, profile: HardwareProfile) -> bool:
        return mxu_spec(profile) is not None  # the TPU target (dfx.targets.systolic) asks

    def node_timer(
        self, costed: CostedGraph, profile: HardwareProfile
    ) -> Callable[[CostedNode, NodeTiming], NodeTiming]:
        spec = mxu_spec(profile)
        plans = _graph_plans(costed, spec) if spec is not None else {}

        def plan_of(node: CostedNode) -> tuple[ChipGemm, ...]:
            return plans[node.name] if node.name in plans else node_plan(node, spec) if spec is not None else ()

        def compute_s(node: CostedNode) -> float | None:
            """``timer``'s compute seconds of a node: its GEMMs on the MXUs; ``None``: the roofline's stands
            (what a kernel's time reads of it: :func:`dfx.roofline.program.evaluate_program_from_figures`)."""
            plan = plan_of(node)
            return sum(g.time_s for g in plan) if plan else None

        def timer(node: CostedNode, timing: NodeTiming) -> NodeTiming:
            plan = plan_of(node)
            if not plan:
                return timing
            systolic = sum(g.time_s for g in plan)
            bound = Bound.COMPUTE if systolic >= timing.memory_time_s else Bound.MEMORY
            return timing.with_(
                compute_time_s=systolic,
                bound=bound,
                time_s=max(systolic, timing.memory_time_s) + timing.overhead_s,
            )

        timer.compute_s = compute_s  # type: ignore[attr-defined]
        return timer

    def extras(self, costed: CostedGraph, profile: HardwareProfile) -> dict[str, Any]:
        spec = mxu_spec(profile)
        if spec is None:
            return {}
        nodes = {}
        plans = _graph_plans(costed, spec)
        for node in costed.nodes:
            plan = plans[node.name]
            if plan:
                nodes[node.name] = _summary(plan, spec)
        return {"systolic": {"dataflow": _DATAFLOW.value, "pipelined": True, **spec.to_dict(), "nodes": nodes}}


TPU_SYSTOLIC = SystolicArchModel()
