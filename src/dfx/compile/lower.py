"""Lowering a costed graph to the eager program: one kernel per node that does work.

Eager execution (PyTorch without ``torch.compile``) launches one kernel per operator and every
tensor goes to and from off-chip memory, so each kernel's off-chip bytes are its node's traffic.
Nodes with no work (placeholders, views, the output) belong to no kernel; a kernel's ``deps`` look
through them to the kernels that produced the data. A node whose cost is unknown is work
(:func:`dfx.compile.dataflow.does_work`): it has its own kernel.
"""

from __future__ import annotations

import weakref

from dfx.compile.dataflow import dataflow, does_work
from dfx.memo import weak_memo
from dfx.compile.program import Kernel, Program, PassRecord
from dfx.costs.record import CostedGraph
from dfx.hardware import HardwareProfile

__all__ = ["lower_eager", "producer_kernels", "unknown_cost_note"]


def unknown_cost_note(costed: CostedGraph, nodes: tuple[str, ...] | list[str]) -> str:
    """A kernel reason's suffix naming the aten calls of ``nodes`` with no cost rule ("" when none).

    Such a kernel is a real work item whose FLOPs and bytes count only what is known.
    """
    ops = tuple(dict.fromkeys(op for n in nodes for op in costed[n].unknown_ops))
    if not ops:
        return ""
    return f"; cost unknown: no cost rule for {', '.join(ops)} (counted as 0 here, listed in the coverage report)"


def producer_kernels(costed: CostedGraph, kernel_of: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """For every node, the kernels producing its inputs, looking through nodes that belong to no kernel.

    Returns node name -> kernel names (sorted by first appearance, without duplicates).
    """
    graph = costed.graph
    found: dict[str, tuple[str, ...]] = {}
    for node in graph.nodes:  # topological order: producers are resolved first
        kernels: dict[str, None] = {}
        for edge in node.inputs:
            src_kernel = kernel_of.get(edge.src)
            if src_kernel is not None:
                kernels[src_kernel] = None
            else:
                kernels.update(dict.fromkeys(found.get(edge.src, ())))
        found[node.name] = tuple(kernels)
    return found


def lower_eager(costed: CostedGraph, profile: HardwareProfile) -> Program:
    """The eager program of ``costed`` on ``profile``: one kernel per node with work.

    Each kernel's off-chip bytes are its node's whole traffic (``cost.bytes``): in eager mode every
    operator reads its inputs and parameters from, and writes its outputs to, off-chip memory.

    >>> from dfx.ir import Graph
    >>> from dfx.costs import annotate
    >>> from dfx.hardware import load_profile
    >>> program = lower_eager(annotate(Graph(name="empty", nodes=())), load_profile("h100"))
    >>> (program.target, len(program.kernels))
    ('eager', 0)
    """
    kernels, stage = _eager(costed)
    return Program(
        graph_name=costed.graph.name,
        profile_id=profile.id,
        target="eager",
        commitment=profile.scheduling.commitment.value,
        kernels=kernels,
        stages=(stage,),
    )


# id(costed) -> (weak reference to it, its eager kernels, the "lower" stage's record): they read nothing
# of the profile, so every profile compiling one costed graph starts from the same tuple (and the
# fusion pass's cache sees it), and the same record (it counts the kernels' nodes, tiles and bytes)
_EAGER: dict[int, tuple[weakref.ref, tuple[tuple[Kernel, ...], PassRecord]]] = {}


def clear_eager_kernels() -> None:
    """Forget every costed graph's cached eager kernels (benchmarks that evaluate afresh)."""
    _EAGER.clear()


def _eager(costed: CostedGraph) -> tuple[tuple[Kernel, ...], PassRecord]:
    return weak_memo(_EAGER, costed, _make_eager)


def _make_eager(costed: CostedGraph) -> tuple[tuple[Kernel, ...], PassRecord]:
    working = [n for n in costed.nodes if does_work(n)]
    ops = dataflow(costed).ops  # each kernel's kind as fusion sees it (a sum is a reduction, not pointwise)
    kernel_of = {n.name: f"k{i}_{n.name}" for i, n in enumerate(working)}
    deps = producer_kernels(costed, kernel_of)
    kernels = tuple(
        Kernel.of(
            name=kernel_of[n.name],
            nodes=(n.name,),
            kind=ops[n.name].kind,
            flops=n.cost.flops,
            offchip_bytes=n.cost.bytes,
            deps=tuple(d for d in deps[n.name] if d != kernel_of[n.name]),
            dtype=n.dtype,
            reason="eager: one kernel per operator" + unknown_cost_note(costed, (n.name,)),
        )
        for n in working
    )
    unplaced = Program(graph_name="", profile_id="", target="eager", commitment="", kernels=kernels)
    stage = unplaced.record("lower", True, (f"{len(kernels)} kernels, one per operator",))
    return kernels, stage
