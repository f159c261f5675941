"""Packages whose public names are imported on first use (PEP 562).

A package ``__init__`` that re-exports its submodules' names makes every import of any of them
(``dfx.cli`` registering a command, a sweep worker timing one model) load them all. With
:func:`lazy_exports` the package lists ``name -> submodule`` instead, and a name's submodule is
imported when the name is first read; it is then kept in the package's namespace.

A name that is also a submodule's name (``dfx.sim.gantt``, the function in ``dfx/sim/gantt.py``)
must stay an eager import: importing the submodule sets the package's attribute to the module, which
would shadow the lazy function.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for ``exports`` (name -> submodule).

    ``package`` is the package's ``__name__`` and ``namespace`` its ``globals()``. ``__getattr__``
    raises ``AttributeError`` for a name not in ``exports``, as a module without it would.

    Examples
    --------
    >>> ns = {}
    >>> getattr_, dir_ = lazy_exports("dfx", ns, {"copy_with": "frozen"})
    >>> getattr_("copy_with").__name__, "copy_with" in ns, dir_()
    ('copy_with', True, ['copy_with'])
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'dfx' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(f"{package}.{module}"), name)
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})  # a loaded name is in both

    return __getattr__, __dir__
