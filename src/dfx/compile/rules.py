"""Each target compiler's fusion legality, with the source of every rule.

- :class:`InductorRules` (GPUs, ``target="inductor"``): ``torch/_inductor/scheduler.py``
  (``Scheduler.can_fuse``, ``ExternKernelSchedulerNode``, ``config.max_fusion_size = 64``) and
  ``torch/_inductor/codegen/simd.py`` (``SIMDScheduling.can_fuse``: the ``(numel, rnumel)`` check).
- :class:`XlaRules` (TPUs, ``target="xla"``): XLA's ``InstructionFusion`` (loop and input fusion),
  ``MultiOutputFusion`` (siblings) and output fusion of a dot/convolution with its elementwise
  consumer (``xla/service/instruction_fusion.cc``, ``xla/service/cpu/cpu_instruction_fusion.cc``,
  ``xla/service/multi_output_fusion.cc``; the TPU backend is closed, these are its open siblings).
- :class:`DataflowRules` (Groq, Cerebras, Spyre, ``target="dataflow"``): operators stream into each
  other on chip; a tensor stays on chip while the region's intermediates fit the on-chip memory
  (Groq: Abts et al., ISCA 2020, "Think Fast"; Cerebras: the weight-streaming white paper; Spyre:
  torch-spyre ``dataflow_architecture.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from dfx.compile.dataflow import Dataflow
from dfx.compile.fusion import Group, crossing_bytes
from dfx.compile.program import KernelKind

__all__ = ["DataflowRules", "InductorRules", "XlaRules", "iteration_spaces_fuse"]

INDUCTOR_SOURCE = "torch/_inductor/scheduler.py Scheduler.can_fuse; codegen/simd.py SIMDScheduling.can_fuse"
XLA_SOURCE = "xla/service/instruction_fusion.cc, multi_output_fusion.cc, cpu/cpu_instruction_fusion.cc (output fusion)"
DATAFLOW_SOURCE = (
    "operators stream on chip (Groq ISCA 2020; Cerebras weight streaming; torch-spyre dataflow_architecture.md)"
)


def iteration_spaces_fuse(a: Group, b: Group) -> bool:
    """Inductor's ``SIMDScheduling.can_fuse`` on ``(numel, rnumel)``.

    Two pointwise groups need the same element count; two reductions the same ``(numel, rnumel)``;
    a pointwise group fuses with a reduction ``(n, r)`` if it iterates over ``n`` (an epilogue on the
    reduced values) or ``n * r`` elements (a prologue or epilogue over the reduced input).
    """
    if a.rnumel == 1 and b.rnumel == 1:
        return a.numel == b.numel
    if a.rnumel > 1 and b.rnumel > 1:
        return (a.numel, a.rnumel) == (b.numel, b.rnumel)
    red, pw = (a, b) if a.rnumel > 1 else (b, a)
    return pw.numel in (red.numel, red.numel * red.rnumel)


@dataclass(frozen=True)
class InductorRules:
    """Inductor's default mode (no max-autotune): library calls stand alone, the rest fuses by shape.

    GEMMs (mm, addmm, bmm) go to cuBLAS and SDPA to a flash-attention kernel as
    ``ExternKernelSchedulerNode``\\ s, which never fuse (only max-autotune's Triton templates take
    epilogues). A pointwise producer is inlined into its consumer when Inductor lowers the graph,
    whatever the shapes (a buffer is realized only for an extern input, a reduction's output, or
    heavy reuse). Realized buffers then fuse in the scheduler vertically or as siblings sharing a
    buffer (``score_fusion_memory > 0``; ``config.aggressive_fusion = False`` refuses pairs sharing
    nothing) when their ``(numel, rnumel)`` agree.
    """

    target: str = "inductor"
    limit_nodes: int = 64  # torch/_inductor/config.py: max_fusion_size = 64
    streams: bool = False

    def can_fuse(self, a: Group, b: Group, vertical: bool, flow: Dataflow) -> tuple[bool, str]:
        if a.extern or b.extern:
            lib = a if a.extern else b
            return (
                False,
                f"inductor: {lib.label()} is a library call (cuBLAS/flash attention); extern kernels never fuse",
            )
        if vertical and a.pointwise_only and not b.reads.keys().isdisjoint(a.writes):  # b reads what a writes
            return True, (
                f"inductor: pointwise {a.label()} inlined into its consumer (lowering composes Pointwise "
                f"inner_fns; torch/_inductor/ir.py, graph.py realize only reused or extern inputs)"
            )
        if not iteration_spaces_fuse(a, b):
            return False, (
                f"inductor: iteration spaces differ ({a.numel}x{a.rnumel} vs {b.numel}x{b.rnumel}); "
                "SIMDScheduling.can_fuse refuses"
            )
        if a.is_reduction and b.is_reduction:
            how = "reductions over the same rows"
        elif a.is_reduction or b.is_reduction:
            how = "pointwise into a reduction kernel"
        else:
            how = "pointwise chain" if vertical else "pointwise siblings sharing a buffer"
        return True, f"inductor: {how} ({'vertical' if vertical else 'horizontal'}) [{INDUCTOR_SOURCE}]"


@dataclass(frozen=True)
class XlaRules:
    """XLA's fusion: elementwise loop fusion, reductions fusing their producers, output fusion into dots.

    A reduce is the root of its (input) fusion: its producers fuse into it, its consumers do not.
    A dot or convolution takes its elementwise consumers when it is their only producer of
    non-parameter data and has a single consumer (output fusion, ``kOutput``). SDPA stays one
    attention kernel (JAX on TPU runs it as a Pallas flash-attention kernel).
    """

    target: str = "xla"
    limit_nodes: int = 64  # xla's kMaxOperandsAndOutputsPerFusion-style cap; an estimate for dfx
    streams: bool = False

    def can_fuse(self, a: Group, b: Group, vertical: bool, flow: Dataflow) -> tuple[bool, str]:
        if KernelKind.ATTENTION in a.kinds | b.kinds:
            return False, "xla: attention runs as one fused flash-attention kernel"
        if a.extern and b.extern:
            return False, "xla: two dots/convolutions never share a fusion"
        if a.extern or b.extern:
            return self._output_fusion(a, b, vertical, flow)
        if not vertical:
            if not iteration_spaces_fuse(a, b):  # multi_output_fusion.cc: ShapesCompatibleForMultiOutputFusion
                return False, f"xla: siblings' loop shapes differ ({a.numel}x{a.rnumel} vs {b.numel}x{b.rnumel})"
            return True, f"xla: sibling (multi-output) fusion of consumers of one operand [{XLA_SOURCE}]"
        if a.is_reduction:
            return False, "xla: a reduce is the root of its fusion; its consumers form their own"
        if b.is_reduction:
            return True, f"xla: elementwise producers fused into the reduce (input fusion) [{XLA_SOURCE}]"
        return True, f"xla: elementwise loop fusion [{XLA_SOURCE}]"

    def _output_fusion(self, a: Group, b: Group, vertical: bool, flow: Dataflow) -> tuple[bool, str]:
        if not vertical or not a.extern or not b.pointwise_only:
            return False, "xla: only elementwise consumers fuse into a dot/convolution (output fusion)"
        dot = next(n for n in a.nodes if flow.ops[n].extern)
        if len(flow.successors(dot)) != 1:
            return False, f"xla: {dot} has several consumers; output fusion needs a single user"
        return True, f"xla: elementwise consumer fused into {dot} (output fusion, kOutput) [{XLA_SOURCE}]"


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class DataflowRules:
    """Dataflow chips: producer and consumer stream on chip while the region's intermediates fit.

    The groups are *streaming regions*: each operator keeps its own kernel (placed on its own
    cores), and the tensors between operators of one region never leave the chip.

    ``capacity_bytes`` is the on-chip memory (SRAM, scratchpads of all cores); a region whose
    tensors made and consumed inside it exceed it spills, so the pair is refused. Approximation:
    every intermediate of a region is counted as live at once (an upper bound on its footprint).
    """

    capacity_bytes: float
    target: str = "dataflow"
    limit_nodes: int = 1_000_000  # no per-region node cap: a region is a placed subgraph, not a kernel launch
    streams: bool = True  # each operator keeps its own kernel (cores); the region keeps tensors on chip

    def region_need(self, a: Group, b: Group) -> int:
        """Bytes of the intermediates the region ``a`` + ``b`` keeps on chip: what :meth:`can_fuse`
        compares with ``capacity_bytes``, and the only thing it compares with it."""
        return a.internal_bytes + b.internal_bytes + crossing_bytes(a, b)

    def with_capacity(self, capacity_bytes: float) -> DataflowRules:
        """These rules on a chip of another on-chip capacity."""
        return replace(self, capacity_bytes=capacity_bytes)

    def requote(self, text: str, other: DataflowRules) -> str:
        """``text`` (a reason :meth:`can_fuse` wrote, or one built on it) as ``other`` writes it:
        its quotes of this capacity become ``other``'s. The two phrases that quote it are rewritten
        only where they stand whole, so a node name or a size is never touched."""
        return self.requoter(other)(text)

    def requoter(self, other: DataflowRules) -> Callable[[str], str]:
        """:meth:`requote` to ``other`` as a function of the text, its phrases formatted once (a
        reused fusion run requotes every kernel's and every decision's reason)."""
        mine, theirs = f"{self.capacity_bytes:.3g}", f"{other.capacity_bytes:.3g}"
        if mine == theirs:
            return _same
        exceed, exceed_to = f" exceed on-chip {mine} B", f" exceed on-chip {theirs} B"
        of, of_to = f" B of {mine} B) [{DATAFLOW_SOURCE}]", f" B of {theirs} B) [{DATAFLOW_SOURCE}]"
        return lambda text: text.replace(exceed, exceed_to).replace(of, of_to)

    def can_fuse(self, a: Group, b: Group, vertical: bool, flow: Dataflow) -> tuple[bool, str]:
        need = self.region_need(a, b)
        if need > self.capacity_bytes:
            return False, f"dataflow: region intermediates {need:.3g} B exceed on-chip {self.capacity_bytes:.3g} B"
        how = "streams into" if vertical else "shares its input stream with"
        return (
            True,
            f"dataflow: {a.label()} {how} {b.label()} on chip ({need:.3g} B of {self.capacity_bytes:.3g} B) [{DATAFLOW_SOURCE}]",
        )
