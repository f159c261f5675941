"""Values made once per living object: caches that let go of an entry when its object dies.

An analysis derives many facts from one costed graph (its data flow, its fused kernels, a machine's
plan of it) and several evaluations ask for each; a cache keyed by the graph's ``id`` answers them.
Held strongly, such an entry keeps its graph and everything derived from it alive: a long
generation, which builds and evaluates one decode step's graph after another, grew by a graph's
worth (about 30 MiB for Llama-2-70B on Groq) per step its caches still held. Here an entry holds a
weak reference whose callback removes the entry when the graph is freed.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, TypeVar

__all__ = ["weak_key", "weak_memo"]

T = TypeVar("T")


def weak_key(cache: dict, key: Any, obj: Any) -> weakref.ref:
    """A weak reference to ``obj`` that removes ``cache[key]`` when ``obj`` dies (if that entry is
    still the one made with this reference): an entry never outlives the object it was made for.

    Store it as the entry's first element; a look-up checks that it still gives the object asked
    about (an id is recycled only after its object died, and by then the entry is gone).

    >>> class G: pass
    >>> cache, g = {}, G()
    >>> cache[id(g)] = (weak_key(cache, id(g), g), "made")
    >>> del g  # the entry goes with its object (CPython frees it at once)
    >>> cache
    {}
    """

    def drop(ref: weakref.ref) -> None:
        entry = cache.get(key)
        if entry is not None and entry[0] is ref:
            del cache[key]

    return weakref.ref(obj, drop)


def weak_memo(cache: dict, obj: Any, make: Callable[[Any], T]) -> T:
    """``make(obj)``, made once per living object: kept in ``cache`` under ``id(obj)`` beside a weak
    reference to ``obj`` that removes the entry when ``obj`` dies (:func:`weak_key`), so a dead
    object's value is freed with it and a recycled id never answers for another object.

    >>> class G: pass
    >>> cache, g = {}, G()
    >>> weak_memo(cache, g, lambda o: [o]) is weak_memo(cache, g, lambda o: [])  # made once
    True
    """
    hit = cache.get(id(obj))
    if hit is not None and hit[0]() is obj:
        return hit[1]
    value = make(obj)
    cache[id(obj)] = (weak_key(cache, id(obj), obj), value)
    return value
