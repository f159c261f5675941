"""Decompositions per target: the operators a compiler splits into several kernels, and where their
intermediates live.

A captured graph has one node for ``softmax`` or ``layer_norm``; the machine runs what its compiler
lowers that node to. On IBM Spyre, torch-spyre's Inductor back end realizes every operation of the
decomposed graph as its own buffer (``Loops.has_large_inner_fn`` patched to true in
``torch_spyre/_inductor/__init__.py``; ``split_multi_ops`` keeps one operation per buffer,
``docs/source/compiler/inductor_frontend.md``), so::

    softmax     amax -> sub -> exp -> sum -> div          (scratchpad_planning.md: "The lowered op
                                                            sequence is max -> sub -> exp -> sum -> div")
    layer norm  exx2 -> layernormscale -> layernormnorm   (torch_spyre/_inductor/decompositions.py,
                                                            layernorm_decomp)
    RMS norm    pow -> mean -> add -> rsqrt -> mul -> mul (no Spyre op: torch/_decomp's rms_norm,
                                                            x * rsqrt(mean(x^2) + eps) * w)
    SiLU        sigmoid -> mul                           (torch/_decomp: silu = x * sigmoid(x))
    GELU        one kernel                               (decompositions.py routes F.gelu to spyre::gelu)

Each step is a kernel with its own fixed cost (the profile's ``op_overhead_s``, charged per kernel by
:mod:`dfx.roofline.program`) and its share of the operator's FLOPs (dfx's convention per element,
``docs/cost-model.md``, split step by step; the last step takes what remains, so the steps add up
to the node's FLOPs exactly).

**Where the intermediates live.** The eager program (no fusion stage ran) writes every intermediate
to off-chip memory and reads it back: the scratchpad document's baseline, "every intermediate goes
through HBM" (8 passes over a softmax's input). The compiled program keeps an intermediate in the
on-chip level while the operator's live intermediates fit the share of it the planner may use
(the target's usable fraction: about 1.55 MB of each Spyre core's 2 MB, over the cores the work is divided
over: "Multi-core LX") (the scratchpad planner pins
reductions' outputs and in-place pointwise results to LX, and clones an input read twice into LX:
stages 2 to 4 of scratchpad_planning.md, 2 passes); one that does not fit is written off chip and
read back. Each split kernel's ``reason`` and the pass's notes say where each intermediate lives.
The operator's own boundary traffic (its input, weights and output) is what fusion decided for its
kernel (``offchip_bytes``): it is spread over the steps that read or write it.

Residency follows liveness in step order (a tensor is freed after its last reader, a pointwise step
writes in place over an input that dies there). Approximation: the surrounding region's tensors are
not counted against the scratchpad. GPUs (Inductor) and TPUs (XLA) run these operators as one fused
reduction kernel, which is how dfx already lowers them: their pipelines have no decompose pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from dfx.compile.passes import Pass, PassResult
from dfx.compile.program import Kernel, KernelKind, Program
from dfx.costs.record import CostedGraph, CostedNode
from dfx.hardware import HardwareProfile
from dfx.ir import TensorSpec

__all__ = [
    "DECOMPOSITIONS_SPYRE",
    "SPYRE_LX_USABLE_FRACTION",
    "Decomposition",
    "Step",
    "decompose_pass_for",
]

R, P = KernelKind.REDUCTION, KernelKind.POINTWISE
# What a step writes: a full-size tensor, one value per row, two per row (exx2: mean and mean of
# squares), or the operator's output.
FULL, ROW, ROW2, OUT = "full", "row", "row2", "out"


@dataclass(frozen=True)
class Step:
    """One kernel of a split operator: what it reads, what it writes, its FLOPs per element and per row.

    ``reads`` names the operator's operands (``x``, ``weight``, ``bias``) or earlier steps' outputs.
    """

    name: str
    kind: KernelKind
    reads: tuple[str, ...]
    writes: str
    flops_per_element: int = 0
    flops_per_row: int = 0
    only_with: str = ""  # an operand without which the step does not exist (RMS norm's weight)


@dataclass(frozen=True)
class Decomposition:
    """An operator as its compiler lowers it: the aten ops it applies to, its steps and the source."""

    name: str
    ops: tuple[str, ...]  # aten overload packets
    steps: tuple[Step, ...]
    source: str


_SPYRE_DOCS = "torch-spyre docs/source/compiler/scratchpad_planning.md"
DECOMPOSITIONS_SPYRE: tuple[Decomposition, ...] = (
    Decomposition(
        "softmax",
        ("aten._softmax", "aten.softmax", "aten.special_softmax", "aten._safe_softmax"),
        (
            Step("amax", R, ("x",), ROW, 1),
            Step("sub", P, ("x", "amax"), FULL, 1),
            Step("exp", P, ("sub",), FULL, 1),
            Step("sum", R, ("exp",), ROW, 1),
            Step("div", P, ("exp", "sum"), OUT, 1),  # _safe_softmax's select falls here (the remainder)
        ),
        f"{_SPYRE_DOCS} (max -> sub -> exp -> sum -> div)",
    ),
    Decomposition(
        "layer_norm",
        ("aten.native_layer_norm", "aten.layer_norm"),
        (
            Step("exx2", R, ("x",), ROW2, 3, 2),  # sum, square, sum; two divides per row
            Step("layernormscale", P, ("exx2",), ROW2, 0, 2),  # + eps, rsqrt per row
            Step("layernormnorm", P, ("x", "layernormscale", "weight", "bias"), OUT, 2),
        ),
        "torch_spyre/_inductor/decompositions.py layernorm_decomp (exx2 -> layernormscale -> layernormnorm)",
    ),
    Decomposition(
        "rms_norm",
        ("aten.rms_norm", "aten._fused_rms_norm"),
        (
            Step("pow", P, ("x",), FULL, 1),
            Step("mean", R, ("pow",), ROW, 1, 1),
            Step("add", P, ("mean",), ROW, 0, 1),
            Step("rsqrt", P, ("add",), ROW, 0, 1),
            Step("mul", P, ("x", "rsqrt"), FULL, 1),  # the output where there is no weight
            Step("mul_weight", P, ("mul", "weight"), OUT, 1, only_with="weight"),
        ),
        "torch/_decomp/decompositions.py rms_norm, every op its own buffer in torch-spyre "
        "(_inductor/__init__.py: Loops.has_large_inner_fn -> True)",
    ),
    Decomposition(
        "silu",
        ("aten.silu",),
        (Step("sigmoid", P, ("x",), FULL, 4), Step("mul", P, ("x", "sigmoid"), OUT, 1)),
        "torch/_decomp/decompositions.py silu (x * sigmoid(x)), every op its own buffer in torch-spyre",
    ),
)


# torch-spyre's scratchpad planner may use ~1.55 MB of each core's 2 MB LX:
# round_up_128(int(((2 << 20) - (64 << 10)) * (1 - 0.2))) = 1,625,600 B (a 64 KB program/debug reservation,
# then DXP_LX_FRAC_AVAIL = 20% kept by the back end; scratchpad_planning.md, "Hardware context")
SPYRE_LX_USABLE_FRACTION = 1_625_600 / (2 << 20)


def _decomposition(node: CostedNode, table: tuple[Decomposition, ...]) -> Decomposition | None:
    """The decomposition of ``node``: by its one aten call, or by its own target where it dispatched to
    that op's composite (``aten.rms_norm`` records pow, mean, add, rsqrt, mul, mul on CPU)."""
    calls = node.node.aten_calls
    if not calls or node.unknown_ops:
        return None
    packets = {".".join(node.node.target.split(".")[:2])}
    if len(calls) == 1:
        packets.add(calls[0].packet)
    return next((d for d in table if packets & set(d.ops)), None)


@dataclass(frozen=True)
class _Sizes:
    """The operator's tensors in bytes: its input, one row vector, its weight and bias, its output."""

    x: int
    rows: int
    itemsize: int
    weight: int
    bias: int
    out: int
    elements: int

    def of(self, name: str) -> int:
        return {"x": self.x, "weight": self.weight, "bias": self.bias}[name]

    def written(self, what: str) -> int:
        return {FULL: self.x, ROW: self.rows * self.itemsize, ROW2: 2 * self.rows * self.itemsize, OUT: self.out}[what]


def _sizes(node: CostedNode) -> _Sizes:
    call = node.node.aten_calls[0]
    if len(node.node.aten_calls) > 1:  # a composite: its operands are the node's inputs (x, then the weight)
        return _node_sizes(node)
    tensors = [a for a in call.args if isinstance(a, TensorSpec)]
    x = tensors[0]
    inner = x.shape[-1] if x.shape else 1
    if len(call.args) > 1 and isinstance(call.args[1], (list, tuple)) and call.args[1]:  # a norm's normalized_shape
        inner = 1
        for d in call.args[1]:
            inner *= int(d)
    rows = x.numel // inner if inner else 0
    weight = tensors[1].nbytes if len(tensors) > 1 else 0
    bias = tensors[2].nbytes if len(tensors) > 2 else 0
    out = sum(spec.nbytes for spec in node.node.outputs)
    return _Sizes(x.nbytes, rows, x.itemsize, weight, bias, out, x.numel)


def _residency(steps: tuple[Step, ...], size: _Sizes, compiled: bool, budget: float) -> dict[str, bool]:
    """Which intermediates the compiled program keeps on chip (name -> kept), by liveness in step order.

    The input goes on chip first where it is read more than once (the planner's clone). A tensor is
    freed after its last reader; a pointwise step may write in place over an input that dies there
    (scratchpad_planning.md, stage 3), a reduction's output is allocated beside its inputs. An
    intermediate is kept while the live tensors fit ``budget``; the eager program keeps none.
    """
    last_reader = {r: i for i, s in enumerate(steps) for r in s.reads}
    kept: dict[str, bool] = {}
    live: dict[str, int] = {}
    if compiled and sum(r == "x" for s in steps for r in s.reads) > 1 and size.x <= budget:
        kept["x"], live["x"] = True, size.x
    for i, s in enumerate(steps[:-1]):
        dying = [r for r in s.reads if last_reader.get(r) == i and r in live]
        if s.kind is P:  # in place over what dies here
            for r in dying:
                live.pop(r)
        nbytes = size.written(s.writes)
        kept[s.name] = compiled and sum(live.values()) + nbytes <= budget
        if kept[s.name]:
            live[s.name] = nbytes
        for r in dying:
            live.pop(r, None)
    return kept


def _node_sizes(node: CostedNode) -> _Sizes:
    """:func:`_sizes` of a node whose aten calls are its op's composite: x is its first call's first
    tensor, rows from its output's last dimension, the weight its parameter."""
    x = next(a for a in node.node.aten_calls[0].args if isinstance(a, TensorSpec))
    out = sum(spec.nbytes for spec in node.node.outputs)
    inner = x.shape[-1] if x.shape else 1
    calls = node.node.aten_calls
    w = next((t for c in reversed(calls) for t in c.inputs if t.shape == (inner,)), None) if node.node.params else None
    return _Sizes(x.nbytes, x.numel // inner if inner else 0, x.itemsize, w.nbytes if w else 0, 0, out, x.numel)


def _split(kernel: Kernel, node: CostedNode, d: Decomposition, compiled: bool, budget: float, places: tuple[str, str]):
    """The kernels of ``kernel`` (one node) split as ``d`` says, and one residency statement per intermediate."""
    on, off = places
    size = _sizes(node)
    steps = tuple(s for s in d.steps if not s.only_with or size.of(s.only_with))
    if steps[-1].writes != OUT:  # the optional last step is absent: the one before writes the output
        steps = steps[:-1] + (replace(steps[-1], writes=OUT),)
    kept = _residency(steps, size, compiled, budget)
    # the operator's boundary traffic (first read of each operand, the output's write) crosses off chip in
    # the share fusion left off chip for its kernel (1 in the eager program)
    scale = kernel.offchip_bytes / kernel.bytes if compiled and kernel.bytes else 1.0
    flops_left, kernels, seen = node.cost.flops, [], set()
    names = [f"{kernel.name}.{s.name}" for s in steps]
    for i, s in enumerate(steps):
        offchip = onchip = 0.0
        for r in s.reads:
            nbytes = (
                size.of(r)
                if r in ("x", "weight", "bias")
                else size.written(next(p for p in steps if p.name == r).writes)
            )
            if r in ("x", "weight", "bias") and r not in seen:
                offchip, onchip = offchip + nbytes * scale, onchip + nbytes * (1 - scale)
                seen.add(r)
            elif kept.get(r, False):
                onchip += nbytes
            else:
                offchip += nbytes
        out = size.written(s.writes)
        if s.writes == OUT:
            offchip, onchip = offchip + out * scale, onchip + out * (1 - scale)
        elif kept[s.name]:
            onchip += out
        else:
            offchip += out
        flops = s.flops_per_element * size.elements + s.flops_per_row * size.rows
        flops = min(flops, flops_left) if i < len(steps) - 1 else flops_left
        flops_left -= flops
        deps = kernel.deps if i == 0 else tuple(names[j] for j, p in enumerate(steps) if p.name in s.reads)
        where = "" if s.writes == OUT else f"; writes {s.name} ({out:,} B) to {on if kept[s.name] else off}"
        kernels.append(
            kernel.with_(
                name=names[i],
                kind=s.kind,
                flops=int(flops),
                offchip_bytes=round(offchip),
                onchip_bytes=round(onchip),
                deps=deps or kernel.deps,
                compute_share=flops / node.cost.flops if node.cost.flops else 1 / len(steps),
                reason=f"{d.name} step {i + 1} of {len(steps)}: {s.name} (source: {d.source}){where}",
            )
        )
    statement = ", ".join(
        f"{name} {size.x if name == 'x' else size.written(next(p for p in steps if p.name == name).writes):,} B in "
        f"{on if k else off}"
        for name, k in kept.items()
    )
    return tuple(kernels), f"{node.name} ({d.name}: {len(steps)} kernels): {statement or 'no intermediates'}"


def _decompose(
    program: Program,
    costed: CostedGraph,
    profile: HardwareProfile,
    table: tuple[Decomposition, ...],
    usable_fraction: float,
) -> PassResult:
    compiled = any(s.name == "fusion" for s in program.stages)
    level, off_level = profile.on_chip_level(), profile.off_chip_level()
    budget = level.capacity_bytes * usable_fraction if compiled and level and level.capacity_bytes else 0.0
    places = (level.name if level else "on chip", off_level.name if off_level else "off chip")
    out: list[Kernel] = []
    last: dict[str, str] = {}  # a split kernel's name -> its last step's (what its consumers wait for)
    notes: list[str] = []
    for k in program.kernels:
        deps = tuple(last.get(dep, dep) for dep in k.deps)
        d = _decomposition(costed[k.nodes[0]], table) if len(k.nodes) == 1 and table else None
        if d is None:
            out.append(k if deps == k.deps else k.with_(deps=deps))
            continue
        kernels, statement = _split(k.with_(deps=deps), costed[k.nodes[0]], d, compiled, budget, places)
        out.extend(kernels)
        last[k.name] = kernels[-1].name
        notes.append(statement)
    if not last:
        return PassResult(program, False, ("no operator this target splits",))
    head = f"{len(last)} operators split into {len(out) - len(program.kernels) + len(last)} kernels"
    head += (
        " (compiled: intermediates kept on chip where they fit)"
        if compiled
        else " (eager: every intermediate off chip)"
    )
    return PassResult(program.with_(kernels=tuple(out)), True, (head, *notes))


def decompose_pass_for(table: tuple[Decomposition, ...], usable_fraction: float = 1.0) -> Pass:
    """The decompose pass of a target whose compiler splits the operators of ``table`` into kernels,
    keeping intermediates in ``usable_fraction`` of the on-chip level (the share its scratchpad planner
    may fill: :data:`SPYRE_LX_USABLE_FRACTION` on Spyre) in a compiled program."""
    return Pass("decompose", partial(_decompose, table=table, usable_fraction=usable_fraction))
