"""dfx, the dataflow explorer: a PyTorch model as a costed dataflow graph on GPUs and accelerators.

>>> import dfx
>>> analysis = dfx.analyze("gpt2-block", hardware=["nvidia-h100-sxm", "ibm-spyre"])  # doctest: +SKIP
>>> analysis.to_dict()["schema"]  # doctest: +SKIP
'dfx.analysis/1'

Importing ``dfx`` does not import torch; :func:`capture` and :func:`analyze` on a module do.
"""

from __future__ import annotations

import copyreg
from types import MappingProxyType
from typing import Any

from dfx._version import __version__


def _mapping_proxy(items: dict) -> MappingProxyType:
    """A read-only view of ``items``: what an unpickled ``MappingProxyType`` is rebuilt with."""
    return MappingProxyType(items)


def _reduce_mapping_proxy(proxy: MappingProxyType) -> tuple[Any, tuple[dict]]:
    """Pickle a read-only mapping as one over a copy of its items: dfx's frozen results keep their
    mappings in ``MappingProxyType`` (extras, ridges, fallbacks), which pickle cannot take by itself
    (``TypeError: cannot pickle 'mappingproxy' object``), so a result could not go through
    multiprocessing, joblib or a pickle file."""
    return _mapping_proxy, (dict(proxy),)


copyreg.pickle(MappingProxyType, _reduce_mapping_proxy)

__all__ = [
    "Analysis",
    "Graph",
    "analyze",
    "annotate",
    "buckets",
    "capture",
    "guards",
    "load_profile",
    "serve",
    "simulate",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Lazy re-exports keep `import dfx` light and torch-free.
    if name in ("analyze", "Analysis"):
        from dfx import analysis

        return getattr(analysis, name)
    if name == "capture":
        import importlib

        return importlib.import_module("dfx.capture")  # a callable module: dfx.capture(model, args)
    if name == "Graph":
        from dfx.ir import Graph

        return Graph
    if name == "annotate":
        from dfx.costs import annotate

        return annotate
    if name == "load_profile":
        from dfx.hardware import load_profile

        return load_profile
    if name == "simulate":
        from dfx.sim import simulate

        return simulate
    if name in ("guards", "buckets"):
        from dfx import shapes

        return getattr(shapes, name)
    if name == "serve":
        import importlib

        return importlib.import_module("dfx.serve")  # a callable module: dfx.serve(config)
    if name == "models":
        import importlib

        return importlib.import_module("dfx.models")
    raise AttributeError(f"module 'dfx' has no attribute {name!r}")
