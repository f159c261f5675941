"""The tensors between working nodes, looking through views: who reads what, and how many bytes.

Fusion decides which tensors stay on chip, so it needs the graph's data flow at the level of real
tensors: a view, ``getitem`` or ``contiguous`` node that moves no bytes is looked through to the
tensor it aliases (a node whose cost is unknown is not: see :func:`does_work`). Each tensor is keyed by its *root*: ``(node name, output index)`` of the working
node or placeholder that produced it.

Off-chip bytes of a group of nodes run as one kernel (see ``docs/compile.md``)::

    offchip = sum(node traffic) - onchip
    onchip  = reads of tensors produced inside the group
            + repeated reads of one tensor inside the group (loaded once)
            + writes of tensors whose every reader is inside the group (and that are no graph output)

A storage is loaded once per kernel: a node reading several views of one tensor (``x`` and
``x.T``, the q, k and v slices of one projection, ``cat([f, f])``) reads at most that tensor's
bytes from it, ``min(sum of the views' bytes, the tensor's bytes)``. Where its eager traffic
charged more reads than those (``cost.bytes_read`` above the sum over its tensors), the excess, up
to what its views repeat, is a repeated read and stays on chip. So a one-node kernel moves its
eager traffic less those repeats, and fusing never adds bytes.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TypeVar
from functools import cached_property

from dfx.compile.ops import OpInfo, op_info
from dfx.costs.record import CostedGraph, CostedNode

__all__ = ["Dataflow", "TensorKey", "dataflow", "does_work"]

TensorKey = tuple[str, int]  # (root node name, output index)

_PARAM_KINDS = frozenset({"parameter", "buffer", "constant"})


def does_work(node: CostedNode) -> bool:
    """Whether the node is a work item: it moves bytes, does FLOPs, or its cost is unknown.

    Views, placeholders and the output do neither and belong to no kernel; a tensor read through
    them is the tensor they alias. A node with an aten call no cost rule covers (``unknown_ops``)
    is work of unknown size, never a view: its output is a new tensor and it depends on every
    input, so it keeps its own kernel (costed at what is known, and listed in the coverage report).
    """
    return node.cost.flops > 0 or node.cost.bytes > 0 or bool(node.unknown_ops)


@dataclass(frozen=True)
class Dataflow:
    """Reads, writes and consumers of every working node's tensors.

    Attributes
    ----------
    ops : dict
        Working node name -> :class:`~dfx.compile.ops.OpInfo`, in topological order.
    reads : dict
        Working node name -> ``{TensorKey: bytes read}``: of each tensor, what its views read together,
        at most the tensor's own bytes (a storage is read once per node).
    params : dict
        Working node name -> ``{key: bytes}`` of parameters and buffers it reads (keyed by root).
    outputs : dict
        Working node name -> ``{TensorKey: bytes}`` of the tensors it writes that someone reads.
    consumers : dict
        TensorKey -> names of the working nodes that read it, in topological order.
    graph_outputs : frozenset of TensorKey
        Tensors that reach the graph's output node.
    traffic : dict
        Working node name -> its eager traffic in bytes (``cost.bytes``).
    repeats : dict
        Working node name -> bytes its eager traffic reads twice from one storage through several
        views (``x + x.T`` reads ``x`` twice in eager; fused or not, the second read is on chip).
        Only what the traffic charged: a copy of an ``expand`` is costed at the storage already.
    loads : dict
        Working node name -> ``{TensorKey: bytes}`` of each tensor in ``reads`` and ``params``, the
        bytes its traffic reads (``cost.bytes_read``): all of it, except for a gather, which reads
        the rows it gathers of its table.
    """

    ops: dict[str, OpInfo]
    reads: dict[str, dict[TensorKey, int]]
    params: dict[str, dict[TensorKey, int]]
    outputs: dict[str, dict[TensorKey, int]]
    consumers: dict[TensorKey, tuple[str, ...]]
    graph_outputs: frozenset[TensorKey]
    traffic: dict[str, int]
    input_bytes: int  # graph inputs (placeholders of kind "input")
    repeats: dict[str, int]
    loads: dict[str, dict[TensorKey, int]]

    @cached_property
    def producer(self) -> dict[TensorKey, str]:
        """TensorKey -> the working node that writes it."""
        return {key: name for name, outs in self.outputs.items() for key in outs}

    @cached_property
    def _position(self) -> dict[str, int]:
        """Working node name -> its topological position (``ops[name].pos``)."""
        return {name: op.pos for name, op in self.ops.items()}

    @cached_property
    def _successors(self) -> dict[str, tuple[str, ...]]:
        out = {}
        for name, outs in self.outputs.items():
            seen: dict[str, None] = {}
            for key in outs:
                seen.update(dict.fromkeys(self.consumers.get(key, ())))
            out[name] = tuple(seen)
        return out

    def successors(self, name: str) -> tuple[str, ...]:
        """Working nodes reading any output of ``name``."""
        return self._successors[name]

    def onchip_by_node(self, members: set[str] | frozenset[str], *, weights_on_chip: bool = False) -> dict[str, int]:
        """Per member, the bytes of its traffic that stay on chip when ``members`` run as one unit.

        A read of a tensor made inside, or already loaded by an earlier member, is on chip; so is
        the write of a tensor whose every reader is inside (see the module docstring). Members are
        visited in topological order, so a repeated load is charged to the first reader. With
        ``weights_on_chip`` every parameter and buffer read is on chip too (weights resident in SRAM).
        """
        out: dict[str, int] = {}
        loaded: dict[TensorKey, int] = {}  # bytes of each tensor already brought on chip
        producer, consumers, graph_outputs = self.producer, self.consumers, self.graph_outputs
        for name in sorted(members, key=self._position.__getitem__):
            saved = self.repeats.get(name, 0)  # a storage read twice by one node: loaded once
            params = self.params[name]
            for key, nbytes in self.loads[name].items():
                had = loaded.get(key, 0)
                if producer.get(key) in members or (weights_on_chip and key in params):
                    saved += nbytes
                else:  # a gather loads only its rows: a later whole read loads the rest
                    saved += nbytes if nbytes < had else had
                if nbytes > had:  # loaded[key] = max(had, nbytes); a tensor absent reads as 0
                    loaded[key] = nbytes
            for key, nbytes in self.outputs[name].items():
                readers = consumers.get(key, ())
                if readers and key not in graph_outputs and members.issuperset(readers):
                    saved += nbytes
            out[name] = min(saved, self.traffic[name])
        return out

    def onchip_bytes(self, members: set[str] | frozenset[str]) -> int:
        """Bytes that stay on chip when ``members`` run as one kernel (see the module docstring)."""
        return sum(self.onchip_by_node(members).values())

    def offchip_bytes(self, members: set[str] | frozenset[str]) -> int:
        return sum(self.traffic[n] for n in members) - self.onchip_bytes(members)

    def compulsory_bytes(self, costed: CostedGraph) -> int:
        """Weights once + graph inputs + graph outputs: what any execution must move off chip."""
        out = 0
        for key in self.graph_outputs:
            producer = self.producer.get(key)
            if producer is not None:
                out += self.outputs[producer][key]
        return costed.unique_parameter_bytes() + self.input_bytes + out


def _root(costed: CostedGraph, name: str, index: int, working: set[str]) -> TensorKey:
    """Follow a tensor back through zero-work nodes (views, getitem) to the node that made it."""
    graph = costed.graph
    while name not in working:
        node = graph.node(name)
        if node.op in ("placeholder", "get_attr") or not node.inputs:
            return (name, index)
        edge = node.inputs[0]  # a view or getitem aliases its first tensor input
        name, index = edge.src, edge.index
    return (name, index)


def _loads(once: dict[TensorKey, int], bytes_read: int) -> dict[TensorKey, int]:
    """Of each tensor a node reads (``once``: its bytes, views together), the bytes its traffic reads.

    Where ``bytes_read`` is below their sum (a gather reads rows of a table, not the table), the
    shortfall is taken from the largest tensors first: the table, not the indices.
    """
    short = sum(once.values()) - bytes_read
    out = dict(once)
    for key in sorted(once, key=lambda k: (-once[k], k)):
        if short <= 0:
            break
        cut = min(short, out[key])
        out[key] -= cut
        short -= cut
    return out


def _storage_bytes(costed: CostedGraph, key: TensorKey) -> int:
    """Bytes of the tensor ``key`` names (its producer's output spec; 0 when the graph does not say)."""
    outs = costed.graph.node(key[0]).outputs
    return outs[key[1]].nbytes if key[1] < len(outs) else 0


def _is_param_root(costed: CostedGraph, key: TensorKey) -> bool:
    node = costed.graph.node(key[0])
    return node.op == "get_attr" or node.input_kind in _PARAM_KINDS


_CACHE: dict[int, tuple[weakref.ref, Dataflow]] = {}


T = TypeVar("T")


def dataflow(costed: CostedGraph) -> Dataflow:
    """The tensor-level data flow of ``costed`` (working nodes only), computed once per costed graph.

    >>> from dfx.costs import annotate
    >>> from dfx.ir import Graph
    >>> dataflow(annotate(Graph(name="empty", nodes=()))).ops
    {}
    """
    from dfx.memo import weak_memo

    return weak_memo(_CACHE, costed, _dataflow)


def _dataflow(costed: CostedGraph) -> Dataflow:
    graph = costed.graph
    working_nodes = [n for n in costed.nodes if does_work(n)]
    working = {n.name for n in working_nodes}
    ops = {n.name: op_info(n, i) for i, n in enumerate(working_nodes)}
    reads: dict[str, dict[TensorKey, int]] = {}
    params: dict[str, dict[TensorKey, int]] = {}
    repeats: dict[str, int] = {}
    loads: dict[str, dict[TensorKey, int]] = {}
    consumers: dict[TensorKey, list[str]] = {}
    for cn in working_nodes:
        node = cn.node
        specs = graph.input_specs(node)
        r: dict[TensorKey, int] = {}
        p: dict[TensorKey, int] = {}
        views: dict[TensorKey, int] = {}  # bytes of every view of one tensor this node reads, summed
        for edge, spec in zip(node.inputs, specs):
            key = _root(costed, edge.src, edge.index, working)
            views[key] = views.get(key, 0) + spec.nbytes
            consumers.setdefault(key, [])
            if cn.name not in consumers[key]:
                consumers[key].append(cn.name)
        excess = 0  # what the views read beyond each storage once
        for key, nbytes in views.items():
            once = min(nbytes, _storage_bytes(costed, key) or nbytes)
            (p if _is_param_root(costed, key) else r)[key] = once
            excess += nbytes - once
        if node.params and not p:  # parameters read without an edge (fx call_module, get_attr inside)
            index = graph.parameter_index
            p = {(f"param:{q}", 0): index[q].spec.nbytes for q in node.params if q in index}
        reads[cn.name], params[cn.name] = r, p
        once_total = sum(r.values()) + sum(p.values())
        if excess > 0 and cn.cost.bytes_read > once_total:  # the traffic reads a storage more than once
            repeats[cn.name] = min(excess, cn.cost.bytes_read - once_total)
        loads[cn.name] = _loads({**r, **p}, cn.cost.bytes_read)
    graph_outputs = frozenset(
        _root(costed, e.src, e.index, working) for n in graph.nodes if n.op == "output" for e in n.inputs
    )
    outputs: dict[str, dict[TensorKey, int]] = {n: {} for n in working}
    for cn in working_nodes:
        for i, spec in enumerate(cn.node.outputs):
            key = (cn.name, i)
            if key in consumers or key in graph_outputs:
                outputs[cn.name][key] = spec.nbytes
    input_bytes = sum(
        sum(o.nbytes for o in n.outputs) for n in graph.nodes if n.op == "placeholder" and n.input_kind == "input"
    )
    return Dataflow(
        ops=ops,
        reads=reads,
        params=params,
        outputs=outputs,
        consumers={k: tuple(v) for k, v in consumers.items()},
        graph_outputs=graph_outputs,
        traffic={n.name: n.cost.bytes for n in working_nodes},
        input_bytes=input_bytes,
        repeats=repeats,
        loads=loads,
    )
