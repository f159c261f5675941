"""The torch-free dataflow graph: nodes, edges, the aten calls each node dispatches to.

A :class:`Graph` is frozen and topologically ordered. It is what :func:`dfx.capture` returns and
what every later stage (costs, roofline, schedules, reports) reads. It round-trips through JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator

from dfx.ir.spec import TensorSpec
from dfx.schema.ids import GRAPH_SCHEMA as _GRAPH_SCHEMA

__all__ = ["ArgValue", "AtenCall", "Edge", "Graph", "Node", "ParameterInfo", "OPCODES"]

OPCODES = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output")

# A non-tensor argument is kept as its JSON-able value; a tensor argument as its TensorSpec;
# lists and tuples of either as tuples.
ArgValue = TensorSpec | int | float | bool | str | None | tuple["ArgValue", ...]


def _encode_arg(value: ArgValue) -> Any:
    if isinstance(value, TensorSpec):
        return {"tensor": value.to_dict()}
    if isinstance(value, tuple):
        return [_encode_arg(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return {"float": "nan"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {"float": "inf" if value > 0 else "-inf"}
    return value


def _decode_arg(value: Any) -> ArgValue:
    if isinstance(value, dict):
        if "tensor" in value:
            return TensorSpec.from_dict(value["tensor"])
        if "float" in value:
            return float(value["float"])
        return value
    if isinstance(value, list):
        return tuple([_decode_arg(v) for v in value])
    return value


def _flatten_tensors(value: ArgValue) -> Iterator[TensorSpec]:
    if isinstance(value, TensorSpec):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _flatten_tensors(v)


@dataclass(frozen=True)
class AtenCall:
    """One aten operator call a node dispatches to, with its arguments as specs.

    Parameters
    ----------
    op : str
        The overload's qualified name, e.g. ``"aten.addmm.default"``.
    args : tuple
        Positional arguments: tensors as :class:`TensorSpec`, everything else as its plain value.
    kwargs : tuple of (str, value)
        Keyword arguments, sorted by name.
    outputs : tuple of TensorSpec
        The tensors the call returns, flattened.
    """

    op: str
    args: tuple[ArgValue, ...] = ()
    kwargs: tuple[tuple[str, ArgValue], ...] = ()
    outputs: tuple[TensorSpec, ...] = ()

    @property
    def packet(self) -> str:
        """The overload packet, e.g. ``"aten.addmm"`` for ``"aten.addmm.default"``."""
        parts = self.op.split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else self.op

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """Every tensor among the arguments, in argument order (lists flattened)."""
        specs = [t for a in self.args for t in _flatten_tensors(a)]
        specs += [t for _, v in self.kwargs for t in _flatten_tensors(v)]
        return tuple(specs)

    def kwarg(self, name: str, default: ArgValue = None) -> ArgValue:
        for key, value in self.kwargs:
            if key == name:
                return value
        return default

    def arg(self, index: int, name: str | None = None, default: ArgValue = None) -> ArgValue:
        """Positional argument ``index``, else keyword ``name``, else ``default``."""
        if index < len(self.args):
            return self.args[index]
        if name is not None:
            return self.kwarg(name, default)
        return default

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "args": [_encode_arg(a) for a in self.args],
            "kwargs": {k: _encode_arg(v) for k, v in self.kwargs},
            "outputs": [o.to_dict() for o in self.outputs],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AtenCall:
        kwargs = data.get("kwargs")
        spec = TensorSpec.from_dict
        return cls(
            data["op"],
            tuple([_decode_arg(a) for a in data.get("args", ())]),
            tuple(sorted([(k, _decode_arg(v)) for k, v in kwargs.items()])) if kwargs else (),
            tuple([spec(o) for o in data.get("outputs", ())]),
        )


@dataclass(frozen=True)
class Edge:
    """A tensor flowing into a node: output ``index`` of the producer node ``src``."""

    src: str
    index: int = 0


@dataclass(frozen=True)
class ParameterInfo:
    """A parameter or buffer of the captured model, counted once however often it is read.

    ``aliases`` lists the other names that share its storage (a tied weight), so the unique
    footprint counts it once.
    """

    name: str
    spec: TensorSpec
    kind: str = "parameter"  # "parameter" | "buffer" | "constant"
    aliases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "aliases": list(self.aliases), **self.spec.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParameterInfo:
        return cls(
            data["name"], TensorSpec.from_dict(data), data.get("kind", "parameter"), tuple(data.get("aliases", ()))
        )


@dataclass(frozen=True)
class Node:
    """One node of the dataflow graph.

    Parameters
    ----------
    name : str
        Unique within the graph (the fx node name).
    op : str
        The fx opcode, one of :data:`OPCODES`.
    target : str
        The target as a readable string: ``"aten.mm.default"``, ``"layers.0.q_proj"``, ``"x"``.
    module_path : str
        Dotted path of the module the node came from (``""`` at the top level).
    inputs : tuple of Edge
        Tensors consumed, in argument order.
    outputs : tuple of TensorSpec
        Tensors produced (empty for ``output`` and non-tensor results).
    params : tuple of str
        Names of the parameters and buffers the node reads (canonical names, see
        :class:`ParameterInfo`).
    aten_calls : tuple of AtenCall
        The aten operators the node dispatched to when shapes were propagated.
    args_repr : str
        The fx-style rendering of the node's arguments, for display.
    input_kind : str
        For placeholders: ``"input"``, ``"parameter"``, ``"buffer"`` or ``"constant"``; else ``""``.
    """

    name: str
    op: str
    target: str
    module_path: str = ""
    inputs: tuple[Edge, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    params: tuple[str, ...] = ()
    aten_calls: tuple[AtenCall, ...] = ()
    args_repr: str = ""
    input_kind: str = ""

    def __post_init__(self) -> None:
        if self.op not in OPCODES:
            raise ValueError(f"node {self.name!r}: unknown fx opcode {self.op!r}; expected one of {OPCODES}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "op": self.op,
            "target": self.target,
            "module_path": self.module_path,
            "inputs": [[e.src, e.index] for e in self.inputs],
            "outputs": [o.to_dict() for o in self.outputs],
            "params": list(self.params),
            "aten_calls": [c.to_dict() for c in self.aten_calls],
            "args_repr": self.args_repr,
        }
        if self.input_kind:
            out["input_kind"] = self.input_kind
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        get, spec, call = data.get, TensorSpec.from_dict, AtenCall.from_dict
        return cls(  # positional, in the fields' order: a graph read builds one per node
            data["name"],
            data["op"],
            data["target"],
            get("module_path", ""),
            tuple([Edge(src, idx) for src, idx in get("inputs", ())]),
            tuple([spec(o) for o in get("outputs", ())]),
            tuple(get("params", ())),
            tuple([call(c) for c in get("aten_calls", ())]),
            get("args_repr", ""),
            get("input_kind", ""),
        )


GRAPH_SCHEMA = _GRAPH_SCHEMA


@dataclass(frozen=True)
class Graph:
    """A frozen, topologically ordered dataflow graph.

    Raises
    ------
    ValueError
        On construction, if names repeat, an edge names an unknown or later node (not topological),
        or a node reads an unknown parameter.
    """

    nodes: tuple[Node, ...]
    parameters: tuple[ParameterInfo, ...] = ()
    name: str = "model"
    capture_method: str = ""
    meta: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        seen: set[str] = set()
        params = {p.name for p in self.parameters}
        for node in self.nodes:
            if node.name in seen:
                raise ValueError(f"graph {self.name!r}: duplicate node name {node.name!r}")
            for edge in node.inputs:
                if edge.src not in seen:
                    raise ValueError(
                        f"graph {self.name!r}: node {node.name!r} reads {edge.src!r}, which is not an "
                        "earlier node; nodes must be in topological order"
                    )
            for p in node.params:
                if p not in params:
                    raise ValueError(f"graph {self.name!r}: node {node.name!r} reads unknown parameter {p!r}")
            seen.add(node.name)

    # -- lookups -------------------------------------------------------------------------------
    @cached_property
    def _index(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def _users(self) -> dict[str, tuple[str, ...]]:
        users: dict[str, list[str]] = {n.name: [] for n in self.nodes}
        for node in self.nodes:
            for src in dict.fromkeys(e.src for e in node.inputs):
                users[src].append(node.name)
        return {k: tuple(v) for k, v in users.items()}

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def node(self, name: str) -> Node:
        """The node called ``name``; raises ``KeyError`` naming it if absent."""
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"graph {self.name!r} has no node {name!r}") from None

    def users(self, name: str) -> tuple[str, ...]:
        """Names of the nodes that read any output of ``name``, in graph order."""
        return self._users[name]

    def input_specs(self, node: Node) -> tuple[TensorSpec, ...]:
        """The specs of the tensors flowing into ``node`` along its edges."""
        specs = []
        for edge in node.inputs:
            outs = self._index[edge.src].outputs
            if edge.index < len(outs):
                specs.append(outs[edge.index])
        return tuple(specs)

    @cached_property
    def parameter_index(self) -> dict[str, ParameterInfo]:
        return {p.name: p for p in self.parameters}

    def to_networkx(self):  # -> networkx.DiGraph
        """The graph as a ``networkx.DiGraph`` with node attribute ``node`` (the :class:`Node`).

        Edges carry ``bytes``: the bytes of the tensor(s) flowing along them.
        """
        import networkx as nx

        g = nx.DiGraph()
        for node in self.nodes:
            g.add_node(node.name, node=node)
        for node in self.nodes:
            for edge in node.inputs:
                outs = self._index[edge.src].outputs
                nbytes = outs[edge.index].nbytes if edge.index < len(outs) else 0
                if g.has_edge(edge.src, node.name):
                    g.edges[edge.src, node.name]["bytes"] += nbytes
                else:
                    g.add_edge(edge.src, node.name, bytes=nbytes)
        return g

    # -- serialisation --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": GRAPH_SCHEMA,
            "name": self.name,
            "capture_method": self.capture_method,
            "meta": dict(self.meta),
            "parameters": [p.to_dict() for p in self.parameters],
            "nodes": [n.to_dict() for n in self.nodes],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Graph:
        """Rebuild a graph from :meth:`to_dict`'s output.

        Raises
        ------
        ValueError
            If ``data`` is not a ``dfx.graph/1`` document.
        """
        if data.get("schema") != GRAPH_SCHEMA:
            raise ValueError(f"not a dfx graph: schema is {data.get('schema')!r}, expected {GRAPH_SCHEMA!r}")
        return cls(
            nodes=tuple([Node.from_dict(n) for n in data["nodes"]]),
            parameters=tuple([ParameterInfo.from_dict(p) for p in data.get("parameters", [])]),
            name=data.get("name", "model"),
            capture_method=data.get("capture_method", ""),
            meta=tuple(sorted(data.get("meta", {}).items())),
        )

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Graph:
        return cls.from_dict(json.loads(text))
