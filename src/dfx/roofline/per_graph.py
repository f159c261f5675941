"""What an evaluation derives from a costed graph alone, made once per graph and shared by its profiles.

A sweep evaluates one graph on profile after profile (``dfx analyze`` on several machines does too),
and some of what each evaluation derives does not depend on the profile: the timing of a node that
does no work, the dtype the ridge points are quoted at, each node's working set. :func:`per_graph`
computes such a fact once per graph.

Why it is sound: ``fact(costed)`` must be a pure function of the graph, and a
:class:`~dfx.costs.CostedGraph` is frozen (its nodes, costs and tensors too), so the value cannot go
stale. An entry is kept per graph while the graph lives (:func:`dfx.memo.weak_memo`: freed with
it), then per fact. What a fact returns is shared by every caller,
so it must be immutable (tuples, frozen records, ``MappingProxyType``). The result of an evaluation
therefore does not depend on which evaluation of the graph came first.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from dfx.costs.record import CostedGraph

__all__ = ["clear_per_graph", "per_graph"]

T = TypeVar("T")

# id(costed) -> (weak reference to the costed graph, {fact: fact(costed)}): gone with the graph
_FACTS: dict[int, tuple[Any, dict[Callable[[CostedGraph], Any], Any]]] = {}


def per_graph(costed: CostedGraph, fact: Callable[[CostedGraph], T]) -> T:
    """``fact(costed)``, computed once while ``costed`` lives.

    ``fact`` is a module-level function of the graph only, returning an immutable value (module
    docstring).
    """
    from dfx.memo import weak_memo

    facts = weak_memo(_FACTS, costed, lambda _: {})
    if fact not in facts:
        facts[fact] = fact(costed)
    return facts[fact]


def clear_per_graph() -> None:
    """Forget every graph's facts (a benchmark pass then derives them afresh, as a sweep's process does)."""
    _FACTS.clear()
