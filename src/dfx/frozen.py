"""Copies of frozen dataclasses without ``dataclasses.replace``'s per-field walk.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, and ``replace``
walks every field to call it; the compile and roofline stages copy a kernel, a program or a timing
per node, pass and profile (about a tenth of a sweep point's time went there, ``docs/sweeps.md``,
"Speed"). :func:`copy_with` fills the copy's ``__dict__`` directly, which gives the same object for a
class that validates nothing on construction (no ``__post_init__``); any other class, or an unknown
field, goes through ``replace`` and so raises its ``TypeError``.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import cache
from typing import Any, TypeVar

__all__ = ["copy_with"]

T = TypeVar("T")


@cache
def _direct_fields(cls: type) -> frozenset[str]:
    """The field names a copy of ``cls`` may set directly; empty when ``cls`` has a ``__post_init__``."""
    return frozenset() if hasattr(cls, "__post_init__") else frozenset(f.name for f in fields(cls))


def copy_with(obj: T, changes: dict[str, Any]) -> T:
    """``dataclasses.replace(obj, **changes)`` for a frozen dataclass, without its per-field walk.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class P:
    ...     x: int
    ...     y: int = 0
    >>> copy_with(P(1, 2), {"y": 5})
    P(x=1, y=5)
    >>> copy_with(P(1), {"z": 1})
    Traceback (most recent call last):
    ...
    TypeError: P.__init__() got an unexpected keyword argument 'z'
    """
    cls = obj.__class__
    allowed = _DIRECT.get(cls)
    if allowed is None:
        allowed = _DIRECT[cls] = _direct_fields(cls)
    if not changes.keys() <= allowed:
        return replace(obj, **changes)
    new = object.__new__(cls)
    fill = new.__dict__
    fill.update(obj.__dict__)
    fill.update(changes)
    return new


_DIRECT: dict[type, frozenset[str]] = {}  # class -> _direct_fields(class): a dict look-up per copy
