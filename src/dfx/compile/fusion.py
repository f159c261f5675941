"""The fusion pass: group the graph's working nodes into kernels, one decision at a time.

Written the way Inductor's scheduler fuses (``torch/_inductor/scheduler.py``,
``Scheduler.fuse_nodes``): collect the candidate pairs (a producer and its consumer, or two
siblings reading the same tensor), order them by a score (shared bytes first, then closeness in
program order), and for each pair ask the target's rules whether it may fuse (``can_fuse``); the
scheduler itself refuses a pair that would create a cycle (``will_fusion_create_cycle``). Rounds
repeat until nothing fuses (Inductor stops after 10). Every decision keeps a reason a user can read.

Override map (what a target's rules decide; the engine does the rest)::

    FusionRules.can_fuse(a, b, vertical) -> (bool, reason)   legality, the target's compiler
    FusionRules.limit_nodes                                   max nodes per kernel
    engine: candidates, score, cycle check, rounds, kernels and their off-chip bytes

The engine also refuses any pair holding a node whose cost is unknown (an aten call with no cost
rule): what such a node reads and writes on chip cannot be known, so it runs as its own kernel and
its inputs and outputs cross the kernel boundary.
"""

from __future__ import annotations

import math
import weakref
from operator import itemgetter
from dataclasses import dataclass, field
from typing import Protocol

from dfx.compile.dataflow import Dataflow, TensorKey, dataflow
from dfx.memo import weak_key, weak_memo
from dfx.compile.lower import producer_kernels, unknown_cost_note
from dfx.compile.passes import PassResult
from dfx.compile.program import Kernel, KernelKind, Program
from dfx.costs.record import CostedGraph
from dfx.frozen import copy_with
from dfx.hardware import HardwareProfile

__all__ = [
    "CACHE_STATS",
    "FusionDecision",
    "FusionRules",
    "Group",
    "clear_fusion_cache",
    "fuse",
    "fusion_pass",
    "kernels_from_groups",
    "streaming_kernels",
]

_MAX_ROUNDS = 10  # Inductor's Scheduler.fuse_nodes: `for i in range(10)` rounds of fuse_nodes_once
_KIND_ORDER = (KernelKind.GEMM, KernelKind.ATTENTION, KernelKind.REDUCTION, KernelKind.POINTWISE, KernelKind.MEMORY)


@dataclass
class Group:
    """A set of nodes that will run as one kernel, with what the rules read about it.

    ``numel``/``rnumel`` are the group's iteration space (Inductor's ``node.group``): a group with a
    reduction takes the reduction's, a pointwise group its element count and 1.
    """

    nodes: list[str]
    kinds: set[KernelKind]
    numel: int
    rnumel: int
    extern: int  # how many library calls (GEMM, conv, attention) it holds
    reads: dict[TensorKey, int]
    writes: dict[TensorKey, int]
    first: int  # smallest topological position
    last: int
    internal_bytes: int = 0  # bytes of tensors made and consumed inside the group
    reasons: list[str] = field(default_factory=list)
    consumers: set[str] = field(default_factory=set)  # nodes outside the group reading it
    unknown: tuple[str, ...] = ()  # aten calls of its nodes with no cost rule

    @property
    def is_reduction(self) -> bool:
        return self.rnumel > 1 or KernelKind.REDUCTION in self.kinds

    @property
    def pointwise_only(self) -> bool:
        return self.kinds <= {KernelKind.POINTWISE, KernelKind.MEMORY}

    def label(self) -> str:
        return self.nodes[0] if len(self.nodes) == 1 else f"{self.nodes[0]}+{len(self.nodes) - 1}"

    def copy(self) -> Group:
        """A group equal to this one owning its own containers (a fusion run grows groups in place)."""
        new = object.__new__(Group)
        new.__dict__.update(
            self.__dict__,
            nodes=list(self.nodes),
            kinds=set(self.kinds),
            reads=dict(self.reads),
            writes=dict(self.writes),
            reasons=list(self.reasons),
            consumers=set(self.consumers),
        )
        return new


class FusionRules(Protocol):
    """A target compiler's fusion legality (see the module docstring's override map).

    ``streams``: the groups are streaming regions of one kernel per operator (dataflow chips, where
    each operator keeps its own cores and passes tensors on chip), not single kernel launches.
    """

    target: str
    limit_nodes: int
    streams: bool

    def can_fuse(self, a: Group, b: Group, vertical: bool, flow: Dataflow) -> tuple[bool, str]:
        """Whether ``a`` and ``b`` (``a`` earlier) may run as one kernel, and why."""
        ...


@dataclass(frozen=True)
class FusionDecision:
    """One candidate pair and what the rules said: fused or not, and why."""

    a: str
    b: str
    vertical: bool
    fused: bool
    reason: str
    shared_bytes: int

    @classmethod
    def of(cls, a: str, b: str, vertical: bool, fused: bool, reason: str, shared_bytes: int) -> FusionDecision:
        """``FusionDecision(a, b, vertical, fused, reason, shared_bytes)`` without the frozen ``__init__``'s
        ``object.__setattr__`` per field (a fusion run records a decision per pair asked; no validation
        is skipped: the class has none)."""
        new = object.__new__(cls)
        new.__dict__.update(a=a, b=b, vertical=vertical, fused=fused, reason=reason, shared_bytes=shared_bytes)
        return new

    def with_reason(self, reason: str) -> FusionDecision:
        """A copy with ``reason`` (the others' fields as they are)."""
        return copy_with(self, {"reason": reason})

    def __str__(self) -> str:
        verb = "fuse" if self.fused else "keep apart"
        how = "producer->consumer" if self.vertical else "siblings"
        return f"{verb} {self.a} | {self.b} ({how}, {self.shared_bytes} B shared): {self.reason}"


def _singleton(name: str, flow: Dataflow) -> Group:
    """The group of ``name`` alone (the fields ``Group(...)`` would set, without the dataclass ``__init__``)."""
    op = flow.ops[name]
    consumers = set(flow.successors(name))
    consumers.discard(name)
    new = object.__new__(Group)
    new.__dict__.update(
        nodes=[name],
        kinds={op.kind},
        numel=op.numel,
        rnumel=op.rnumel,
        extern=int(op.extern),
        reads={**flow.reads[name], **flow.params[name]},
        writes=dict(flow.outputs[name]),
        first=op.pos,
        last=op.pos,
        internal_bytes=0,
        reasons=[],
        consumers=consumers,
        unknown=op.unknown,
    )
    return new


def crossing_bytes(a: Group, b: Group) -> int:
    """Bytes of the tensors one group writes and the other reads (what fusing them keeps on chip)."""
    hint = _CROSSING_HINT
    if hint and hint[0] is a and hint[1] is b:
        return hint[2]
    # sums over the common keys (dict views intersect by walking the smaller): integers, so any order
    return sum(b.reads[k] for k in a.writes.keys() & b.reads.keys()) + sum(
        a.reads[k] for k in b.writes.keys() & a.reads.keys()
    )


# (a, b, crossing_bytes(a, b)) while fuse asks its rules about the groups a and b (empty otherwise): a
# rule's crossing_bytes of the pair (DataflowRules.region_need) takes the bytes fuse has just summed
_CROSSING_HINT: list = []


def _shared(a: Group, b: Group) -> tuple[int, bool, int]:
    """Bytes the two groups share (one writes what the other reads, or both read it), whether vertical,
    and the crossing bytes (:func:`crossing_bytes`: what fusing them keeps on chip)."""
    ar, br = a.reads, b.reads
    vertical = 0  # crossing_bytes(a, b), integer sums: any order
    for k in a.writes:
        if k in br:
            vertical += br[k]
    for k in b.writes:
        if k in ar:
            vertical += ar[k]
    siblings = 0  # of each tensor both read, a's bytes
    if len(ar) <= len(br):
        for k in ar:
            if k in br:
                siblings += ar[k]
    else:
        for k in br:
            if k in ar:
                siblings += ar[k]
    return vertical + siblings, vertical > 0, vertical


def _absorb(a: Group, b: Group, reason: str, pos: dict[str, int], internal: int | None = None) -> Group:
    """``a`` and ``b`` (``a`` first) as one group, built in place in the larger one's containers.

    The same group as merging into fresh containers: nodes in topological order; of a tensor both
    read (or write), ``b``'s bytes; ``a``'s reasons first. The groups given are used up, except a
    group of one node: that is a flow's shared singleton (:class:`_Start`), so its containers are copied.
    ``internal``: ``crossing_bytes(a, b)`` where the caller has it.
    """
    internal = crossing_bytes(a, b) if internal is None else internal
    red = a if a.rnumel > 1 else b
    ar, aw, br, bw = a.reads, a.writes, b.reads, b.writes
    an, bn = a.nodes, b.nodes
    if len(ar) + len(aw) >= len(br) + len(bw):  # grow a's containers; b's bytes win a clash
        if len(an) == 1:  # a flow's singleton, shared by every run (_Start): copied, never changed
            ar, aw, consumers = dict(ar), dict(aw), set(a.consumers)
        else:
            consumers = a.consumers
        ar.update(br)
        aw.update(bw)
        reads, writes = ar, aw
        consumers |= b.consumers
    else:  # grow b's: a's bytes only where b has none
        if len(bn) == 1:
            br, bw, consumers = dict(br), dict(bw), set(b.consumers)
        else:
            consumers = b.consumers
        for key, n in ar.items():
            br.setdefault(key, n)
        for key, n in aw.items():
            bw.setdefault(key, n)
        reads, writes = br, bw
        consumers |= a.consumers
    consumers.difference_update(an, bn)
    nodes = an + bn
    if a.last > b.first:  # two sorted runs interleaved: one merge (else a's nodes all come first)
        nodes.sort(key=pos.__getitem__)
    new = object.__new__(Group)  # every field given: the dataclass __init__ would only assign them
    new.__dict__.update(
        nodes=nodes,
        kinds=a.kinds | b.kinds,
        numel=red.numel,
        rnumel=red.rnumel,
        extern=a.extern + b.extern,
        reads=reads,
        writes=writes,
        first=a.first if a.first < b.first else b.first,
        last=a.last if a.last > b.last else b.last,
        internal_bytes=a.internal_bytes + b.internal_bytes + internal,
        reasons=[*a.reasons, *b.reasons, reason],
        consumers=consumers,
        unknown=tuple(dict.fromkeys(a.unknown + b.unknown)) if a.unknown or b.unknown else (),
    )
    return new


class _State:
    """Each node's group root, one :class:`Group` per root, and the group DAG's edges between roots.

    ``root[n]`` is the root of ``n``'s group (rewritten for the absorbed group's nodes on each union:
    groups hold at most a few dozen nodes). ``succ[r]`` is always ``{root[c] for c in
    groups[r].consumers}``: kept up to date on each union rather than recomputed on each look-up.
    """

    def __init__(self, flow: Dataflow, start: _Start | None = None) -> None:
        start = _Start(flow) if start is None else start
        self.flow = flow
        self.pos = start.pos
        self.root = dict(start.roots)
        self.groups = dict(start.singletons)  # shared, read only: _absorb copies a singleton it grows
        self.succ = {n: set(out) for n, out in start.succ.items()}
        self.pred = {n: set(into) for n, into in start.pred.items()}

    def find(self, n: str) -> str:
        return self.root[n]

    def successors(self, root: str) -> set[str]:
        """The roots of the groups reading ``root``'s group (a live set: do not change it)."""
        return self.succ[root]

    def creates_cycle(self, a: str, b: str) -> str | None:
        """A group on a path between ``a`` and ``b`` through a third group (Inductor: will_fusion_create_cycle)."""
        groups, succ = self.groups, self.succ
        for src, dst in ((a, b), (b, a)):
            last = groups[dst].last
            # a group whose every node comes after dst's last has no path back into dst: never walked
            # (left out of the stack where met, in the order met: the walk visits the others as before)
            stack = [s for s in succ[src] if s != dst and groups[s].first <= last]
            if not stack:
                continue
            seen = set(stack)
            while stack:
                g = stack.pop()
                out = succ[g]
                if dst in out:
                    return groups[g].label()
                for s in out:
                    if s not in seen:
                        seen.add(s)
                        if groups[s].first <= last:
                            stack.append(s)
        return None

    def union(self, a: str, b: str, reason: str, crossing: int | None = None) -> None:
        """Merge ``b``'s group into ``a``'s; ``a`` stays the root. ``crossing``: their crossing bytes, if known."""
        ga, gb = self.groups[a], self.groups[b]
        first, second = (ga, gb) if ga.first <= gb.first else (gb, ga)
        self.groups[a] = _absorb(first, second, reason, self.pos, crossing)  # crossing_bytes is symmetric
        root = self.root
        for n in gb.nodes:
            root[n] = a
        del self.groups[b]
        succ, pred = self.succ, self.pred
        sb, pb = succ.pop(b), pred.pop(b)
        for s in sb:
            into = pred[s]
            into.discard(b)
            into.add(a)
        for p in pb:
            out = succ[p]
            out.discard(b)
            out.add(a)
        sa, pa = succ[a], pred[a]
        sa |= sb
        pa |= pb
        sa.discard(a)
        sa.discard(b)
        pa.discard(a)
        pa.discard(b)


def _candidate_pairs(flow: Dataflow) -> list[tuple[str, str]]:
    """Node pairs worth asking about: producer->consumer, and consecutive readers of one tensor."""
    pairs: dict[tuple[str, str], None] = {}
    for name in flow.ops:
        for s in flow.successors(name):
            pairs[(name, s)] = None
    for readers in flow.consumers.values():
        working = [r for r in readers if r in flow.ops]
        for x, y in zip(working, working[1:]):
            pairs[(x, y)] = None
    return list(pairs)


def _label(g: Group) -> str:
    nodes = g.nodes
    return nodes[0] if len(nodes) == 1 else f"{nodes[0]}+{len(nodes) - 1}"


def fuse(flow: Dataflow, rules: FusionRules) -> tuple[list[Group], list[FusionDecision]]:
    """Group ``flow``'s working nodes into kernels under ``rules``; every decision with its reason.

    Returns the groups in topological order and the decisions in the order they were taken. The
    groups are read only: a group of one node is shared by every run on ``flow``.
    """
    start = _start(flow)
    state = _State(flow, start)
    decisions: list[FusionDecision] = []
    pairs = start.pairs
    # a group only grows and its root never changes, so (root, size) names its node set at any time:
    # the key of a pair already asked, and of a pair's shared bytes (pairs of unchanged groups recur)
    asked: set[tuple[str, int, str, int]] = set()
    shared_of: dict[tuple[str, int, str, int], tuple[int, bool, int]] = dict(start.shared)

    def shared_bytes(a: str, ga: Group, b: str, gb: Group) -> tuple[int, bool, int]:
        key = (a, len(ga.nodes), b, len(gb.nodes))
        hit = shared_of.get(key)
        if hit is None:
            hit = shared_of[key] = _shared(ga, gb)
        return hit

    root, groups = state.root, state.groups
    union, append, can_fuse, creates_cycle = state.union, decisions.append, rules.can_fuse, state.creates_cycle
    limit, target, hint = rules.limit_nodes, rules.target, _CROSSING_HINT
    new_decision = object.__new__
    for round_ in range(_MAX_ROUNDS):
        scored = start.scored if round_ == 0 else _scored(state, pairs, shared_bytes)
        fused_any = False
        for _, x, y in scored:
            a, b = root[x], root[y]
            if a == b:
                continue
            ga, gb = groups[a], groups[b]
            if gb.first < ga.first:
                a, b, ga, gb = b, a, gb, ga
            na, nb = ga.nodes, gb.nodes
            key = (a, len(na), b, len(nb))
            if key in asked:
                continue
            asked.add(key)
            hit = shared_of.get(key)
            if hit is None:
                hit = shared_of[key] = _shared(ga, gb)
            shared, vertical, crossing = hit
            # the decision (_decide): unknown costs, the node limit, the rules, then the cycle check
            if ga.unknown or gb.unknown:
                g = ga if ga.unknown else gb
                ok, reason = (
                    False,
                    (
                        f"{g.label()}'s cost is unknown (no cost rule for {', '.join(g.unknown)}): "
                        "what it keeps on chip cannot be known, so it is never fused"
                    ),
                )
            elif len(na) + len(nb) > limit:
                ok, reason = False, f"{target}: kernel would exceed {limit} nodes"
            else:
                hint[:] = ga, gb, crossing
                try:
                    ok, reason = can_fuse(ga, gb, vertical, flow)
                finally:
                    hint.clear()
                if ok:
                    through = creates_cycle(a, b)
                    if through is not None:
                        ok, reason = (
                            False,
                            f"would create a cycle through {through} (Inductor: will_fusion_create_cycle)",
                        )
            decision = new_decision(FusionDecision)  # FusionDecision.of, inlined
            decision.__dict__.update(
                a=na[0] if len(na) == 1 else f"{na[0]}+{len(na) - 1}",
                b=nb[0] if len(nb) == 1 else f"{nb[0]}+{len(nb) - 1}",
                vertical=vertical,
                fused=ok,
                reason=reason,
                shared_bytes=shared,
            )
            append(decision)
            if ok:
                union(a, b, reason, crossing)
                fused_any = True
        if not fused_any:
            break
    return _topological(state), decisions


def _scored(state: _State, pairs: list[tuple[str, str]], shared_bytes) -> list[tuple[tuple, str, str]]:
    """The candidate pairs of different groups sharing bytes, best first: ``(score, x, y)``."""
    scored = []
    root, groups = state.root, state.groups
    for x, y in pairs:
        a, b = root[x], root[y]
        if a == b:
            continue
        ga, gb = groups[a], groups[b]
        shared = shared_bytes(a, ga, b, gb)[0]
        if shared == 0:
            continue
        # Inductor's score_fusion: same reduction-ness and shared memory, then bytes, then proximity
        proximity = -max(abs(ga.first - gb.last), abs(gb.first - ga.last))
        scored.append(((ga.is_reduction == gb.is_reduction, shared, proximity), x, y))
    scored.sort(key=_first, reverse=True)
    return scored


_first = itemgetter(0)


class _Start:
    """Where every fusion run of one data flow starts, whatever its rules: one group per working node,
    the group DAG's edges, the candidate pairs, and the first round's scored pairs (no group has grown
    yet, so the scores read the flow alone) with each pair's shared bytes. Made once per flow (:func:`_start`) for the GPU, TPU and
    dataflow runs of one graph; a run copies the edges, and a group before it grows it (:func:`_absorb`).
    It also keeps, as runs build their kernels, what a kernel of a given node set carries
    (:func:`_kernel_facts`): the GPU and TPU runs share their unfused and equally fused kernels."""

    def __init__(self, flow: Dataflow) -> None:
        self.pos = {n: op.pos for n, op in flow.ops.items()}
        self.roots = {n: n for n in flow.ops}
        self.singletons = singletons = {n: _singleton(n, flow) for n in flow.ops}
        self.succ = {n: frozenset(g.consumers) for n, g in singletons.items()}
        pred: dict[str, set[str]] = {n: set() for n in flow.ops}
        for n, out in self.succ.items():
            for s in out:
                pred[s].add(n)
        self.pred = {n: frozenset(into) for n, into in pred.items()}
        self.pairs = _candidate_pairs(flow)
        self.shared: dict[tuple[str, int, str, int], tuple[int, bool, int]] = {}  # as fuse's shared_of
        self.kernel_facts: dict[tuple[str, ...], tuple] = {}  # node names -> _kernel_facts (kernels_from_groups)
        self._producers: dict[str, tuple[str, ...]] | None = None
        self._node_facts: dict[str, tuple[int, str | None, str]] | None = None
        # the first round's scores (_scored on the singletons): a singleton's first and last are its position
        scored, shared_of, pos = [], self.shared, self.pos
        reduction = {n: g.is_reduction for n, g in singletons.items()}
        for x, y in self.pairs:
            if x == y:
                continue
            hit = shared_of[x, 1, y, 1] = _shared(singletons[x], singletons[y])
            if hit[0] == 0:
                continue
            scored.append(((reduction[x] == reduction[y], hit[0], -abs(pos[x] - pos[y])), x, y))
        scored.sort(key=_first, reverse=True)
        self.scored = scored

    def node_facts(self, costed: CostedGraph) -> dict[str, tuple[int, str | None, str]]:
        """Per working node, its FLOPs, dtype and :func:`unknown_cost_note` of it alone, once per flow
        (``costed``: the graph the flow was made of): what a streaming region's kernel of it carries."""
        if self._node_facts is None:
            facts = {}
            for n in self.pos:
                node = costed[n]
                facts[n] = (node.cost.flops, node.dtype, unknown_cost_note(costed, (n,)))
            self._node_facts = facts
        return self._node_facts

    def producers(self, costed: CostedGraph) -> dict[str, tuple[str, ...]]:
        """Per node, the working nodes producing its inputs: :func:`producer_kernels` with each working
        node its own kernel, worked out once per flow (``costed``: the graph the flow was made of).

        A run's kernel dependencies follow from it: where ``kernel_of`` maps every working node to its
        kernel, ``producer_kernels(costed, kernel_of)[n]`` is ``kernel_of`` of these, in their order,
        without repeats (both look through the same non-working nodes in the same order, and dropping
        repeats before or after mapping names to kernels keeps the same first appearances)."""
        if self._producers is None:
            self._producers = producer_kernels(costed, {n: n for n in self.pos})
        return self._producers


# id(flow) -> (weak reference to the flow, its start): a flow is frozen and made once per costed graph
# (dfx.compile.dataflow), so its start is too; the weak reference keeps a recycled id from answering
# for another flow. Cleared by clear_fusion_cache.
_STARTS: dict[int, tuple[weakref.ref, _Start]] = {}


def _start(flow: Dataflow) -> _Start:
    return weak_memo(_STARTS, flow, _Start)


def _topological(state: _State) -> list[Group]:
    """Groups in a topological order of the group DAG, earliest first node first among the ready ones."""
    import heapq

    roots = list(state.groups)
    succ = {r: state.successors(r) for r in roots}
    indegree = dict.fromkeys(roots, 0)
    for r in roots:
        for s in succ[r]:
            indegree[s] += 1
    ready = [(state.groups[r].first, r) for r in roots if indegree[r] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, r = heapq.heappop(ready)
        out.append(state.groups[r])
        for s in succ[r]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, (state.groups[s].first, s))
    return out


def _kind(group: Group) -> KernelKind:
    return next(k for k in _KIND_ORDER if k in group.kinds)


def _kernel_facts(costed: CostedGraph, flow: Dataflow, g: Group) -> tuple:
    """What a kernel of ``g``'s nodes carries that its node set alone decides: kind, FLOPs, off-chip and
    on-chip bytes, dtype, and the note naming its nodes' ops with no cost rule."""
    dtype_node = max(g.nodes, key=lambda n: costed[n].cost.flops)
    onchip = flow.onchip_bytes(set(g.nodes))
    return (
        _kind(g),
        sum(costed[n].cost.flops for n in g.nodes),
        sum(flow.traffic[n] for n in g.nodes) - onchip,
        onchip,
        costed[dtype_node].dtype,
        unknown_cost_note(costed, g.nodes),
    )


def kernels_from_groups(costed: CostedGraph, flow: Dataflow, groups: list[Group], source: str) -> tuple[Kernel, ...]:
    """One :class:`Kernel` per group: FLOPs summed, off-chip and on-chip bytes from ``flow``."""
    kernel_of = {}
    names = []
    for i, g in enumerate(groups):
        name = f"k{i}_{g.nodes[0]}" if len(g.nodes) == 1 else f"k{i}_fused_{g.nodes[0]}"
        names.append(name)
        kernel_of.update(dict.fromkeys(g.nodes, name))
    start = _start(flow)
    producers = start.producers(costed)
    made = start.kernel_facts  # shared by the runs of this flow (the GPU's and the TPU's)
    kernels = []
    for name, g in zip(names, groups):
        nodes = tuple(g.nodes)
        facts = made.get(nodes)
        if facts is None:
            facts = made[nodes] = _kernel_facts(costed, flow, g)
        kind, flops, offchip, onchip, dtype, note = facts
        kdeps: dict[str, None] = {}  # producer_kernels(costed, kernel_of) of its nodes, less itself
        for n in g.nodes:
            for w in producers[n]:
                d = kernel_of[w]
                if d != name:
                    kdeps[d] = None
        reason = g.reasons[0] if g.reasons else f"{source}: runs alone"
        if len(g.reasons) > 1:
            reason += f" (+{len(g.reasons) - 1} more fusions)"
        reason += note
        kernels.append(
            Kernel.of(
                name=name,
                nodes=nodes,
                kind=kind,
                flops=flops,
                offchip_bytes=offchip,
                onchip_bytes=onchip,
                deps=tuple(kdeps),
                dtype=dtype,
                reason=reason,
            )
        )
    return tuple(kernels)


def streaming_kernels(costed: CostedGraph, flow: Dataflow, groups: list[Group], source: str) -> tuple[Kernel, ...]:
    """One :class:`Kernel` per operator, each in its group's streaming region (``region="r<i>"``).

    A kernel's off-chip bytes are its traffic less what stays on chip inside its region
    (:meth:`Dataflow.onchip_by_node`), so the region's kernels together move what the region would
    move as one unit.
    """
    start = _start(flow)
    producers, facts = start.producers(costed), start.node_facts(costed)
    kernel_of, i = {}, 0
    for g in groups:
        for n in g.nodes:
            kernel_of[n] = f"k{i}_{n}"
            i += 1
    ops, traffic = flow.ops, flow.traffic
    kernels = []
    for r, g in enumerate(groups):
        onchip = flow.onchip_by_node(set(g.nodes))
        why = g.reasons[0] if g.reasons else f"{source}: a region of one operator"
        about, region = f"region r{r} of {len(g.nodes)} operators: {why}", f"r{r}"
        for n in g.nodes:
            name = kernel_of[n]
            flops, dtype, note = facts[n]
            # producer_kernels' deps less itself: the producers are distinct nodes, one kernel each
            deps = tuple([kernel_of[w] for w in producers[n] if w != n])
            kernels.append(
                Kernel.of(
                    name=name,
                    nodes=(n,),
                    kind=ops[n].kind,
                    flops=flops,
                    offchip_bytes=traffic[n] - onchip[n],
                    onchip_bytes=onchip[n],
                    deps=deps,
                    dtype=dtype,
                    reason=about + note,
                    region=region,
                )
            )
    return tuple(kernels)


# (id(costed), rules) -> (weak reference to the costed graph, the input kernels, the pass's outputs).
# The fusion pass reads only the costed graph, its rules and its input program's kernels, so two
# profiles with equal rules (every GPU: InductorRules(); every TPU: XlaRules()) compiling one costed
# graph get the same kernels and decisions: computed once.
_FUSED: dict[tuple[int, object], tuple[weakref.ref, tuple[Kernel, ...], tuple]] = {}
# Dataflow chips' rules differ only by the on-chip capacity, which a decision reads in one comparison
# (a region's intermediates against it, ``DataflowRules.region_need``) and quotes in its reason.
# (id(costed), the rules at capacity 0) -> (weak reference, input kernels, outputs, the rules they
# were fused under, the largest region need accepted, the smallest refused). Another capacity C with
# largest accepted <= C < smallest refused answers every comparison of the run alike, so the run
# takes the same decisions in the same order: its outputs are these with the capacity re-quoted.
_BY_CAPACITY: dict[tuple[int, object], tuple[weakref.ref, tuple[Kernel, ...], tuple, object, float, float]] = {}
CACHE_STATS = {"hits": 0, "misses": 0}  # fusion_pass's cache look-ups in this process (tests read it)


def clear_fusion_cache() -> None:
    """Forget every cached fusion result and eager kernel tuple (and reset :data:`CACHE_STATS`)."""
    from dfx.compile.lower import clear_eager_kernels

    clear_eager_kernels()
    _STARTS.clear()
    _FUSED.clear()
    _BY_CAPACITY.clear()
    CACHE_STATS.update(hits=0, misses=0)


class _CapacityProbe:
    """``rules`` (capacity-parameterised: ``region_need``, ``with_capacity``) recording the largest
    region need it accepted and the smallest it refused."""

    def __init__(self, rules) -> None:
        self.rules = rules
        self.target, self.limit_nodes, self.streams = rules.target, rules.limit_nodes, rules.streams
        self.largest_accepted, self.smallest_refused = -math.inf, math.inf

    def can_fuse(self, a: Group, b: Group, vertical: bool, flow: Dataflow) -> tuple[bool, str]:
        ok, reason = self.rules.can_fuse(a, b, vertical, flow)
        need = self.rules.region_need(a, b)
        if ok:
            self.largest_accepted = max(self.largest_accepted, need)
        else:  # refused for whatever reason: only narrows the capacities that reuse the run
            self.smallest_refused = min(self.smallest_refused, need)
        return ok, reason


def _requoted(outputs: tuple, program: Program, source, rules) -> tuple:
    """A run's outputs under ``source`` rules, as the same run under ``rules`` (another capacity) writes them."""
    kernels, decisions, notes, _ = outputs
    requote = source.requoter(rules) if hasattr(source, "requoter") else lambda text: source.requote(text, rules)
    kernels = tuple(_with_reason(k, requote(k.reason)) for k in kernels)
    decisions = tuple(d.with_reason(requote(d.reason)) for d in decisions)
    return kernels, decisions, notes, kernels != program.kernels


def _with_reason(kernel: Kernel, reason: str) -> Kernel:
    """``kernel`` with ``reason`` (itself where the reason is unchanged: a region of one operator quotes no capacity)."""
    return kernel if reason == kernel.reason else kernel.with_(reason=reason)


def fusion_pass(rules: FusionRules):
    """The fusion pass for ``rules``: ``run(program, costed, profile) -> PassResult``.

    The result is computed once per (costed graph, rules, input kernels) in a process: the pass
    reads nothing of ``profile``, and rules are compared by value (frozen dataclasses; rules that
    cannot be hashed are never cached). Dataflow rules of another on-chip capacity reuse a run whose
    every capacity comparison they answer alike (see ``_BY_CAPACITY``). Exact reuse, never across
    sizes: the fusion decisions read sizes (the candidates' order by shared bytes, Inductor's and
    XLA's ``(numel, rnumel)`` checks, a dataflow region's bytes against the on-chip capacity), so
    each size is fused on its own.
    """
    try:
        hash(rules)
        cacheable = True
    except TypeError:
        cacheable = False
    by_capacity = cacheable and hasattr(rules, "region_need") and hasattr(rules, "with_capacity")
    family = rules.with_capacity(0.0) if by_capacity else None

    def lookup(program: Program, costed: CostedGraph):
        hit = _FUSED.get((id(costed), rules)) if cacheable else None
        if hit is not None and hit[0]() is costed and hit[1] == program.kernels:
            return hit[2]
        hit = _BY_CAPACITY.get((id(costed), family)) if by_capacity else None
        if hit is not None and hit[0]() is costed and hit[1] == program.kernels:
            _, _, outputs, source, largest_accepted, smallest_refused = hit
            if largest_accepted <= rules.capacity_bytes < smallest_refused:
                return _requoted(outputs, program, source, rules)
        return None

    def run(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
        outputs = lookup(program, costed)
        if outputs is not None:
            CACHE_STATS["hits"] += 1
        else:
            CACHE_STATS["misses"] += 1
            probe = _CapacityProbe(rules) if by_capacity else rules
            outputs = _fuse_program(program, costed, probe)
            if cacheable:
                key = (id(costed), rules)
                _FUSED[key] = (weak_key(_FUSED, key, costed), program.kernels, outputs)
            if by_capacity:
                key = (id(costed), family)
                _BY_CAPACITY[key] = (
                    weak_key(_BY_CAPACITY, key, costed),
                    program.kernels,
                    outputs,
                    rules,
                    probe.largest_accepted,
                    probe.smallest_refused,
                )
        kernels, decisions, notes, modified = outputs
        new = program.with_(target=rules.target, kernels=kernels, meta={**program.meta, "fusion_decisions": decisions})
        return PassResult(new, modified=modified, notes=notes)

    return run


def _fuse_program(program: Program, costed: CostedGraph, rules: FusionRules):
    flow = dataflow(costed)
    groups, decisions = fuse(flow, rules)
    build = streaming_kernels if rules.streams else kernels_from_groups
    kernels = build(costed, flow, groups, rules.target)
    fused = sum(d.fused for d in decisions)
    unit = "streaming regions" if rules.streams else "kernels"
    notes = (
        f"{rules.target} rules: {len(program.kernels)} operators -> {len(groups)} {unit}, "
        f"{fused} fusions taken, {len(decisions) - fused} refused",
    )
    return kernels, tuple(decisions), notes, kernels != program.kernels
