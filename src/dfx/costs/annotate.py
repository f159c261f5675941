"""Cost every node of a graph: ``annotate(graph) -> CostedGraph``, and ``coverage(graph)``.

A node's cost is the sum of its aten calls' costs (eager semantics: each call reads its inputs from
memory and writes its outputs back; a mixture of experts' GEMMs read the weights of the experts
uniform routing is expected to touch, :func:`dfx.costs.moe.apply_routing`); its category is the highest-ranked among its calls
(:data:`~dfx.costs.record.CATEGORY_RANK`). Placeholders, ``get_attr`` and ``output`` cost nothing.

An aten call no rule covers (after the registry's fallback, see :mod:`dfx.costs.registry`) is
never a silent zero: it is warned about once per op name per :func:`annotate` call
(:class:`~dfx.costs.record.UnknownOpWarning`), left out of the totals, listed in the node's
``unknown_ops`` and in ``CostedGraph.unknown_ops`` with its count and nodes. A rule that raises on
its arguments is reported the same way, with the error as the reason.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

from dfx.costs.record import (
    CATEGORY_RANK,
    CallCost,
    Category,
    Cost,
    CostedGraph,
    CostedNode,
    Coverage,
    UnknownOp,
    UnknownOpWarning,
)
from dfx.costs.moe import GROUPED_OPS, UNIFORM, apply_routing
from dfx.costs.registry import REGISTRY, Registry
from dfx.ir import AtenCall, Graph, Node

__all__ = ["annotate", "coverage"]

_NO_COST_OPCODES = ("placeholder", "get_attr", "output")
_ZERO = Cost.zeros()


@dataclass
class _Unknowns:
    """Unknown calls seen while costing a graph, by op name, in first-seen order."""

    counts: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def add(self, op: str, node: str, reason: str) -> None:
        self.counts[op] = self.counts.get(op, 0) + 1
        names = self.nodes.setdefault(op, [])
        if node not in names:
            names.append(node)
        self.reasons.setdefault(op, reason)

    def records(self) -> tuple[UnknownOp, ...]:
        return tuple(UnknownOp(op, n, tuple(self.nodes[op]), self.reasons[op]) for op, n in self.counts.items())


def _cost_calls(node: Node, registry: Registry, unknowns: _Unknowns) -> Iterator[CallCost | str]:
    """Each call's :class:`CallCost`, or its op name when it could not be costed."""
    for call in node.aten_calls:
        rule = registry.rule_for(call.op)
        if rule is None:
            unknowns.add(call.op, node.name, "no cost rule")
            yield call.op
            continue
        try:
            yield rule(call)
        except Exception as exc:  # a rule that cannot read these arguments: report, never crash
            unknowns.add(call.op, node.name, f"cost rule {rule.key!r} failed: {type(exc).__name__}: {exc}")
            yield call.op


def _cost_node(node: Node, registry: Registry, unknowns: _Unknowns) -> CostedNode:
    if node.op in _NO_COST_OPCODES:
        return CostedNode(node, Cost.zeros(), Category.NONE)
    calls: list[CallCost] = []
    unknown: dict[str, None] = {}  # op names not costed, in first-seen order
    for call in node.aten_calls:  # _cost_calls, inlined: this runs once per node of every graph read
        rule = registry.rule_for(call.op)
        if rule is None:
            unknowns.add(call.op, node.name, "no cost rule")
            unknown[call.op] = None
            continue
        try:
            calls.append(rule(call))
        except Exception as exc:  # a rule that cannot read these arguments: report, never crash
            unknowns.add(call.op, node.name, f"cost rule {rule.key!r} failed: {type(exc).__name__}: {exc}")
            unknown[call.op] = None
    if len(calls) == 1:  # most nodes: max() of one call, without hashing its category (an enum: a Python __hash__)
        category = calls[0].category
    else:
        category = max((c.category for c in calls), key=CATEGORY_RANK.__getitem__, default=Category.NONE)
    by_category: dict[str, int] = {}
    total = _ZERO  # an operand only: each sum below is a new Cost
    for c in calls:  # the totals in call order, as sum(costs, Cost.zeros()) adds them
        total = total + c.cost
        for cat, flops in c.flops_by_category:
            by_category[cat] = by_category.get(cat, 0) + flops
    return CostedNode(node, total, category, tuple(by_category.items()), tuple(unknown), tuple(calls))


def _warn(unknown: tuple[UnknownOp, ...]) -> None:
    for u in unknown:
        where = ", ".join(u.nodes[:3]) + (", ..." if len(u.nodes) > 3 else "")
        warnings.warn(
            f"dfx.costs: {u.reason} for {u.target} ({u.count} call(s), in node(s) {where}); its cost is "
            "unknown, not zero: it is left out of the totals and listed in CostedGraph.unknown_ops",
            UnknownOpWarning,
            stacklevel=3,
        )


def annotate(graph: Graph, *, registry: Registry | None = None, reuse: CostedGraph | None = None) -> CostedGraph:
    """Cost every node of ``graph`` with the registered rules.

    Parameters
    ----------
    graph : Graph
        A captured (or deserialised) graph whose nodes carry their aten calls.
    registry : Registry, optional
        The rules to use; the default registry holds every rule in :mod:`dfx.costs`.
    reuse : CostedGraph, optional
        A graph costed by ``annotate`` with the same rules, sharing node objects with ``graph``
        (the decode steps of one KV range, :mod:`dfx.inference.kv_range`): a node that *is* one of
        its nodes, and met no unknown op there, takes its :class:`CostedNode` as it stands (a node's
        cost is a pure function of the node and the rules); every other node is costed.

    Returns
    -------
    CostedGraph
        One :class:`CostedNode` per node, in graph order, plus the unknown ops.

    Warns
    -----
    UnknownOpWarning
        Once per aten op name with no rule (or whose rule failed), naming the op and its nodes.

    Examples
    --------
    >>> from dfx.ir import AtenCall, Graph, Node, TensorSpec
    >>> a, b = TensorSpec((4, 8), "float32"), TensorSpec((8, 5), "float32")
    >>> mm = AtenCall("aten.mm.default", (a, b), outputs=(TensorSpec((4, 5), "float32"),))
    >>> costed = annotate(Graph((Node("mm", "call_function", "aten.mm.default", aten_calls=(mm,)),)))
    >>> costed["mm"].cost.flops  # 2 * 4 * 8 * 5
    320
    """
    registry = registry or REGISTRY
    unknowns = _Unknowns()
    if reuse is None:
        nodes = tuple(_cost_node(n, registry, unknowns) for n in graph.nodes)
    else:
        known = {id(c.node): c for c in reuse.nodes if not c.unknown_ops}  # c holds its node: ids stay apart
        nodes = tuple(
            c if c is not None and c.node is n else _cost_node(n, registry, unknowns)
            for n, c in ((n, known.get(id(n))) for n in graph.nodes)
        )
    unknown = unknowns.records()
    _warn(unknown)
    calls = sum(len(n.aten_calls) for n in graph.nodes if n.op not in _NO_COST_OPCODES)
    meta = {"aten_calls": calls, "costed_calls": calls - sum(u.count for u in unknown)}
    costed = CostedGraph(graph, nodes, unknown, meta)
    if any(c.packet in GROUPED_OPS for n in graph.nodes for c in n.aten_calls):
        costed = apply_routing(costed, UNIFORM)  # expert weights: the experts uniform routing touches
    return costed


def coverage(graph: Graph | CostedGraph, *, registry: Registry | None = None) -> Coverage:
    """How many of the graph's aten calls have a working cost rule; the others, listed.

    Does not warn. A :class:`CostedGraph` is read as annotated; a :class:`Graph` is checked
    against ``registry`` without keeping the costs.

    Examples
    --------
    >>> from dfx.ir import AtenCall, Graph, Node
    >>> g = Graph((Node("f", "call_function", "f", aten_calls=(AtenCall("aten.fft_fft.default"),)),))
    >>> cov = coverage(g)
    >>> cov.fraction, cov.unknown[0].target
    (0.0, 'aten.fft_fft.default')
    """
    if isinstance(graph, CostedGraph):
        calls = sum(len(n.node.aten_calls) for n in graph.nodes if n.node.op not in _NO_COST_OPCODES)
        return Coverage(calls, calls - sum(u.count for u in graph.unknown_ops), graph.unknown_ops)
    unknowns = _Unknowns()
    registry = registry or REGISTRY
    calls = 0
    for node in graph.nodes:
        if node.op not in _NO_COST_OPCODES:
            calls += len(node.aten_calls)
            for _ in _cost_calls(node, registry, unknowns):
                pass
    unknown = unknowns.records()
    return Coverage(calls, calls - sum(u.count for u in unknown), unknown)


def cost_calls(calls: tuple[AtenCall, ...] | list[AtenCall], *, registry: Registry | None = None) -> Cost:
    """Total cost of some aten calls outside a graph; raises ``KeyError`` naming an op with no rule."""
    registry = registry or REGISTRY
    total = Cost.zeros()
    for call in calls:
        rule = registry.rule_for(call.op)
        if rule is None:
            raise KeyError(f"no cost rule for {call.op}")
        total = total + rule(call).cost
    return total
