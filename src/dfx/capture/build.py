"""Capture a PyTorch model as a torch-free :class:`dfx.ir.Graph`.

``capture(model, args, kwargs, method)`` traces the model (torch.export by default), propagates
shapes on fake tensors while recording each node's aten calls, and converts the result to the IR.
"""

from __future__ import annotations

import os
import re
import traceback
import warnings
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._pytree import tree_flatten

from dfx.capture.propagate import AtenRecorder, device_neutral_kernels, to_spec
from dfx.capture.routing import grouped_experts
from dfx.capture.trace import METHODS, Traced, capture_context, canonical_param_names
from dfx.errors import CaptureError, user_code
from dfx.ir import Edge, Graph, Node, ParameterInfo

__all__ = ["capture", "CAPTURE_METHODS", "warm_up"]

CAPTURE_METHODS = ("auto", "export", "fx", "dynamo")
_AUTO_ORDER = ("export", "fx", "dynamo")
# torch refusing a float dtype inside one op: its FFTs take float32 and float64 only (float16 too on
# CUDA and meta; torch/_refs/fft.py, _promote_type_fft), so a bf16 model with an FFT cannot be
# captured at all. The fix is a dtype the op takes, named before torch's text.
_UNSUPPORTED_DTYPE = re.compile(r"Unsupported dtype (?:torch\.)?(BFloat16|bfloat16|Half|float16)\b")
_FAILED_NODE = re.compile(r"failed at node (\w+)")


def capture(
    model: torch.nn.Module,
    args: Any = (),
    kwargs: dict[str, Any] | None = None,
    method: str = "auto",
    name: str | None = None,
) -> Graph:
    """Capture ``model`` called as ``model(*args, **kwargs)`` as a shape-annotated :class:`Graph`.

    Parameters
    ----------
    model : torch.nn.Module
        Any module; its parameters may live on the meta device (no real weights needed).
    args : tuple or Tensor
        Example positional inputs; real, meta or fake tensors. Only their shapes and dtypes are used.
    kwargs : dict, optional
        Example keyword inputs (e.g. ``{"inputs_embeds": x}``).
    method : {"auto", "export", "fx", "dynamo"}
        ``export`` is ``torch.export.export(strict=False)``; ``fx`` is ``torch.fx.symbolic_trace``;
        ``dynamo`` is TorchDynamo. ``auto`` tries them in that order.
    name : str, optional
        The graph's name; defaults to the model's class name.

    Returns
    -------
    Graph
        Every node with its fx opcode, target, module path, input edges, output specs, parameters
        read and aten calls, in topological order.

    Raises
    ------
    CaptureError
        If ``model`` is not an ``nn.Module``, ``method`` is unknown, or no method could capture the
        model; the message names the construct that stopped capture.
    """
    if not isinstance(model, torch.nn.Module):
        raise CaptureError(
            f"expected a torch.nn.Module, got {type(model).__name__}; wrap a function in an nn.Module "
            "whose forward calls it"
        )
    if method not in CAPTURE_METHODS:
        raise CaptureError(f"unknown capture method {method!r}; expected one of {', '.join(CAPTURE_METHODS)}")
    args = args if isinstance(args, tuple) else (args,) if isinstance(args, torch.Tensor) else tuple(args)
    kwargs = dict(kwargs or {})
    args, kwargs = _match_device(model, args, kwargs)
    _check_signature(model, args, kwargs)
    order = _AUTO_ORDER if method == "auto" else (method,)
    failures: list[str] = []
    texts: list[str] = []
    with user_code(f"{type(model).__name__}.forward", CaptureError):  # sys.exit() there is an error
        for m in order:
            try:
                graph = _capture_with(model, args, kwargs, m, name or type(model).__name__)
            except Exception as exc:  # each tracer fails in its own way; keep the reason
                failures.append(f"{m}: {_first_line(exc)}")
                texts.append(str(exc))
                continue
            return _check_returns_tensors(graph, model)
    raise CaptureError("could not capture the model" + _dtype_hint(texts) + " (" + "; ".join(failures) + ")")


def warm_up() -> None:
    """Pay torch.export's one-time start-up (about 1.5 s here: Dynamo's and the exporter's modules,
    fake tensors, the decomposition tables) on a one-op module, so that processes forked afterwards
    (:mod:`dfx.sweep.runner`'s pool) start with it paid and spend their time on the models."""
    from dfx.capture.trace import capture_context

    class _Twice(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    with capture_context():
        torch.export.export(_Twice(), (torch.zeros(2, 3),), strict=False)


def _dtype_hint(texts: list[str]) -> str:
    """``": torch has no bf16 kernel for fft_rfft ...; give --dtype fp32"`` when a tracer failed on a
    dtype an op refuses (:data:`_UNSUPPORTED_DTYPE`), else ``""``.

    Examples
    --------
    >>> print(_dtype_hint(["shape propagation failed at node fft_rfft (...): RuntimeError: Unsupported dtype BFloat16"]))
    : torch has no bf16 kernel for fft_rfft (torch's FFTs take fp32 and fp64); give --dtype fp32
    >>> _dtype_hint(["something else"])
    ''
    """
    found = next((m for m in map(_UNSUPPORTED_DTYPE.search, texts) if m), None)
    if found is None:
        return ""
    dtype = "bf16" if found.group(1).lower().startswith("bfloat") else "fp16"
    node = next((m.group(1) for m in map(_FAILED_NODE.search, texts) if m), None)
    op = node or "an op of this model"
    return f": torch has no {dtype} kernel for {op} (torch's FFTs take fp32 and fp64); give --dtype fp32"


def _check_returns_tensors(graph: Graph, model: torch.nn.Module) -> Graph:
    """``graph``, unless the model's forward returned no tensor at all (a 0-FLOP analysis of nothing)."""
    outputs = [n for n in graph.nodes if n.op == "output"]
    if outputs and not any(n.inputs for n in outputs):
        shown = next((n.args_repr for n in outputs), "")
        raise CaptureError(
            f"{type(model).__name__}.forward returned no tensor ({shown or 'None'}); return the tensors it computes"
        )
    return graph


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        if line.strip():
            text = line.strip()
            break
    # name where in the user's code the tracer stopped: torch says so in the message (export,
    # Dynamo), or the user's frame is in the traceback (fx runs forward under its tracer)
    loc = re.search(r'File "([^"]+)", line (\d+)', str(exc))
    where = f" at {loc.group(1)}:{loc.group(2)}" if loc and _is_user_file(loc.group(1)) else ""
    if not where:
        user = [f for f in traceback.extract_tb(exc.__traceback__) if _is_user_file(f.filename)]
        where = f" at {user[-1].filename}:{user[-1].lineno}" if user else ""
    return f"{type(exc).__name__}: {text[:300]}{where}"


def _is_user_file(filename: str) -> bool:
    package_dir = os.path.dirname(os.path.dirname(__file__))  # src/dfx
    return not ("site-packages" in filename or filename.startswith("<") or filename.startswith(package_dir))


def _match_device(model: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Move example tensors to the meta device when the model lives there (nothing is copied)."""
    first = next(iter(list(model.parameters()) + list(model.buffers())), None)
    if first is None or first.device.type != "meta":
        return args, kwargs

    def to_meta(v):
        return v.to("meta") if isinstance(v, torch.Tensor) and v.device.type != "meta" else v

    return tuple(to_meta(a) for a in args), {k: to_meta(v) for k, v in kwargs.items()}


def _check_signature(model: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    import inspect

    try:
        inspect.signature(model.forward).bind(*args, **kwargs)
    except TypeError as exc:
        raise CaptureError(f"the example inputs do not match {type(model).__name__}.forward: {exc}") from None


def _capture_with(model, args, kwargs, method: str, name: str) -> Graph:
    # A shape environment lets data-dependent sizes (boolean masks, nonzero) propagate as bounded
    # symbols instead of failing.
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
    with capture_context(), device_neutral_kernels(), grouped_experts(model), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = METHODS[method](model, args, kwargs, mode)
        recorder = AtenRecorder(traced.gm)
        with traced.state_swap(), mode:
            recorder.run(*traced.inputs)
    return _to_ir(traced, recorder, model, name)


def _module_path(node: torch.fx.Node) -> str:
    if node.op == "call_module":
        return str(node.target)
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return _clean_path(path)


def _clean_path(path: str) -> str:
    # "L['self'].layers[0].attn" -> "layers.0.attn"
    path = re.sub(r"^L\['[^']+'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']+)'\]", r".\1", path)
    return path.strip(".")


def _target_str(node: torch.fx.Node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    if isinstance(t, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return str(t)
    mod = getattr(t, "__module__", "") or ""
    qual = getattr(t, "__qualname__", getattr(t, "__name__", repr(t)))
    if mod in ("_operator", "operator"):
        return f"operator.{qual}"
    return f"{mod}.{qual}" if mod else qual


def _args_repr(node: torch.fx.Node) -> str:
    def fmt(v):
        if isinstance(v, torch.fx.Node):
            return f"%{v.name}"
        if isinstance(v, (list, tuple)):
            inner = ", ".join(fmt(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {fmt(x)}" for k, x in v.items()) + "}"
        return repr(v)

    parts = [fmt(a) for a in node.args] + [f"{k}={fmt(v)}" for k, v in node.kwargs.items()]
    return ", ".join(parts)


def _edges(node: torch.fx.Node, n_outputs: dict[str, int]) -> tuple[Edge, ...]:
    import operator

    flat, _ = tree_flatten((node.args, node.kwargs))
    srcs = [a for a in flat if isinstance(a, torch.fx.Node)]
    if node.op == "call_function" and node.target is operator.getitem and len(node.args) == 2:
        src, idx = node.args
        if isinstance(src, torch.fx.Node) and isinstance(idx, int) and n_outputs.get(src.name, 0) > 1:
            return (Edge(src.name, idx),)
    return tuple(Edge(s.name, 0) for s in srcs)


def _module_params(gm: torch.nn.Module, path: str) -> list[str]:
    sub = gm.get_submodule(path)
    names = [n for n, _ in sub.named_parameters()] + [n for n, _ in sub.named_buffers()]
    return [f"{path}.{n}" if path else n for n in names]


def _to_ir(traced: Traced, recorder: AtenRecorder, model: torch.nn.Module, name: str) -> Graph:
    gm = traced.gm
    param_of = traced.param_of
    params: dict[str, ParameterInfo] = {}

    def add_param(canonical: str, spec, kind: str) -> None:
        if canonical not in params:
            params[canonical] = ParameterInfo(canonical, spec, kind)

    kinds = _param_kinds(model)
    n_outputs = {k: len(v) for k, v in recorder.outputs.items()}
    nodes: list[Node] = []
    param_nodes: dict[str, str] = {}  # fx node name -> canonical param it holds
    for fx_node in gm.graph.nodes:
        outputs = recorder.outputs.get(fx_node.name, ())
        input_kind = ""
        reads: list[str] = []
        if fx_node.op == "placeholder":
            input_kind = traced.input_kind.get(fx_node.name, "input")
            if fx_node.name in param_of and outputs:
                canonical = param_of[fx_node.name]
                add_param(canonical, outputs[0], input_kind)
                param_nodes[fx_node.name] = canonical
        elif fx_node.op == "get_attr":
            target = str(fx_node.target)
            if outputs:
                canonical = param_of.get(target, target)
                input_kind = kinds.get(canonical, "constant")
                add_param(canonical, outputs[0], input_kind)
                param_nodes[fx_node.name] = canonical
        elif fx_node.op == "call_module":
            sub = gm.get_submodule(str(fx_node.target))
            for full in _module_params(gm, str(fx_node.target)):
                canonical = param_of.get(full, full)
                tensor = _lookup_tensor(sub, full, str(fx_node.target))
                if tensor is not None:
                    add_param(canonical, to_spec(tensor), kinds.get(canonical, "parameter"))
                    reads.append(canonical)
        edges = _edges(fx_node, n_outputs)
        reads += [param_nodes[e.src] for e in edges if e.src in param_nodes]
        nodes.append(
            Node(
                name=fx_node.name,
                op=fx_node.op,
                target=_target_str(fx_node),
                module_path=_module_path(fx_node),
                inputs=edges,
                outputs=outputs,
                params=tuple(dict.fromkeys(reads)),
                aten_calls=recorder.calls.get(fx_node.name, ()),
                args_repr=_args_repr(fx_node),
                input_kind=input_kind,
            )
        )
    aliases = _aliases(model)
    infos = tuple(ParameterInfo(p.name, p.spec, p.kind, tuple(aliases.get(p.name, ()))) for p in params.values())
    meta: tuple[tuple[str, str], ...] = (("torch_version", torch.__version__),)
    if recorder.data_dependent:
        bounds = ", ".join(f"{sym} <= {upper}" for sym, upper in recorder.data_dependent.items())
        warnings.warn(
            f"data-dependent sizes costed at their upper bounds ({bounds}): the FLOPs and bytes of "
            "the nodes they reach are upper bounds",
            stacklevel=3,
        )
        meta += (("data_dependent_sizes", bounds),)
    if recorder.routing.routed:
        routed = _routed_summary(recorder.routing.routed)
        warnings.warn(
            f"top-k routed sizes costed at balanced routing ({routed}): the routed total is exact, "
            "the split between experts is assumed (docs/cost-model.md)",
            stacklevel=3,
        )
        meta += (("routed_sizes", routed),)
    return Graph(tuple(nodes), infos, name=name, capture_method=traced.method, meta=meta)


def _routed_summary(routed: dict) -> str:
    """``"u0 = 4, u1 = 4 of 8 slots over 2 classes"``, one clause per routing group."""
    groups: dict[int, list[str]] = {}
    slices = {}
    for sym, (value, where) in routed.items():
        groups.setdefault(where.group, []).append(f"{sym} = {value}")
        slices[where.group] = where
    return "; ".join(
        f"{', '.join(parts)} of {slices[g].total} slots over {slices[g].classes} classes" for g, parts in groups.items()
    )


def _lookup_tensor(sub: torch.nn.Module, full: str, prefix: str):
    local = full[len(prefix) + 1 :] if prefix else full
    try:
        return sub.get_parameter(local)
    except AttributeError:
        try:
            return sub.get_buffer(local)
        except AttributeError:
            return None


def _param_kinds(model: torch.nn.Module) -> dict[str, str]:
    kinds = {n: "parameter" for n, _ in model.named_parameters(remove_duplicate=False)}
    kinds.update({n: "buffer" for n, _ in model.named_buffers(remove_duplicate=False)})
    return kinds


def _aliases(model: torch.nn.Module) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for alias, canonical in canonical_param_names(model).items():
        if alias != canonical:
            out.setdefault(canonical, []).append(alias)
    return out
