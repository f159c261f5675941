"""The three ways dfx captures a model as an fx graph: torch.export, fx symbolic_trace, TorchDynamo.

Each tracer returns a :class:`Traced`: an fx ``GraphModule`` whose placeholders line up with the
inputs it expects, the (fake) values to feed it, and which placeholders or attributes are
parameters. Shape propagation (:mod:`dfx.capture.propagate`) runs afterwards, identically for all.
"""

from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["METHODS", "Traced", "trace_dynamo", "trace_export", "trace_fx"]


@dataclass
class Traced:
    """An fx graph ready for shape propagation.

    ``inputs`` are the flat placeholder values (fake tensors) in placeholder order; ``param_of``
    maps a placeholder name (export) or an attribute path (fx, dynamo) to the canonical parameter
    name; ``input_kind`` gives each placeholder's kind (``input``, ``parameter``, ``buffer``,
    ``constant``).
    """

    gm: torch.fx.GraphModule
    inputs: list[Any]
    method: str
    param_of: dict[str, str] = field(default_factory=dict)
    input_kind: dict[str, str] = field(default_factory=dict)
    state_swap: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext


@contextlib.contextmanager
def capture_context():
    """Grad-mode independent capture: no inference mode, no grad, MHA fast path off.

    The fast path of ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` fuses the whole
    layer into one native op that hides its matmuls (case PB-10); switching it off during capture
    makes the layer trace as its linear, attention and norm ops, whatever the user's mode.
    """
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    # A failed trace is an expected outcome under method="auto"; torch logs it loudly (warnings and
    # whole graph listings). dfx reports the reason itself, in one line.
    torch_logger = logging.getLogger("torch")
    level = torch_logger.level
    torch_logger.setLevel(logging.CRITICAL)
    try:
        # torch.export prints a failed trace's partial graph to stderr before raising.
        with torch.inference_mode(False), torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
        torch_logger.setLevel(level)


def make_fake(mode: FakeTensorMode, t: torch.Tensor) -> torch.Tensor:
    """A fake tensor with ``t``'s shape, strides, dtype and device.

    The device is kept, meta included: a traced graph may hold the device as a literal
    (``torch.arange(n, device=x.device)``), and a propagated tensor on another device would not
    match it.
    """
    with mode:
        fake = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=t.device)
    if t.requires_grad and fake.is_floating_point():
        fake.requires_grad_(False)
    return fake


def _fakeify(mode: FakeTensorMode, tree: Any) -> Any:
    return tree_map(lambda v: make_fake(mode, v) if isinstance(v, torch.Tensor) else v, tree)


def canonical_param_names(model: torch.nn.Module) -> dict[str, str]:
    """Map every parameter/buffer name, including tied aliases, to its first (canonical) name."""
    first: dict[int, str] = {}
    out: dict[str, str] = {}
    named = list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers(remove_duplicate=False))
    for name, tensor in named:
        key = id(tensor)
        first.setdefault(key, name)
        out[name] = first[key]
    return out


def trace_export(model: torch.nn.Module, args: tuple, kwargs: dict, mode: FakeTensorMode) -> Traced:
    """Capture with ``torch.export.export(strict=False)`` (the default method)."""
    ep = torch.export.export(model, args, kwargs, strict=False)
    gm = ep.graph_module
    canonical = canonical_param_names(model)
    param_of: dict[str, str] = {}
    input_kind: dict[str, str] = {}
    kinds = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant", "USER_INPUT": "input"}
    for spec in ep.graph_signature.input_specs:
        kind = kinds.get(spec.kind.name, spec.kind.name.lower())
        input_kind[spec.arg.name] = kind
        if kind in ("parameter", "buffer", "constant") and spec.target is not None:
            param_of[spec.arg.name] = canonical.get(spec.target, spec.target)
    inputs = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        inputs.append(make_fake(mode, val) if isinstance(val, torch.Tensor) else val)
    return Traced(gm, inputs, "export", param_of, input_kind)


def _module_state_swap(gm: torch.nn.Module, mode: FakeTensorMode) -> Callable[[], contextlib.AbstractContextManager]:
    """A context that swaps every parameter and buffer of ``gm`` for a fake one while it is open."""
    from torch.nn.utils.stateless import _reparametrize_module

    state = {}
    for name, t in list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False)):
        state[name] = make_fake(mode, t)
    # Tied names must map to one fake tensor, so that aliasing survives.
    canonical = canonical_param_names(gm)
    state = {name: state[canonical[name]] for name in state}
    return lambda: _reparametrize_module(gm, state, tie_weights=True, strict=False)


def _flat_user_inputs(mode: FakeTensorMode, args: tuple, kwargs: dict) -> list[Any]:
    flat, _ = tree_flatten((args, kwargs))
    return [make_fake(mode, v) if isinstance(v, torch.Tensor) else v for v in flat]


def trace_fx(model: torch.nn.Module, args: tuple, kwargs: dict, mode: FakeTensorMode) -> Traced:
    """Capture with ``torch.fx.symbolic_trace`` (module-level nodes; no shapes until propagated).

    Keyword inputs are bound by name; parameters the caller leaves out are fixed at their default
    values as concrete arguments; the traced module takes its inputs in ``forward``'s order.
    """
    import inspect

    sig = inspect.signature(model.forward)
    bound = sig.bind_partial(*args, **kwargs)
    # Non-tensor arguments are fixed as concrete values (use_proj=True stays True, so a branch on it
    # is resolved at trace time), at the caller's value or else the default.
    concrete = {
        k: bound.arguments.get(k, p.default)
        for k, p in sig.parameters.items()
        if not isinstance(bound.arguments.get(k), torch.Tensor)
        and (k in bound.arguments or p.default is not inspect.Parameter.empty)
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    }
    gm = torch.fx.symbolic_trace(model, concrete_args=concrete or None)
    # One placeholder per parameter of forward, in order (a concrete one is renamed `use_proj_1`
    # and must be fed the value it was fixed at).
    names = list(sig.parameters)
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    values = []
    for name in names[: len(placeholders)]:
        value = bound.arguments[name] if name in bound.arguments else concrete.get(name)
        values.append(make_fake(mode, value) if isinstance(value, torch.Tensor) else value)
    return Traced(gm, values, "fx", _attr_param_map(gm, model), {}, _module_state_swap(gm, mode))


def _attr_param_map(gm: torch.nn.Module, model: torch.nn.Module) -> dict[str, str]:
    """Map each tensor attribute path of ``gm`` to the model's canonical name for the same tensor.

    fx and Dynamo install the model's own parameter objects in the traced module (Dynamo under
    mangled names such as ``L__self___l_weight``), so identity recovers the user's names.
    """
    by_id: dict[int, str] = {}
    canonical = canonical_param_names(model)
    for name, t in list(model.named_parameters(remove_duplicate=False)) + list(
        model.named_buffers(remove_duplicate=False)
    ):
        by_id.setdefault(id(t), canonical[name])
    out: dict[str, str] = {}
    named = list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False))
    for name, t in named:
        out[name] = by_id.get(id(t), name)
    for node in gm.graph.nodes:
        if node.op == "get_attr" and str(node.target) not in out:
            t = _get_attr(gm, str(node.target))
            if isinstance(t, torch.Tensor):
                out[str(node.target)] = by_id.get(id(t), str(node.target))
    return out


def _get_attr(module: torch.nn.Module, path: str):
    obj: Any = module
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def trace_dynamo(model: torch.nn.Module, args: tuple, kwargs: dict, mode: FakeTensorMode) -> Traced:
    """Capture with TorchDynamo (``torch._dynamo.export``); a graph break is a capture failure."""
    import torch._dynamo

    torch._dynamo.reset()
    result = torch._dynamo.export(model, aten_graph=False)(*args, **kwargs)
    gm = result.graph_module if hasattr(result, "graph_module") else result[0]
    inputs = _flat_user_inputs(mode, args, kwargs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        inputs = inputs[: len(placeholders)]
    return Traced(gm, inputs, "dynamo", _attr_param_map(gm, model), {}, _module_state_swap(gm, mode))


METHODS: dict[str, Callable[[torch.nn.Module, tuple, dict, FakeTensorMode], Traced]] = {
    "export": trace_export,
    "fx": trace_fx,
    "dynamo": trace_dynamo,
}
