"""Capture once with symbolic batch and sequence length; get the graph at any size by substitution.

:func:`capture_symbolic` exports a model once with ``torch.export`` dynamic shapes: dimension 0 of
every tensor input is the symbol ``batch`` and dimension 1 the symbol ``seq`` (where the caller
asks for them). The exported program holds its sizes as sympy expressions over those symbols
(``sym_size`` nodes, view sizes such as ``[s0, s1, 12, 64]``), its validity range
(``range_constraints``) and, as ``_assert_scalar`` nodes, every other guard it relied on.

:meth:`SymbolicCapture.graph_at` substitutes concrete sizes: every symbolic size node is folded to
its value (and removed, as a static export never has it), every guard is checked at those sizes
(:class:`GuardFailure` when one fails: the size belongs to another bucket and needs its own
capture), and the fake-tensor propagation of :mod:`dfx.capture.propagate` records the aten calls at
the concrete sizes. The result is the :class:`dfx.ir.Graph` a concrete ``capture`` at those sizes
returns, node for node (``tests/capture/test_symbolic.py``), without exporting again: the export is
the expensive step (0.3 to 3 s here), a substitution 20 to 60 ms.

Sizes of 1 are not symbolic (torch specialises 0 and 1), so a symbol's range starts at 2.

A buffer built to the sequence length (a rotary table of ``seq`` rows, as the ``llama-layer``
built-ins make it) would pin ``seq`` to one value: ``torch.export`` makes inputs symbolic, never
state. Such buffers (:func:`seq_sized_buffers` finds them) are exported as inputs whose dim 0 is
the ``seq`` symbol (``seq_buffers=``) and put back in the graph as the buffers they are, same
name, place and kind, so the graph at any size is the one a concrete capture of the model built at
that size gives; :meth:`SymbolicCapture.align` checks it.
"""

from __future__ import annotations

import copy
import inspect
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._pytree import tree_flatten, tree_map

from dfx.capture.build import _check_returns_tensors, _match_device, _to_ir
from dfx.capture.propagate import AtenRecorder, device_neutral_kernels
from dfx.capture.trace import Traced, canonical_param_names, capture_context
from dfx.errors import CaptureError
from dfx.ir import Edge, Graph

__all__ = ["GuardFailure", "SymbolicCapture", "capture_symbolic", "seq_sized_buffers", "state_shapes"]

_MAX_SIZE = 1 << 24  # the symbols' upper bound: far beyond any sequence or batch dfx accepts
_ASSERTS = (
    "aten._assert_scalar",
    "aten.sym_constrain_range_for_size",
    "aten.sym_constrain_range",
    "aten._assert_async",
)


class GuardFailure(CaptureError):
    """The exported graph does not hold at these sizes (a range or a guard fails): capture them apart."""


@dataclass
class SymbolicCapture:
    """One export with symbolic sizes; :meth:`graph_at` gives the graph at concrete ones.

    Attributes
    ----------
    name : str
        The graph's name.
    batch_symbolic, seq_symbolic : bool
        Which of the two sizes the export left symbolic.
    marks : list of dict
        Per flat user input (args then kwargs, in order): ``{dim: "batch" | "seq"}``.
    """

    name: str
    batch_symbolic: bool
    seq_symbolic: bool
    marks: list[dict[int, str]]
    _ep: Any = field(repr=False)
    _model: Any = field(repr=False)
    _symbols: dict[str, Any] = field(default_factory=dict, repr=False)  # "batch"/"seq" -> sympy symbol
    _names: dict[str, str] = field(default_factory=dict, repr=False)  # export's node name -> a static capture's
    _lifted: dict[str, str] = field(default_factory=dict, repr=False)  # buffer placeholder -> its export input

    def holds_at(self, batch: int, seq: int) -> bool:
        """Whether ``batch``, ``seq`` lie in the export's ranges (guards inside the graph are checked by :meth:`graph_at`)."""
        values = self._values(batch, seq)
        for sym, vr in self._ep.range_constraints.items():
            if sym in values and not (int(vr.lower) <= values[sym] <= _upper(vr)):
                return False
        return True

    def _values(self, batch: int, seq: int) -> dict[Any, int]:
        return {sym: batch if which == "batch" else seq for which, sym in self._symbols.items()}

    def check_guards(self, batch: int, seq: int) -> None:
        """Check the export's ranges and every guard of its graph at these sizes, without building the graph.

        The checks :meth:`graph_at` makes before propagating (a graph built otherwise at these
        sizes, :mod:`dfx.sweep.graphs`' interpolation, is valid only where they hold).

        Raises
        ------
        GuardFailure
            A size outside the export's range, or a guard false at these sizes.
        """
        if not self.holds_at(batch, seq):
            raise GuardFailure(f"batch {batch}, seq {seq} lie outside the symbolic capture's range")
        values = self._values(batch, seq)
        for node in self._ep.graph_module.graph.nodes:
            if node.op != "call_function" or str(node.target).rsplit(".", 1)[0] not in _ASSERTS or not node.args:
                continue
            cond = node.args[0]
            val = cond.meta.get("val") if isinstance(cond, torch.fx.Node) else cond
            if val is False or (isinstance(val, torch.SymBool) and not _concrete(val, values)):
                raise GuardFailure(f"guard {node.args[1] if len(node.args) > 1 else node.name} fails at these sizes")

    def graph_at(self, batch: int, seq: int) -> Graph:
        """The graph a concrete capture at (``batch``, ``seq``) gives, from this one export.

        Raises
        ------
        GuardFailure
            A size outside the export's range, or a guard of the graph false at these sizes.
        CaptureError
            Propagation failed at these sizes.
        """
        if not self.holds_at(batch, seq):
            raise GuardFailure(f"batch {batch}, seq {seq} lie outside the symbolic capture's range")
        values = self._values(batch, seq)
        gm, _ = _specialise(self._ep.graph_module, values)
        traced, mode = self._traced(gm, batch, seq)
        recorder = AtenRecorder(gm)
        try:
            with capture_context(), device_neutral_kernels(), warnings.catch_warnings(), traced.state_swap(), mode:
                warnings.simplefilter("ignore")
                recorder.run(*traced.inputs)
        except Exception as exc:  # noqa: BLE001 - any torch failure is this size's capture failing
            raise CaptureError(
                f"propagation at batch {batch}, seq {seq} failed: {str(exc).splitlines()[0][:200]}"
            ) from None
        graph = _check_returns_tensors(_to_ir(traced, recorder, self._model, self.name), self._model)
        return _renamed(graph, self._names)

    def align(self, reference: Graph, batch: int, seq: int) -> bool:
        """Take node names from ``reference``, a concrete capture at (``batch``, ``seq``); whether they now agree.

        The export names nodes in the order it creates them, size nodes included, and drops some
        afterwards, so a tensor node's counter (``mul_7``) may differ from a static export's
        (``mul_6``). Nodes are matched in order (same opcode and target); after that,
        :meth:`graph_at` (``batch``, ``seq``) must equal ``reference`` exactly, or ``False`` is
        returned and the names are left as they were (capture these sizes concretely).
        """
        self._names = {}
        mine = self.graph_at(batch, seq)
        if len(mine.nodes) != len(reference.nodes) or any(
            a.op != b.op or a.target != b.target for a, b in zip(mine.nodes, reference.nodes)
        ):
            return False
        self._names = {a.name: b.name for a, b in zip(mine.nodes, reference.nodes) if a.name != b.name}
        if _renamed(mine, self._names) != reference:
            self._names = {}
            return False
        return True

    def _traced(self, gm: torch.fx.GraphModule, batch: int, seq: int) -> tuple[Traced, FakeTensorMode]:
        """The specialised module with fake inputs at the concrete sizes, as :func:`trace_export` gives it."""
        ep = self._ep
        mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
        canonical = canonical_param_names(self._model)
        kinds = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant", "USER_INPUT": "input"}
        param_of: dict[str, str] = {}
        input_kind: dict[str, str] = {}
        users: list[str] = []
        for spec in ep.graph_signature.input_specs:
            kind = kinds.get(spec.kind.name, spec.kind.name.lower())
            input_kind[spec.arg.name] = kind
            if kind in ("parameter", "buffer", "constant") and spec.target is not None:
                param_of[spec.arg.name] = canonical.get(spec.target, spec.target)
            if kind == "input":
                users.append(spec.arg.name)
        marks = dict(zip(users, self.marks))
        inputs = []
        for node in gm.graph.nodes:
            if node.op != "placeholder":
                continue
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                inputs.append(val)
                continue
            mark = marks.get(self._lifted.get(node.name, node.name), {})
            shape = tuple(
                batch if mark.get(d) == "batch" else seq if mark.get(d) == "seq" else int(s)
                for d, s in enumerate(val.shape)
            )
            with mode:
                inputs.append(torch.empty(shape, dtype=val.dtype, device=val.device))
            if mark == {} and any(not isinstance(s, int) for s in val.shape):
                raise GuardFailure(f"input {node.name} has a symbolic size dfx did not mark")
        return Traced(gm, inputs, "export", param_of, input_kind), mode


def _upper(vr: Any) -> float:
    try:
        return int(vr.upper)
    except (TypeError, OverflowError):  # oo
        return float("inf")


def _concrete(val: Any, values: dict[Any, int]) -> Any:
    """A SymInt/SymBool/SymFloat node value at ``values``; GuardFailure if a symbol is unknown."""
    import sympy

    expr = sympy.sympify(val.node.expr).xreplace({k: sympy.Integer(v) for k, v in values.items()})
    if expr.free_symbols:
        raise GuardFailure(f"size {val.node.expr} depends on a symbol the sweep does not set")
    if isinstance(val, torch.SymBool):
        return bool(expr)
    if isinstance(val, torch.SymFloat):
        return float(expr)
    return int(expr)


def _specialise(gm: torch.fx.GraphModule, values: dict[Any, int]) -> tuple[torch.fx.GraphModule, list[str]]:
    """A copy of ``gm`` with every symbolic size node folded to its value and every guard checked.

    Returns the copy and the names of the nodes removed.

    Raises
    ------
    GuardFailure
        A guard (``_assert_scalar``) is false at ``values``.
    """
    gm = copy.deepcopy(gm)
    graph = gm.graph
    erased: list[str] = []
    for node in list(graph.nodes):
        val = node.meta.get("val")
        if node.op == "call_function" and isinstance(val, (torch.SymInt, torch.SymBool, torch.SymFloat)):
            const = _concrete(val, values)
            for user in list(node.users):
                user.args = torch.fx.node.map_arg(user.args, lambda a, n=node, c=const: c if a is n else a)
                user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda a, n=node, c=const: c if a is n else a)
            erased.append(node.name)
            graph.erase_node(node)
    for node in list(graph.nodes):
        if node.op == "call_function" and str(node.target).rsplit(".", 1)[0] in _ASSERTS:
            if node.args and node.args[0] is False:
                raise GuardFailure(f"guard {node.args[1] if len(node.args) > 1 else node.name} fails at these sizes")
            erased.append(node.name)
            graph.erase_node(node)
    gm.recompile()
    return gm, erased


_REF = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")


def _renamed(graph: Graph, names: dict[str, str]) -> Graph:
    """``graph`` with its nodes renamed by ``names`` (edges and ``args_repr`` references follow)."""
    if not names:
        return graph

    def ref(m: re.Match) -> str:
        return "%" + names.get(m.group(1), m.group(1))

    nodes = tuple(
        replace(
            n,
            name=names.get(n.name, n.name),
            inputs=tuple(Edge(names.get(e.src, e.src), e.index) for e in n.inputs),
            args_repr=_REF.sub(ref, n.args_repr),
        )
        for n in graph.nodes
    )
    return replace(graph, nodes=nodes)


def capture_symbolic(
    model: torch.nn.Module,
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    batch: int,
    seq: int,
    symbolic_batch: bool = True,
    symbolic_seq: bool = True,
    seq_buffers: Sequence[str] = (),
    name: str | None = None,
) -> SymbolicCapture:
    """Export ``model(*args, **kwargs)`` once with symbolic batch (dim 0) and seq (dim 1) sizes.

    Parameters
    ----------
    model : nn.Module
        As :func:`dfx.capture.capture` takes it (meta parameters are fine).
    args, kwargs
        Example inputs built at (``batch``, ``seq``); a tensor input's dim 0 of size ``batch`` is
        marked ``batch`` and its dim 1 of size ``seq`` is marked ``seq``.
    batch, seq : int
        The example sizes, at least 2 where symbolic and different from each other.
    symbolic_batch, symbolic_seq : bool
        Which sizes to leave symbolic (a model whose parameters depend on seq has ``symbolic_seq=False``).
    seq_buffers : sequence of str
        Buffers whose dim 0 is the sequence length (:func:`seq_sized_buffers`): exported as inputs
        with a symbolic dim 0 (the ``seq`` symbol) and restored as buffers in the graph. Ignored
        where seq is not symbolic.
    name : str, optional
        The graph's name (default: the model's class name).

    Raises
    ------
    CaptureError
        The export failed, or a size the caller asked to leave symbolic was specialised by the model
        (torch's constraint violation: for example a table sized to seq): capture without it.
    """
    if (
        (symbolic_batch and batch < 2)
        or (symbolic_seq and seq < 2)
        or (symbolic_batch and symbolic_seq and batch == seq)
    ):
        raise CaptureError(
            f"symbolic capture needs example sizes of at least 2 that differ, got batch {batch}, seq {seq}"
        )
    kwargs = dict(kwargs or {})
    args, kwargs = _match_device(model, tuple(args), kwargs)
    dims = {
        "batch": torch.export.Dim("batch", min=2, max=_MAX_SIZE),
        "seq": torch.export.Dim("seq", min=2, max=_MAX_SIZE),
    }
    marks_of: dict[int, dict[int, str]] = {}  # id(tensor) -> {dim: "batch" | "seq"}

    def mark(v: Any) -> Any:
        if not isinstance(v, torch.Tensor):
            return None
        m: dict[int, str] = {}
        if symbolic_batch and v.dim() >= 1 and v.shape[0] == batch:
            m[0] = "batch"
        if symbolic_seq and v.dim() >= 2 and v.shape[1] == seq:
            m[1] = "seq"
        marks_of[id(v)] = m
        return {d: dims[w] for d, w in m.items()} or None

    lift = tuple(seq_buffers) if symbolic_seq else ()
    try:
        with _buffers_as_inputs(model, lift) as tables:
            kwargs = {**kwargs, **tables}
            bound = inspect.signature(model.forward).bind(*args, **kwargs)
            dynamic = {k: tree_map(mark, v) for k, v in bound.arguments.items()}
            for key, table in tables.items():  # a table's rows are the positions: dim 0 is seq
                marks_of[id(table)] = {0: "seq"}
                dynamic[key] = {0: dims["seq"]}
            with capture_context(), device_neutral_kernels(), warnings.catch_warnings():  # as dfx.capture.build
                warnings.simplefilter("ignore")
                ep = torch.export.export(model, args, kwargs, strict=False, dynamic_shapes=dynamic)
    except CaptureError:
        raise
    except Exception as exc:  # noqa: BLE001 - a specialised size, or any export failure: the caller captures concretely
        raise CaptureError(
            f"symbolic export failed: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
        ) from None
    symbols: dict[str, Any] = {}
    users = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    placeholders = {n.name: n for n in ep.graph_module.graph.nodes if n.op == "placeholder"}
    marks = [marks_of.get(id(v), {}) if isinstance(v, torch.Tensor) else {} for v in tree_flatten((args, kwargs))[0]]
    for user, m in zip(users, marks):
        val = placeholders[user].meta.get("val")
        for d, which in m.items():
            expr = val.shape[d].node.expr if isinstance(val.shape[d], torch.SymInt) else None
            if expr is None or not expr.is_Symbol:
                raise CaptureError(f"the model specialised its {which} size; capture it concretely")
            if symbols.setdefault(which, expr) != expr:
                raise CaptureError(
                    f"the model ties two inputs' {which} sizes to different symbols; capture it concretely"
                )
    lifted = _restore_buffers(ep, dict(zip(tables, lift)))
    return SymbolicCapture(
        name or type(model).__name__,
        symbolic_batch and "batch" in symbols,
        symbolic_seq and "seq" in symbols,
        marks,
        ep,
        model,
        symbols,
        _lifted=lifted,
    )


_TABLE_ARG = "_dfx_seq_buffer_{}"  # the keyword a seq-sized buffer is exported as


@contextmanager
def _buffers_as_inputs(model: torch.nn.Module, names: Sequence[str]) -> Iterator[dict[str, torch.Tensor]]:
    """While open, ``model.forward`` also takes each buffer of ``names`` as a keyword argument and
    runs with it in the buffer's place; yields those arguments (the buffers themselves).

    Raises
    ------
    CaptureError
        A name that is not a buffer of ``model``.
    """
    if not names:
        yield {}
        return
    owners: list[tuple[torch.nn.Module, str]] = []
    for full in names:
        prefix, _, attr = full.rpartition(".")
        try:
            owner = model.get_submodule(prefix)
        except AttributeError:
            raise CaptureError(f"{full!r} is not a buffer of the model") from None
        if owner._buffers.get(attr) is None:
            raise CaptureError(f"{full!r} is not a buffer of the model")
        owners.append((owner, attr))
    keys = [_TABLE_ARG.format(i) for i in range(len(names))]
    signature = inspect.signature(model.forward)
    params = list(signature.parameters.values())
    var_kw = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    extra = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in keys]
    plain = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    own = vars(model)["forward"] if "forward" in vars(model) else None  # a forward set on the instance runs, and stays
    inner = model.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        tables = [kwargs.pop(k) for k in keys]
        saved = [owner._buffers[attr] for owner, attr in owners]
        for (owner, attr), table in zip(owners, tables):
            owner._buffers[attr] = table
        try:
            return inner(*args, **kwargs)
        finally:
            for (owner, attr), buffer in zip(owners, saved):
                owner._buffers[attr] = buffer

    forward.__signature__ = signature.replace(parameters=[*plain, *extra, *var_kw])  # type: ignore[attr-defined]
    model.forward = forward  # type: ignore[method-assign]
    try:
        yield {k: owner._buffers[attr] for k, (owner, attr) in zip(keys, owners)}
    finally:
        if own is None:
            del model.forward
        else:
            model.forward = own  # type: ignore[method-assign]


def _restore_buffers(ep: Any, as_input: dict[str, str]) -> dict[str, str]:
    """In ``ep``'s graph, put each buffer exported as an input (``as_input``: argument -> buffer name)
    back as its own placeholder: the input's node takes the buffer's name and place, and the buffer's
    own placeholder (left unused) goes. Returns ``{buffer placeholder: the argument it was}``.

    Raises
    ------
    CaptureError
        The buffer's own placeholder is still read (the model reads it other than where it was
        swapped), or its name cannot be taken.
    """
    if not as_input:
        return {}
    graph = ep.graph_module.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    buffer_node = {s.target: s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "BUFFER"}
    lifted: dict[str, str] = {}
    for arg, target in as_input.items():
        own = placeholders.get(buffer_node.get(target, ""))
        table = placeholders.get(arg)
        if own is None or table is None or own.users:
            raise CaptureError(f"buffer {target!r} could not be exported as an input; capture it concretely")
        name = own.name
        own.prepend(table)
        graph.erase_node(own)
        table._rename(name)
        table.target = name
        if table.name != name:
            raise CaptureError(f"buffer {target!r} could not take back its name; capture it concretely")
        lifted[name] = arg
    ep.graph_module.recompile()
    return lifted


def seq_sized_buffers(at_a: torch.nn.Module, at_b: torch.nn.Module, seq_a: int, seq_b: int) -> tuple[str, ...] | None:
    """The buffers of one model built at two sequence lengths that are sized by it (dim 0 = ``seq``,
    the rest equal): ``()`` where no state differs, ``None`` where other state does (a parameter, or
    another dimension, sized by seq: the model needs a capture per seq).

    Examples
    --------
    >>> from dfx.models.llama import LlamaConfig, LlamaLayer
    >>> make = lambda s: LlamaLayer(LlamaConfig(dim=64, n_heads=4, n_kv_heads=4, hidden_dim=128, max_seq_len=s))
    >>> seq_sized_buffers(make(16), make(24), 16, 24)
    ('rotary.cos', 'rotary.sin')
    """
    a, b = dict(state_shapes(at_a)), dict(state_shapes(at_b))
    if a.keys() != b.keys():
        return None
    buffers = {n for n, _ in at_a.named_buffers(remove_duplicate=False)}
    names: list[str] = []
    for n, shape_a in a.items():
        shape_b = b[n]
        if shape_a == shape_b:
            continue
        if n not in buffers or len(shape_a) != len(shape_b) or len(shape_a) < 1:
            return None
        if (shape_a[0], shape_b[0]) != (seq_a, seq_b) or shape_a[1:] != shape_b[1:]:
            return None
        names.append(n)
    return tuple(names)


def state_shapes(model: torch.nn.Module) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Every parameter's and buffer's name and shape: a model built at two sizes with equal state shapes
    does not size its tensors by them (a rotary table sized to seq does)."""
    named = list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers(remove_duplicate=False))
    return tuple((n, tuple(int(s) for s in t.shape)) for n, t in named)
