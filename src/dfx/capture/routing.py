"""Top-k routing: the data-dependent sizes of a mixture of experts, costed by their sum constraint.

An MoE layer sends each of T tokens to k of E experts, then runs every expert on the tokens routed
to it: ``torch.where(expert_mask[e])`` (Mixtral, transformers) or ``torch.where(selected == e)``
(Mistral's reference code). Each expert's token count is a data-dependent size; on its own it is
bounded only by T (or T*k), so costing each at its upper bound reports E*T routed rows where every
routing sends exactly T*k. What the sizes share is a sum: the one-hot ``expert_mask`` (or the index
tensor ``selected``) holds exactly T*k ones, and the experts' slices of it partition them.

This module follows that provenance while shapes propagate, on fake tensors:

- the class indices a router produces (``topk`` indices, ``argmax``), over E = the routed dim;
- ``one_hot`` of them (T*k ones, the class axis last), through ``permute``/``transpose``/
  ``unsqueeze``/``select`` (which move or remove the class axis);
- one class's slice, ``mask.select(class_axis, e)`` or ``indices == e``, through views and casts;
- the size a ``nonzero`` (``torch.where``, ``argwhere``), a boolean-mask index or a
  ``masked_select`` of such a slice creates.

Each such size is costed at class e's share of balanced routing, ``N // E`` plus one for the first
``N % E`` classes (N = T*k routed slots), so the sizes of all E classes sum to N exactly. Every cost
linear in the routed rows (the experts' matmuls, activations, gathers and scatters) then totals
exactly what any routing of the N slots costs; only the split between experts is the balanced one
(``docs/cost-model.md``). Sizes outside this pattern keep their upper bound (:mod:`propagate`).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

__all__ = ["ClassIndices", "ClassSlice", "OneHot", "RoutingTracker", "grouped_experts", "is_one_hot_target"]

_GROUPED = "grouped_mm"  # transformers 5's experts implementation: sort by expert, one grouped GEMM each


@dataclass(frozen=True)
class ClassIndices:
    """A tensor of class ids in ``[0, classes)``, one per routed slot: ``total`` slots in all."""

    group: int
    classes: int
    total: int


@dataclass(frozen=True)
class OneHot:
    """A one-hot tensor holding ``total`` ones, with its ``classes`` along dim ``axis``."""

    group: int
    classes: int
    total: int
    axis: int


@dataclass(frozen=True)
class ClassSlice:
    """The slots routed to class ``index`` (non-zero where routed): its share of ``total``."""

    group: int
    classes: int
    total: int
    index: int

    @property
    def balanced(self) -> int:
        """This class's share of the total under balanced routing (the shares sum to ``total``)."""
        return self.total // self.classes + (self.index < self.total % self.classes)


# Ops that keep which elements are non-zero, so a class slice stays one through them (and ne, gt
# against 0, checked in _keeps_nonzero).
_KEEPS_NONZERO = {
    "view",
    "_unsafe_view",
    "reshape",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "t",
    "clone",
    "contiguous",
    "_to_copy",
    "alias",
    "detach",
    "flatten",
}
# Ops whose first output's leading size counts the non-zeros of a boolean input.
_COUNTS_NONZERO = {"nonzero", "argwhere", "masked_select", "index"}
_ROUTERS = {"topk", "argmax"}  # produce class ids along a dim
_ONE_HOT_NAMES = ("one_hot",)


def is_one_hot_target(target: Any) -> bool:
    """Whether an fx node's target is ``one_hot`` (``aten.one_hot``, ``F.one_hot``, ``torch._C._nn.one_hot``)."""
    name = str(target) if isinstance(target, torch._ops.OpOverload) else getattr(target, "__name__", str(target))
    return any(name == n or name.startswith(f"aten.{n}.") for n in _ONE_HOT_NAMES)


@contextlib.contextmanager
def grouped_experts(model: Any) -> Iterator[None]:
    """Run transformers' experts modules that have no implementation chosen as grouped GEMMs.

    A transformers 5 experts module (``@use_experts_implementation``) built outside a
    ``PreTrainedModel`` (``MixtralSparseMoeBlock(config)`` on its own) has
    ``config._experts_implementation`` unset and falls back to its eager per-expert loop, which
    iterates over the experts a batch hits: a data-dependent count no tracer can follow
    (``GuardOnDataDependentSymNode``). A whole model sets it to ``"grouped_mm"``
    (``PreTrainedModel.get_correct_experts_implementation``'s default); this does the same for the
    capture, and restores ``None`` after. Modules with an implementation chosen are left alone.
    """
    configs = []
    for module in model.modules() if hasattr(model, "modules") else ():
        config = getattr(module, "config", None)
        if hasattr(type(module), "_apply_gate") and config is not None and hasattr(config, "_experts_implementation"):
            if config._experts_implementation is None and all(c is not config for c in configs):
                configs.append(config)
    for config in configs:
        config._experts_implementation = _GROUPED
    try:
        yield
    finally:
        for config in configs:
            config._experts_implementation = None


def _op(func: Any) -> tuple[str, str]:
    # "aten.select.int" -> ("select", "int")
    parts = str(func).split(".")
    return (parts[1] if len(parts) > 1 else parts[0], parts[2] if len(parts) > 2 else "")


def _norm_dim(dim: Any, ndim: int) -> int | None:
    if not isinstance(dim, int) or ndim <= 0:
        return None
    return dim % ndim if -ndim <= dim < ndim else None


def _first_tensor(values: Any) -> torch.Tensor | None:
    return next((v for v in tree_flatten(values)[0] if isinstance(v, torch.Tensor)), None)


class RoutingTracker:
    """Tags router outputs, one-hots and class slices on fake tensors; sizes the counts they create.

    ``routed`` maps each unbacked size symbol (``"u0"``) it sized to ``(value, slice)``.
    """

    def __init__(self) -> None:
        self._tags: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._groups = itertools.count()
        self.routed: dict[str, tuple[int, ClassSlice]] = {}

    def value_of(self, symbol: str) -> int | None:
        """The size a routed symbol is costed at, or ``None`` for any other symbol."""
        entry = self.routed.get(symbol)
        return entry[0] if entry else None

    def tag_one_hot(self, out: Any) -> None:
        """Tag the result of a ``one_hot`` node: one 1 per row of its last (class) dim."""
        if isinstance(out, torch.Tensor) and out.dim() >= 1 and _static(out.shape[-1]) and _static(out.numel()):
            classes = int(out.shape[-1])
            if classes > 0:
                self._tags[out] = OneHot(next(self._groups), classes, int(out.numel()) // classes, out.dim() - 1)

    def on_op(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """Follow routing provenance through one aten call (called after it ran)."""
        name, _ = _op(func)
        if name in _ROUTERS:
            self._router(name, args, kwargs, out)
            return
        src = _first_tensor(args)
        tag = self._tags.get(src) if src is not None else None
        if name in _COUNTS_NONZERO:
            self._count(name, args, out)
            return
        if tag is None or not isinstance(out, torch.Tensor):
            return
        if isinstance(tag, ClassIndices):
            self._from_indices(name, tag, args, out)
        elif isinstance(tag, OneHot):
            self._from_one_hot(name, tag, src, args, out)
        elif _keeps_nonzero(name, args):
            self._tags[out] = tag

    def _router(self, name: str, args: tuple, kwargs: dict, out: Any) -> None:
        # topk(self, k, dim=-1) -> (values, indices); argmax(self, dim=None) -> indices
        x = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if name == "topk":
            dim, indices = (args[2] if len(args) > 2 else kwargs.get("dim", -1)), out[1]
        else:
            dim, indices = (args[1] if len(args) > 1 else kwargs.get("dim")), out
        dim = _norm_dim(dim, x.dim()) if x is not None else None
        if dim is None or not _static(x.shape[dim]) or not isinstance(indices, torch.Tensor):
            return
        if _static(indices.numel()):
            self._tags[indices] = ClassIndices(next(self._groups), int(x.shape[dim]), int(indices.numel()))

    def _from_indices(self, name: str, tag: ClassIndices, args: tuple, out: torch.Tensor) -> None:
        if name == "eq" and len(args) > 1 and isinstance(args[1], int) and not isinstance(args[1], bool):
            if 0 <= args[1] < tag.classes:
                self._tags[out] = ClassSlice(tag.group, tag.classes, tag.total, args[1])
        elif name in ("view", "_unsafe_view", "reshape", "clone", "contiguous", "_to_copy", "alias", "flatten"):
            self._tags[out] = tag

    def _from_one_hot(self, name: str, tag: OneHot, src: torch.Tensor, args: tuple, out: torch.Tensor) -> None:
        ndim, axis = src.dim(), tag.axis
        if name == "permute":
            dims = [_norm_dim(d, ndim) for d in args[1]]
            axis = dims.index(tag.axis) if tag.axis in dims else None
        elif name == "transpose":
            d0, d1 = _norm_dim(args[1], ndim), _norm_dim(args[2], ndim)
            axis = d1 if axis == d0 else d0 if axis == d1 else axis
        elif name == "unsqueeze":
            d = _norm_dim(args[1], ndim + 1)
            axis = axis + 1 if d is not None and d <= axis else axis
        elif name == "select":
            d, index = _norm_dim(args[1], ndim), args[2]
            if d == axis and isinstance(index, int):
                self._tags[out] = ClassSlice(tag.group, tag.classes, tag.total, index % tag.classes)
                return
            axis = axis - 1 if d is not None and d < axis else axis
        elif name in ("clone", "contiguous", "_to_copy", "alias", "detach") or (
            name in ("ne", "gt") and _keeps_nonzero(name, args)
        ):
            pass  # the same layout
        else:
            return
        if axis is not None:
            self._tags[out] = OneHot(tag.group, tag.classes, tag.total, axis)

    def _count(self, name: str, args: tuple, out: Any) -> None:
        masks = [
            v
            for v in tree_flatten(args)[0]
            if isinstance(v, torch.Tensor) and isinstance(self._tags.get(v), ClassSlice)
        ]
        if not masks:
            return
        tag = self._tags[masks[0]]
        first = _first_tensor(out)
        if first is None or first.dim() == 0:
            return
        size = first.shape[0]
        if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
            symbol = str(size.node.expr)
            self.routed.setdefault(symbol, (tag.balanced, tag))


def _keeps_nonzero(name: str, args: tuple) -> bool:
    if name in ("ne", "gt"):
        return len(args) > 1 and isinstance(args[1], (int, float)) and args[1] == 0
    return name in _KEEPS_NONZERO


def _static(size: Any) -> bool:
    return isinstance(size, int) or (isinstance(size, torch.SymInt) and size.node.hint is not None)
