"""Serving under load: arriving requests, a runtime's batching, and iterations priced by dfx.

``dfx serve`` and :func:`simulate` (``docs/serving.md``): requests arrive (Poisson at a rate, a
closed loop of users, or all at once), a scheduler per machine batches them (``continuous``:
vLLM/SGLang over a paged KV cache; ``static``: a compiled batch with prompt buckets;
``disaggregated``: prefill and decode pools), and each iteration's time comes from dfx's own
priced prefill and decode steps (:mod:`dfx.serve.steps`). The module is callable:
``dfx.serve(config)`` is ``dfx.serve.simulate(config)``.
"""

from __future__ import annotations

import sys
import types

from dfx.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (dfx.lazy): registering `dfx serve`
# loads none of the simulator
_EXPORTS = {
    "MachineServing": "api",
    "ServeConfig": "api",
    "ServingResult": "api",
    "simulate": "api",
    "default_scheduler": "policy",
    "Arrivals": "workload",
    "Request": "workload",
    "make_requests": "workload",
    "parse_lengths": "workload",
}

__all__ = [
    "Arrivals",
    "MachineServing",
    "Request",
    "ServeConfig",
    "ServingResult",
    "default_scheduler",
    "make_requests",
    "parse_lengths",
    "simulate",
]


class _CallableModule(types.ModuleType):
    """``dfx.serve(config)`` forwards to :func:`simulate` (as ``dfx.capture(model, args)`` does)."""

    def __call__(self, *args, **kwargs):
        from dfx.serve.api import simulate

        return simulate(*args, **kwargs)


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
sys.modules[__name__].__class__ = _CallableModule
