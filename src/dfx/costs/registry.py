"""The registry of cost rules, keyed by aten op name, filled by the :func:`register_cost` decorator.

A rule is a pure function of an :class:`~dfx.ir.AtenCall` (tensor specs and plain arguments, never
tensors) that returns a :class:`~dfx.costs.record.Cost`, or a mapping ``{Category: Cost}`` when one
call does work of several kinds (addmm: a ``matmul`` product plus an ``elementwise`` bias add).

Keys are strings: an overload packet (``"aten.mm"``, every overload) or one overload
(``"aten.max.other"``). Lookup tries, in order (the documented fallback for ops without a rule of
their own, since a dispatcher decomposition is not available without torch):

1. the exact overload, ``"aten.add_.Tensor"``;
2. its packet, ``"aten.add_"``;
3. the functional op of an in-place op, ``"aten.add.Tensor"`` then ``"aten.add"``;
4. the functional overload of an ``out=`` overload, ``"aten.add.out"`` -> ``"aten.add.default"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from dfx.costs.record import CATEGORY_RANK, CallCost, Category, Cost
from dfx.ir import AtenCall

__all__ = ["REGISTRY", "CostRule", "Registry", "RuleResult", "cost_of_call", "lookup_keys", "register_cost", "rule_for"]

RuleResult = Cost | Mapping[Category, Cost]
_ZERO = Cost.zeros()  # the left operand of a call's total (a rule's Cost subclass becomes a Cost)
RuleFn = Callable[[AtenCall], RuleResult]

# "namespace.op" or "namespace.op.overload", e.g. "aten.mm", "aten.add.Tensor", "aten.__and__.Tensor".
_KEY = re.compile(r"^[A-Za-z_]\w*\.[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")


@dataclass(frozen=True)
class CostRule:
    """A registered rule: the function, the key it was found under and its default category."""

    key: str
    category: Category
    fn: RuleFn

    def __call__(self, call: AtenCall) -> CallCost:
        """Evaluate the rule on ``call``; a plain :class:`Cost` belongs wholly to ``category``.

        With a mapping, the call's category is the highest-ranked of its parts (the same rule that
        gives a node the highest-ranked category among its calls).
        """
        result = self.fn(call)
        if isinstance(result, Cost) and isinstance(self.category, Category):
            # the usual case, a plain Cost: what the general path below makes of {category: result}
            # the member's value read directly: Category.value is an enum property (a call per costed call)
            split = ((self.category._value_, result.flops),) if result.flops else ()
            return CallCost(call.op, self.category, _ZERO + result, split)
        parts = {self.category: result} if isinstance(result, Cost) else {}
        parts = dict(result) if isinstance(result, Mapping) else parts
        if not parts or not all(isinstance(c, Category) and isinstance(v, Cost) for c, v in parts.items()):
            raise TypeError(
                f"cost rule for {self.key!r} returned {type(result).__name__}; expected a Cost or a "
                "non-empty {Category: Cost}"
            )
        total = sum(parts.values(), Cost.zeros())
        category = max(parts, key=CATEGORY_RANK.__getitem__)
        split = tuple((c.value, v.flops) for c, v in parts.items() if v.flops)
        return CallCost(call.op, category, total, split)


class Registry:
    """A map from aten op name to :class:`CostRule`, filled through :meth:`register`.

    Examples
    --------
    >>> from dfx.costs.record import Category, Cost
    >>> reg = Registry()
    >>> @reg.register(["aten.neg", "aten.abs"], category=Category.ELEMENTWISE)
    ... def one_per_element(call):
    ...     return Cost(flops=call.outputs[0].numel)
    >>> sorted(reg.keys())
    ['aten.abs', 'aten.neg']
    """

    def __init__(self) -> None:
        self._rules: dict[str, CostRule] = {}
        self._found: dict[str, CostRule | None] = {}  # rule_for's answers by op, emptied on register

    def register(self, ops: str | Iterable[str], *, category: Category) -> Callable[[RuleFn], RuleFn]:
        """Decorator registering a rule for each op name in ``ops`` (a string or a list of them).

        Raises
        ------
        TypeError
            If a key is not a string (e.g. ``torch.ops.aten.mm``) or ``category`` not a
            :class:`Category`.
        ValueError
            If a key is malformed, repeated, or already registered; nothing is registered then.
        """
        keys = [ops] if isinstance(ops, str) else list(ops) if isinstance(ops, (list, tuple)) else None
        if keys is None:
            raise TypeError(f"register_cost: ops must be a string or a list of strings, got {type(ops).__name__}")
        if not keys:
            raise ValueError("register_cost: empty list of ops")
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(
                    f"register_cost: op keys are strings such as 'aten.mm', got {type(key).__name__} {key!r}"
                )
            if not _KEY.match(key):
                raise ValueError(f"register_cost: {key!r} is not 'namespace.op' or 'namespace.op.overload'")
        if not isinstance(category, Category):
            raise TypeError(f"register_cost: category must be a Category, got {category!r}")
        repeated = sorted({k for k in keys if keys.count(k) > 1} | {k for k in keys if k in self._rules})
        if repeated:
            raise ValueError(f"register_cost: duplicate registration of {', '.join(repeated)}")

        def decorate(fn: RuleFn) -> RuleFn:
            for key in keys:
                self._rules[key] = CostRule(key, category, fn)
            self._found.clear()
            return fn

        return decorate

    def rule_for(self, op: str) -> CostRule | None:
        """The rule for aten op ``op``, following :func:`lookup_keys`; ``None`` if there is none."""
        try:
            return self._found[op]
        except KeyError:
            pass
        found = None
        for key in lookup_keys(op):
            found = self._rules.get(key)
            if found is not None:
                break
        self._found[op] = found
        return found

    def keys(self) -> tuple[str, ...]:
        return tuple(self._rules)

    def __contains__(self, op: object) -> bool:
        return isinstance(op, str) and self.rule_for(op) is not None


def lookup_keys(op: str) -> tuple[str, ...]:
    """The registry keys tried for ``op``, most specific first (see the module docstring).

    Examples
    --------
    >>> lookup_keys("aten.add_.Tensor")
    ('aten.add_.Tensor', 'aten.add_', 'aten.add.Tensor', 'aten.add')
    >>> lookup_keys("aten.mm.out")
    ('aten.mm.out', 'aten.mm', 'aten.mm.default')
    """
    parts = op.split(".")
    if len(parts) < 2:
        return (op,)
    ns, name = parts[0], parts[1]
    overload = parts[2] if len(parts) > 2 else ""
    keys = [op, f"{ns}.{name}"]
    if name.endswith("_") and not name.endswith("__"):  # in-place ("add_"), not a dunder ("__and__")
        functional = name[:-1]
        keys += [f"{ns}.{functional}.{overload}" if overload else f"{ns}.{functional}", f"{ns}.{functional}"]
    if overload == "out" or overload.endswith("_out"):
        keys.append(f"{ns}.{name}.{overload[:-4] if overload.endswith('_out') else 'default'}")
    return tuple(dict.fromkeys(keys))


REGISTRY = Registry()
register_cost = REGISTRY.register
rule_for = REGISTRY.rule_for


def cost_of_call(call: AtenCall, registry: Registry | None = None) -> CallCost | None:
    """The cost of one aten call, or ``None`` when no rule covers its op."""
    rule = (registry or REGISTRY).rule_for(call.op)
    return rule(call) if rule is not None else None
