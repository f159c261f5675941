"""The residency pass: on chips that keep the weights in on-chip SRAM, weights are not per-run traffic.

A Groq TSP has no DRAM, and a Cerebras wafer in layer-pipelined mode keeps every layer's weights in
its region's SRAM (each target says which: :meth:`dfx.targets.Target.weights_resident`). dfx quotes those chips in
the steady state of a deployed model: an inference reads its weights from SRAM, and loading them
once is reported separately (``weight_load_s``). This pass moves each kernel's weight reads from
``offchip_bytes`` to ``onchip_bytes`` (re-computed per streaming region, so a weight read by two
kernels of one region is still counted once). Where the weights are streamed each run (Cerebras in
weight-streaming mode), it changes nothing.
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import Callable

from dfx.compile.dataflow import dataflow
from dfx.memo import weak_memo
from dfx.compile.passes import Pass, PassResult
from dfx.compile.program import Program
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["clear_residency", "residency_pass_for"]

# Whether a machine keeps this graph's weights on chip: the target's (dfx.targets.Target.weights_resident).
Resident = Callable[[CostedGraph, HardwareProfile], bool]


def _resident(
    program: Program, costed: CostedGraph, profile: HardwareProfile, weights_resident: Resident
) -> PassResult:
    if not weights_resident(costed, profile):
        return PassResult(program, modified=False, notes=("weights streamed from off-chip memory on every run",))
    flow = dataflow(costed)
    units: dict[str, list[str]] = {}  # a streaming region, or a kernel on its own: what stays on chip together
    for k in program.kernels:
        units.setdefault(k.region or k.name, []).extend(k.nodes)
    onchip = _onchip(costed, flow, tuple(tuple(members) for members in units.values()))
    kernels, flow_traffic, before, after = [], flow.traffic, 0, 0
    for k in program.kernels:
        before += k.offchip_bytes
        if k.nodes:
            traffic = on = 0
            for n in k.nodes:
                traffic += flow_traffic[n]
                on += onchip[n]
            k = k.with_(offchip_bytes=traffic - on, onchip_bytes=on)
        after += k.offchip_bytes
        kernels.append(k)
    moved = before - after  # program.offchip_bytes less the new kernels' (integer sums)
    new = program.with_(
        kernels=tuple(kernels), meta={**program.meta, "resident_weight_bytes": costed.unique_parameter_bytes()}
    )
    notes = (
        f"weights resident on chip ({costed.unique_parameter_bytes()} B, loaded once): "
        f"{moved} B of weight reads move on chip",
    )
    return PassResult(new, modified=moved > 0, notes=notes)


def _units_onchip(flow, units: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    onchip: dict[str, int] = {}
    for members in units:
        onchip.update(flow.onchip_by_node(set(members), weights_on_chip=True))
    return onchip


# id(costed) -> (weak reference to it, {units: each node's on-chip bytes with weights resident}). The
# bytes read the graph's data flow and the units' node sets alone, so the chips keeping weights on chip
# (Groq, Cerebras) share them where their fusion made the same regions; the weak reference keeps a
# recycled id from answering for another graph. Cleared by clear_residency.
_ONCHIP: dict[int, tuple[weakref.ref, dict[tuple, dict[str, int]]]] = {}


def clear_residency() -> None:
    """Forget every graph's resident-weight on-chip bytes (benchmarks that evaluate afresh)."""
    _ONCHIP.clear()


def _onchip(costed: CostedGraph, flow, units: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    """:func:`_units_onchip` of ``units`` (node names per unit, in program order), once per graph and units."""
    by_units = weak_memo(_ONCHIP, costed, lambda _: {})
    found = by_units.get(units)
    if found is None:
        found = by_units[units] = _units_onchip(flow, units)
    return found


def residency_pass_for(weights_resident: Resident) -> Pass:
    """The residency pass of a target that may keep weights on chip; ``weights_resident(costed, profile)``
    says whether it does for this graph (Groq: always; Cerebras: in layer-pipelined mode)."""
    return Pass("residency", partial(_resident, weights_resident=weights_resident))
