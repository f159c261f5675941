"""Data lifetime in the dataflow execution model: live ranges, scratchpad placement, peak footprint.

The schedule is the graph's topological order run as one stream (step i runs node i); dfx.sim's
timelines are not needed. A tensor is born at the step of the node producing it and dies after
the step of its last consumer (liveness from last use, as FX's ``garbage_collect_values``). A view
(reshape, transpose, slice, getitem) makes no new bytes: its uses extend the life of the tensor it
views. Parameters and buffers are not activations: they are the weights' footprint, counted by
:mod:`dfx.arch.memory.capacity`.

Placement is first fit in schedule order without eviction: a tensor stays in the scratchpad if,
when it is born, it fits in what the tensors live there leave free; otherwise it spills off chip
for its whole life. This is what a static compiler does when it cannot reorder (and an upper bound
on spills for one that can).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dfx.ir import Graph, Node

__all__ = ["LiveRange", "Lifetime", "lifetime", "live_ranges", "peak_live_bytes"]

_ALIAS_CATEGORIES = {"view", "none"}  # outputs share their input's storage
_WEIGHT_KINDS = {"parameter", "buffer", "constant"}


@dataclass(frozen=True)
class LiveRange:
    """One activation tensor: who makes it, how big, from which step to which, and where it lives."""

    tensor: str  # the producing node (its outputs together; views resolve to it)
    nbytes: int
    start: int  # schedule step of the producer
    end: int  # schedule step of the last consumer (= start if never used)
    on_chip: bool = True
    graph_input: bool = False
    graph_output: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "bytes": self.nbytes,
            "start": self.start,
            "end": self.end,
            "on_chip": self.on_chip,
            "graph_input": self.graph_input,
            "graph_output": self.graph_output,
        }


@dataclass(frozen=True)
class Lifetime:
    """Live ranges placed against a scratchpad of ``capacity_bytes``.

    ``peak_bytes`` is the most activation bytes alive at one step wherever they live;
    ``peak_onchip_bytes`` the most held in the scratchpad; ``spilled_bytes`` the bytes of the
    tensors that did not fit.
    """

    ranges: tuple[LiveRange, ...]
    capacity_bytes: float
    peak_bytes: int
    peak_step: int
    peak_onchip_bytes: int
    spilled_bytes: int

    def spilled(self) -> frozenset[str]:
        return frozenset(r.tensor for r in self.ranges if not r.on_chip)

    def to_dict(self) -> dict[str, Any]:
        return {
            "capacity_bytes": self.capacity_bytes,
            "peak_bytes": self.peak_bytes,
            "peak_step": self.peak_step,
            "peak_onchip_bytes": self.peak_onchip_bytes,
            "spilled_bytes": self.spilled_bytes,
            "tensors": [r.to_dict() for r in self.ranges],
        }


def _is_alias(node: Node, categories: dict[str, str]) -> bool:
    return bool(node.inputs) and categories.get(node.name) in _ALIAS_CATEGORIES


def storage_roots(graph: Graph, categories: dict[str, str] | None = None) -> dict[str, str]:
    """Map each node to the node owning the storage its output lives in (itself unless a view)."""
    categories = categories or {}
    roots: dict[str, str] = {}
    for node in graph.nodes:
        roots[node.name] = roots[node.inputs[0].src] if _is_alias(node, categories) else node.name
    return roots


def live_ranges(graph: Graph, categories: dict[str, str] | None = None) -> tuple[LiveRange, ...]:
    """The activation tensors of ``graph`` and their live ranges over the topological schedule.

    ``categories`` maps node name to cost category (``"view"`` and ``"none"`` alias their input);
    without it every node owns its output. Weights (placeholders of kind parameter, buffer or
    constant) and the ``output`` node have no range.

    Examples
    --------
    >>> from dfx.ir import Edge, Graph, Node, TensorSpec
    >>> s = TensorSpec((4,), "float32")
    >>> g = Graph((Node("x", "placeholder", "x", outputs=(s,), input_kind="input"),
    ...            Node("y", "call_function", "aten.relu.default", inputs=(Edge("x"),), outputs=(s,)),
    ...            Node("out", "output", "output", inputs=(Edge("y"),))))
    >>> [(r.tensor, r.start, r.end) for r in live_ranges(g)]
    [('x', 0, 1), ('y', 1, 2)]
    """
    categories = categories or {}
    roots = storage_roots(graph, categories)
    step = {n.name: i for i, n in enumerate(graph.nodes)}
    last: dict[str, int] = {}
    outputs: set[str] = set()
    for node in graph.nodes:
        for edge in node.inputs:
            root = roots[edge.src]
            last[root] = max(last.get(root, 0), step[node.name])
            if node.op == "output":
                outputs.add(root)
    ranges = []
    for node in graph.nodes:
        if node.op == "output" or node.input_kind in _WEIGHT_KINDS or roots[node.name] != node.name:
            continue
        nbytes = sum(o.nbytes for o in node.outputs)
        if nbytes == 0:
            continue
        i = step[node.name]
        ranges.append(
            LiveRange(
                node.name,
                nbytes,
                i,
                max(i, last.get(node.name, i)),
                graph_input=node.op == "placeholder",
                graph_output=node.name in outputs,
            )
        )
    return tuple(ranges)


def peak_live_bytes(graph: Graph, categories: dict[str, str] | None = None) -> int:
    """``lifetime(graph, math.inf, categories).peak_bytes`` without placing the ranges: the most
    activation bytes alive at one step (a range is alive from its start to its end step, both
    included), from each range's bytes added at its start and taken off after its end (whole bytes,
    so the running sum is each step's exact total).

    Examples
    --------
    >>> from dfx.ir import Edge, Graph, Node, TensorSpec
    >>> s = TensorSpec((4,), "float32")  # 16 B
    >>> g = Graph((Node("x", "placeholder", "x", outputs=(s,), input_kind="input"),
    ...            Node("y", "call_function", "aten.relu.default", inputs=(Edge("x"),), outputs=(s,)),
    ...            Node("out", "output", "output", inputs=(Edge("y"),))))
    >>> peak_live_bytes(g)  # at y's step, x (read) and y (written)
    32
    """
    # live_ranges' ranges, each added to ``change`` where it is made instead of kept as a record (a sweep
    # asks for every graph's peak; the same roots, last reads and bytes, in the same order)
    categories = categories or {}
    nodes = graph.nodes
    roots: dict[str, str] = {}  # storage_roots
    for node in nodes:
        name, inputs = node.name, node.inputs
        roots[name] = roots[inputs[0].src] if inputs and categories.get(name) in _ALIAS_CATEGORIES else name
    last: dict[str, int] = {}  # each storage's last reader's step
    for i, node in enumerate(nodes):
        for edge in node.inputs:
            root = roots[edge.src]
            if last.get(root, 0) < i:
                last[root] = i
    change = [0] * (len(nodes) + 1)
    for i, node in enumerate(nodes):
        name = node.name
        if node.op == "output" or node.input_kind in _WEIGHT_KINDS or roots[name] != name:
            continue
        nbytes = sum(o.nbytes for o in node.outputs)
        if nbytes == 0:
            continue
        change[i] += nbytes
        change[max(i, last.get(name, i)) + 1] -= nbytes
    peak = total = 0
    for step in range(len(graph.nodes)):
        total += change[step]
        if total > peak:
            peak = total
    return peak


def lifetime(graph: Graph, capacity_bytes: float, categories: dict[str, str] | None = None) -> Lifetime:
    """Place the live ranges of ``graph`` in a scratchpad of ``capacity_bytes`` (first fit, no eviction).

    A tensor is freed after its last consumer's step, so a consumer's inputs and outputs are alive
    together at its step.

    Examples
    --------
    >>> from dfx.ir import Edge, Graph, Node, TensorSpec
    >>> s = TensorSpec((4,), "float32")  # 16 B
    >>> g = Graph((Node("x", "placeholder", "x", outputs=(s,), input_kind="input"),
    ...            Node("y", "call_function", "aten.relu.default", inputs=(Edge("x"),), outputs=(s,)),
    ...            Node("out", "output", "output", inputs=(Edge("y"),))))
    >>> lt = lifetime(g, 16)
    >>> lt.peak_bytes, lt.peak_onchip_bytes, sorted(lt.spilled())
    (32, 16, ['y'])
    """
    ranges = live_ranges(graph, categories)
    born: dict[int, list[LiveRange]] = {}
    for r in ranges:
        born.setdefault(r.start, []).append(r)
    placed: list[LiveRange] = []
    alive: list[LiveRange] = []
    peak = peak_step = peak_on = 0
    for step in range(len(graph.nodes)):
        alive = [r for r in alive if r.end >= step]
        for r in born.get(step, []):
            used = sum(a.nbytes for a in alive if a.on_chip)
            r = LiveRange(
                r.tensor, r.nbytes, r.start, r.end, used + r.nbytes <= capacity_bytes, r.graph_input, r.graph_output
            )
            placed.append(r)
            alive.append(r)
        total = sum(a.nbytes for a in alive)
        if total > peak:
            peak, peak_step = total, step
        peak_on = max(peak_on, sum(a.nbytes for a in alive if a.on_chip))
    spilled = sum(r.nbytes for r in placed if not r.on_chip)
    return Lifetime(tuple(placed), capacity_bytes, peak, peak_step, peak_on, spilled)
