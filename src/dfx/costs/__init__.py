"""The cost model: FLOPs, bytes and a category for every aten call of a captured graph.

``annotate(graph)`` returns a :class:`CostedGraph`; ``coverage(graph)`` lists the aten ops no rule
covers. Rules live in the ``rules_*`` modules, one per kind of op, and register themselves with
:func:`register_cost` when imported below. The conventions are in ``docs/cost-model.md``.
This package is torch-free: it reads only :mod:`dfx.ir` specs.
"""

from dfx.costs import (  # noqa: F401  (imported for their @register_cost side effect)
    rules_attention,
    rules_composite,
    rules_backward,
    rules_conv,
    rules_einsum,
    rules_fft,
    rules_linalg,
    rules_loss,
    rules_matmul,
    rules_memory,
    rules_moe,
    rules_norm,
    rules_optim,
    rules_pointwise,
    rules_pool,
    rules_reduce,
    rules_rnn,
    rules_view,
)
from dfx.costs.annotate import annotate, cost_calls, coverage
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
from dfx.costs.registry import REGISTRY, CostRule, Registry, cost_of_call, lookup_keys, register_cost, rule_for

__all__ = [
    "CATEGORY_RANK",
    "REGISTRY",
    "CallCost",
    "Category",
    "Cost",
    "CostRule",
    "CostedGraph",
    "CostedNode",
    "Coverage",
    "Registry",
    "UnknownOp",
    "UnknownOpWarning",
    "annotate",
    "cost_calls",
    "cost_of_call",
    "coverage",
    "lookup_keys",
    "register_cost",
    "rule_for",
]
