"""What a TorchDynamo capture depends on: guards, dynamic symbols, graph breaks, and a check.

Plain frozen records (torch-free) that :mod:`dfx.capture.guards` fills from PyTorch's own guard
manager and ShapeEnv, the way :mod:`dfx.ir` holds what capture found. ``GuardReport.to_dict()`` is
the ``dfx.guards/1`` export document (see ``docs/shapes.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dfx.schema.ids import GUARDS_SCHEMA

__all__ = ["Guard", "InputGuard", "DynamicSymbol", "GraphBreak", "GuardCheck", "GuardReport", "GROUPS"]

# The groups guards are listed in: per-input tensor checks, symbolic shape relations, global state,
# and everything else Dynamo pins (ids and types of modules, functions and globals it read).
GROUPS = ("input", "shape", "global", "object")


@dataclass(frozen=True)
class Guard:
    """One guard as PyTorch installed it.

    ``kind`` is PyTorch's guard type (``TENSOR_MATCH``, ``GLOBAL_STATE``, ``ID_MATCH``, ...; the
    symbolic shape relations checked after the tree are ``SHAPE_ENV``); ``text`` is its code part,
    ``source`` the value it reads (``L['x']``), ``origin`` the user line that introduced it.
    ``zero_one`` marks a guard that exists because Dynamo specialises sizes 0 and 1; ``symbolic``
    is a shape guard with each dynamic size written as its ShapeEnv symbol (``101 <= s27``).
    """

    kind: str
    group: str
    text: str
    source: str = ""
    origin: str = ""
    zero_one: bool = False
    symbolic: str = ""

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "group": self.group,
            "text": self.text,
            "source": self.source,
            "origin": self.origin,
            "zero_one": self.zero_one,
            "symbolic": self.symbolic,
        }


@dataclass(frozen=True)
class DynamicSymbol:
    """A symbolic size: its ShapeEnv symbol (``s27``), the dimension it stands for, its range."""

    symbol: str
    source: str
    min: int
    max: int | None  # None: unbounded

    def to_dict(self) -> dict:
        return {"symbol": self.symbol, "source": self.source, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class InputGuard:
    """One input as the graph is specialised to it: each dim an int (static) or a symbol (dynamic)."""

    name: str
    shape: tuple[int | str, ...]
    stride: tuple[int | str, ...]
    dtype: str
    device: str
    requires_grad: bool
    dynamic_requested: tuple[int, ...] = ()
    specialized: tuple[int, ...] = ()  # dims asked to be dynamic that Dynamo made static anyway

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "stride": list(self.stride),
            "dtype": self.dtype,
            "device": self.device,
            "requires_grad": self.requires_grad,
            "dynamic_requested": list(self.dynamic_requested),
            "specialized": list(self.specialized),
        }


@dataclass(frozen=True)
class GraphBreak:
    """A graph break: PyTorch's reason (first line) and how many times it happened."""

    reason: str
    count: int = 1
    detail: str = ""

    def to_dict(self) -> dict:
        return {"reason": self.reason, "count": self.count, "detail": self.detail}


@dataclass(frozen=True)
class GuardCheck:
    """Whether new inputs pass every guard of the captured frame; ``failed`` lists PyTorch's failing guard texts."""

    inputs: tuple[dict, ...]
    passes: bool
    failed: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"inputs": list(self.inputs), "passes": self.passes, "failed": list(self.failed)}


@dataclass(frozen=True)
class GuardReport:
    """Everything one capture depends on (``to_dict`` is the ``dfx.guards/1`` document)."""

    model: str
    inputs: tuple[InputGuard, ...]
    guards: tuple[Guard, ...]
    symbols: tuple[DynamicSymbol, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    graphs: int = 1
    check: GuardCheck | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    torch_version: str = ""

    def by_group(self, group: str) -> tuple[Guard, ...]:
        """The guards of one of :data:`GROUPS`."""
        return tuple(g for g in self.guards if g.group == group)

    def to_dict(self) -> dict:
        d = {
            "schema": GUARDS_SCHEMA,
            "model": self.model,
            "torch_version": self.torch_version,
            "inputs": [i.to_dict() for i in self.inputs],
            "symbols": [s.to_dict() for s in self.symbols],
            "guards": [g.to_dict() for g in self.guards],
            "graph_breaks": [b.to_dict() for b in self.graph_breaks],
            "graphs": self.graphs,
            "warnings": list(self.warnings),
        }
        if self.check is not None:
            d["check"] = self.check.to_dict()
        return d
