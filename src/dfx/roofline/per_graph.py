"""What an evaluation derives from a costed graph alone, made once per graph and shared by its profiles.

A sweep evaluates one graph on profile after profile (``dfx analyze`` on several machines does too),
and some of what each evaluation derives does not depend on the profile: the timing of a node that
does no work, the dtype the ridge points are quoted at, each node's working set. :func:`per_graph`
computes such a fact once per graph.

Why it is sound: ``fact(costed)`` must be a pure function of the graph, and a
:class:`~dfx.costs.CostedGraph` is frozen (its nodes, costs and tensors too), so the value cannot go
stale. An entry is keyed by the graph's identity and holds the graph, so an ``id`` is not reused
while its entry lives; a hit is checked with ``is``. What a fact returns is shared by every caller,
so it must be immutable (tuples, frozen records, ``MappingProxyType``). The result of an evaluation
therefore does not depend on which evaluation of the graph came first.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from dfx.costs.record import CostedGraph

__all__ = ["clear_per_graph", "per_graph"]

T = TypeVar("T")

# (id(costed), fact) -> (the costed graph, fact(costed)). A few graphs' worth of entries: the
# evaluations of one graph follow each other.
_FACTS: dict[tuple[int, Callable[[CostedGraph], Any]], tuple[CostedGraph, Any]] = {}
_FACTS_MAX = 32


def per_graph(costed: CostedGraph, fact: Callable[[CostedGraph], T]) -> T:
    """``fact(costed)``, computed once while ``costed`` is among the last few graphs asked about.

    ``fact`` is a module-level function of the graph only, returning an immutable value (module
    docstring).
    """
    key = (id(costed), fact)
    hit = _FACTS.get(key)
    if hit is not None and hit[0] is costed:
        return hit[1]
    value = fact(costed)
    if len(_FACTS) >= _FACTS_MAX:
        del _FACTS[next(iter(_FACTS))]
    _FACTS[key] = (costed, value)
    return value


def clear_per_graph() -> None:
    """Forget every graph's facts (a benchmark pass then derives them afresh, as a sweep's process does)."""
    _FACTS.clear()
