"""Capture a module with TorchDynamo and read back the guards PyTorch installed for it.

Nothing here guesses a guard. A recording backend compiles ``model`` once (on the example inputs'
device: ``meta`` for built-ins, so nothing is computed) and records each graph's ``ShapeEnv``;
the frame's cache entry then holds PyTorch's own ``GuardManager`` tree, which is walked for
its leaf guards (``TENSOR_MATCH``, ``GLOBAL_STATE``, ``ID_MATCH``, ...) and its epilogue of
symbolic shape guards. The model is called through :class:`_Entry`, a one-line module whose
``forward(*args, **kwargs)`` frame dfx owns (Dynamo does not start a frame inside ``torch.nn``, so
``Conv2d.forward`` itself would hold no cache entry); inputs are therefore guarded as
``L['args'][i]``, shown with the parameter name they bind to. A check builds the new inputs and
calls that manager's ``check_verbose``: exactly the test Dynamo runs before reusing the compiled
graph, so a failure is a recompile. (``_debug_get_cache_entry_list`` and the guard-manager methods
are private torch API; they are used as they stand in torch 2.13.)

Side effect: ``torch._dynamo.reset()`` clears Dynamo's caches first, so the frame's only cache
entry is this capture's. Guards of resume frames after a graph break are not listed (their
breaks are); ``check`` evaluates the guards of the model's own ``forward`` frame.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from typing import Any, Sequence

import torch
import torch._dynamo as dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
from torch._dynamo.utils import counters

from dfx.errors import CaptureError, DfxError
from dfx.shapes.guard_types import DynamicSymbol, GraphBreak, Guard, GuardCheck, GuardReport, InputGuard
from dfx.shapes.parse import DynamicDim, InputSpec

__all__ = ["capture_guards"]

_GLOBAL_KINDS = ("GLOBAL_STATE", "TORCH_FUNCTION_MODE_STACK", "DEFAULT_DEVICE")
_ZERO_ONE_MARK = "0/1 specialization"


class _Entry(torch.nn.Module):
    """The frame TorchDynamo compiles: calls ``inner`` with the inputs as they came."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner(*args, **kwargs)


def capture_guards(
    model: torch.nn.Module,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    name: str = "",
    dynamic: Sequence[DynamicDim] = (),
    check: Sequence[InputSpec] | None = None,
) -> GuardReport:
    """Compile ``model`` on ``args`` with TorchDynamo and report its guards (and, optionally, a check).

    Parameters
    ----------
    model : torch.nn.Module
        The module; it runs once on copies of ``args`` (on their device: ``meta`` computes nothing).
    args, kwargs
        Example inputs. Tensor inputs are named by ``model.forward``'s positional parameters.
    name : str
        What to call the model in the report (default: its class name).
    dynamic : sequence of DynamicDim
        Dimensions to ``torch._dynamo.mark_dynamic`` before compiling.
    check : sequence of InputSpec, optional
        One new shape (and optional dtype) per tensor input, evaluated with the guard manager's
        ``check_verbose``.

    Returns
    -------
    GuardReport

    Raises
    ------
    DfxError
        On a bad ``dynamic`` or ``check`` entry, or when Dynamo cannot compile the model.
    """
    inputs = _fresh_inputs(args)
    params = _param_names(model, len(inputs))
    marks = _resolve_dynamic(dynamic, params, inputs)
    for index, dim in marks:
        dynamo.mark_dynamic(inputs[index], dim)
    entry = _Entry(model)
    envs, breaks = _compile(entry, inputs, kwargs or {})
    manager = _guard_manager()
    symbols = _symbols(envs, params)
    guards = _walk(manager.root, params) + _epilogue(manager.root, params, symbols)
    tensor_guards = {g.source: g.text for g in guards if g.kind == "TENSOR_MATCH" and g.group == "input"}
    in_guards = tuple(
        _input_guard(params[i], t, tensor_guards, symbols, [d for j, d in marks if j == i])
        for i, t in enumerate(inputs)
        if isinstance(t, torch.Tensor)
    )
    result = None if check is None else _check(manager, entry, params, inputs, kwargs or {}, check)
    return GuardReport(
        model=name or type(model).__name__,
        inputs=in_guards,
        guards=tuple(guards),
        symbols=symbols,
        graph_breaks=breaks,
        graphs=len(envs),
        check=result,
        warnings=_warnings(in_guards),
        torch_version=torch.__version__,
    )


def _param_names(model: torch.nn.Module, n_inputs: int = 0) -> list[str]:
    """Names of forward's positional inputs; a ``*args`` gives ``args[0]``, ``args[1]``, ... for the rest."""
    sig = inspect.signature(model.forward)
    names = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in sig.parameters.values() if p.kind == p.VAR_POSITIONAL), None)
    if star is not None:
        names += [f"{star}[{k}]" for k in range(max(n_inputs - len(names), 0))]
    return names


def _fresh_inputs(args: Sequence[Any]) -> list[Any]:
    """Copies of the example tensors (clone keeps shape, dense strides, dtype, device), so marks don't leak."""
    return [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]


def _resolve_dynamic(dynamic: Sequence[DynamicDim], params: list[str], inputs: list[Any]) -> list[tuple[int, int]]:
    out = []
    for mark in dynamic:
        index = int(mark.input) if mark.input.isdigit() else (params.index(mark.input) if mark.input in params else -1)
        if not 0 <= index < len(inputs) or not isinstance(inputs[index], torch.Tensor):
            raise DfxError(
                f"--dynamic {mark.input}:{mark.dim}: no tensor input {mark.input!r}; inputs are {', '.join(params[: len(inputs)])}"
            )
        if not -inputs[index].ndim <= mark.dim < inputs[index].ndim:
            raise DfxError(
                f"--dynamic {mark.input}:{mark.dim}: input {params[index]} has {inputs[index].ndim} dimensions"
            )
        out.append((index, mark.dim % inputs[index].ndim))
    return out


def _compile(model: _Entry, inputs: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], tuple[GraphBreak, ...]]:
    """Compile and run once with a recording backend; return each graph's ShapeEnv and the graph breaks."""
    envs: list[Any] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]):
        from torch._guards import TracingContext

        ctx = TracingContext.try_get()
        envs.append(ctx.fake_mode.shape_env if ctx is not None and ctx.fake_mode is not None else None)
        return gm.forward

    dynamo.reset()
    before = Counter(counters["graph_break"])
    try:
        torch.compile(model, backend=backend)(*inputs, **kwargs)
    except Exception as exc:  # Dynamo's errors are long; the first line names the problem
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CaptureError(f"TorchDynamo could not compile {type(model.inner).__name__}: {first}") from None
    after = Counter(counters["graph_break"]) - before
    breaks = tuple(GraphBreak(_first_line(reason), n, reason.strip()) for reason, n in after.items())
    return envs, breaks


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    detail = next((ln for ln in lines[1:] if ln.startswith("Explanation:")), "")
    return (lines[0] + (" - " + detail.removeprefix("Explanation:").strip() if detail else "")) if lines else ""


def _guard_manager() -> Any:
    """PyTorch's guard manager of the one cache entry on the entry frame (the caches were reset)."""
    entries = _debug_get_cache_entry_list(_Entry.forward.__code__)
    if not entries:
        raise CaptureError("TorchDynamo compiled no graph for the model; nothing is guarded")
    return entries[0].guard_manager


def _split(part: str) -> tuple[str, str]:
    """A guard code part -> (the check, the user line it came from)."""
    text, _, origin = part.partition("  # ")
    return text.strip(), origin.strip()


def _walk(manager: Any, params: list[str]) -> list[Guard]:
    """Every leaf guard in the tree, depth first, grouped by what it reads."""
    out: list[Guard] = []
    source = manager.get_source() if hasattr(manager, "get_source") else ""
    source = "" if source == "L" else _readable(source, params)
    for leaf in manager.get_leaf_guards():
        kind = type(leaf).__name__
        for part in leaf.verbose_code_parts():
            out += _as_guards(kind, part, source, params)
    for child in manager.get_child_managers():
        out += _walk(child, params)
    return out


def _as_guards(kind: str, part: str, source: str, params: list[str]) -> list[Guard]:
    text, origin = _split(part)
    if kind == "GLOBAL_STATE":
        return _global_state(text, origin)
    if kind in _GLOBAL_KINDS or (not source and kind == "LAMBDA_GUARD"):
        group = "global"
    elif any(source == p or source.startswith((f"{p}.", f"{p}[")) for p in params):
        group = "input"
    else:
        group = "object"
    return [Guard(kind, group, text, source, origin, _ZERO_ONE_MARK in part)]


def _global_state(text: str, origin: str) -> list[Guard]:
    """Split ``___check_global_state() against {...}`` into one readable guard per setting."""
    _, _, payload = text.partition(" against ")
    try:
        state = json.loads(payload)
    except ValueError:
        return [Guard("GLOBAL_STATE", "global", text, "", origin)]
    state["default_dtype"] = str(torch.get_default_dtype())  # the JSON holds its ScalarType number
    return [
        Guard("GLOBAL_STATE", "global", f"{k} == {json.dumps(v)}", "", origin)
        for k, v in state.items()
        if not isinstance(v, dict)
    ]


def _epilogue(root: Any, params: list[str], symbols: tuple[DynamicSymbol, ...]) -> list[Guard]:
    """The relational guards checked after the tree: ShapeEnv relations, and object-aliasing checks."""
    out = []
    for lam in root.get_epilogue_lambda_guards():
        for part in lam.verbose_code_parts():
            text, origin = _split(part)
            sources = _sources_in(text, params)
            if sources:  # a relation between sizes/strides: the ShapeEnv's guards
                zero_one = _ZERO_ONE_MARK in part
                out.append(
                    Guard("SHAPE_ENV", "shape", text, sources, origin, zero_one, _symbolic(text, params, symbols))
                )
            else:  # other relational guards (e.g. two globals are the same object)
                out.append(Guard("LAMBDA_GUARD", "object", text, "", origin))
    return out


def _sources_in(text: str, params: list[str]) -> str:
    found = re.findall(r"L\['args'\]\[\d+\]\.(?:size\(\)\[\d+\]|stride\(\)\[\d+\]|storage_offset\(\))", text)
    return ", ".join(dict.fromkeys(_readable(f, params) for f in found))


def _symbolic(text: str, params: list[str], symbols: tuple[DynamicSymbol, ...]) -> str:
    """The guard with each dynamic size replaced by its symbol: ``101 <= L['args'][0].size()[1]`` -> ``101 <= s27``."""
    out = _readable(text, params)
    for s in sorted(symbols, key=lambda s: -len(s.source)):
        out = out.replace(s.source, s.symbol)
    return out


def _readable(source: str, params: list[str]) -> str:
    """``L['args'][1].size()[0]`` -> ``y.size()[0]`` (positional input 1 binds parameter ``y``)."""

    def name(m: re.Match) -> str:
        i = int(m.group(1))
        return params[i] if i < len(params) else f"args[{i}]"

    return re.sub(r"L\['args'\]\[(\d+)\]", name, source).replace("L['kwargs']", "kwargs")


def _symbols(envs: list[Any], params: list[str]) -> tuple[DynamicSymbol, ...]:
    out: dict[str, DynamicSymbol] = {}
    for env in envs:
        if env is None:
            continue
        for sym, sources in env.var_to_sources.items():
            rng = env.var_to_range.get(sym)
            lo = _bound(rng.lower) if rng is not None else None
            hi = _bound(rng.upper) if rng is not None else None
            out.setdefault(
                str(sym), DynamicSymbol(str(sym), _readable(sources[0].name, params) if sources else "", lo or 0, hi)
            )
    return tuple(out.values())


def _bound(x: Any) -> int | None:
    """A range end as an int; None for +-infinity (sympy's ``oo`` or torch's ``int_oo``)."""
    import sympy

    return int(x) if isinstance(x, sympy.Integer) else None


def _input_guard(
    name: str, t: torch.Tensor, tensor_guards: dict[str, str], symbols: tuple[DynamicSymbol, ...], requested: list[int]
) -> InputGuard:
    src = name
    size, stride = _guarded_lists(tensor_guards.get(src, ""))
    by_source = {s.source: s.symbol for s in symbols}
    shape = tuple(
        (size[i] if size and size[i] is not None else by_source.get(f"{src}.size()[{i}]", "dynamic"))
        for i in range(t.ndim)
    )
    strides = tuple((stride[i] if stride and stride[i] is not None else "dynamic") for i in range(t.ndim))
    specialized = tuple(d for d in requested if isinstance(shape[d], int))
    return InputGuard(
        name,
        shape,
        strides,
        str(t.dtype).removeprefix("torch."),
        str(t.device),
        t.requires_grad,
        tuple(requested),
        specialized,
    )


def _guarded_lists(text: str) -> tuple[list[int | None] | None, list[int | None] | None]:
    """``size=[2, None, 4], stride=[None, 4, 1]`` of a TENSOR_MATCH guard (None: not checked, dynamic)."""
    m = re.search(r"size=\[([^\]]*)\], stride=\[([^\]]*)\]", text)
    if not m:
        return None, None
    conv = lambda s: [None if x.strip() == "None" else int(x) for x in s.split(",") if x.strip()]  # noqa: E731
    return conv(m.group(1)), conv(m.group(2))


def _warnings(inputs: tuple[InputGuard, ...]) -> tuple[str, ...]:
    out = []
    for i in inputs:
        for d in i.specialized:
            why = (
                (
                    "Dynamo specialises sizes 0 and 1, so the compiled graph holds only for this size; "
                    "give an example of size >= 2"
                )
                if i.shape[d] in (0, 1)
                else "a guard pinned it"
            )
            out.append(f"{i.name} dim {d} was marked dynamic but is specialised to {i.shape[d]}: {why}")
    return tuple(out)


def _check(
    manager: Any,
    entry: _Entry,
    params: list[str],
    inputs: list[Any],
    kwargs: dict[str, Any],
    specs: Sequence[InputSpec],
) -> GuardCheck:
    tensors = [i for i, a in enumerate(inputs) if isinstance(a, torch.Tensor)]
    if len(specs) != len(tensors):
        raise DfxError(
            f"--check gives {len(specs)} shape(s) but the model takes {len(tensors)} tensor input(s); give one per input"
        )
    new = list(inputs)
    for i, spec in zip(tensors, specs):
        ex = inputs[i]
        dtype = _dtype(spec.dtype) if spec.dtype else ex.dtype
        new[i] = torch.empty(spec.shape, dtype=dtype, device=ex.device).requires_grad_(ex.requires_grad)
    f_locals = {"self": entry, "args": tuple(new), "kwargs": kwargs}
    result = manager.check_verbose(f_locals)
    failed = () if result.result else _narrow(tuple(_split(p)[0] for p in result.verbose_code_parts), f_locals)
    echo = tuple(
        {"name": params[i], "shape": list(new[i].shape), "dtype": str(new[i].dtype).removeprefix("torch.")}
        for i in tensors
    )
    return GuardCheck(echo, bool(result.result), failed)


def _narrow(parts: tuple[str, ...], f_locals: dict[str, Any]) -> tuple[str, ...]:
    """Of the parts of a failed symbolic-shape lambda (PyTorch reports them all), those that are false.

    Each part is a plain Python expression over ``L`` (sizes and strides); one that cannot be
    evaluated on its own is kept, so nothing PyTorch reported is dropped unchecked.
    """

    def fails(text: str) -> bool:
        try:
            return not eval(text, {"__builtins__": {}}, {"L": f_locals})  # noqa: S307 - PyTorch's own guard text
        except Exception:
            return True

    narrowed = tuple(p for p in parts if fails(p))
    return narrowed or parts


def _dtype(name: str) -> torch.dtype:
    from dfx.models.spec import parse_dtype

    key = name.strip().lower().removeprefix("torch.")
    try:
        return parse_dtype(key)  # float spellings: fp32, bf16, half, ...
    except DfxError:
        dtype = getattr(torch, key, None)  # int64, int32, bool, ...
    if not isinstance(dtype, torch.dtype):
        raise DfxError(f"unknown dtype {name!r} in --check; use e.g. float32, bf16, float16, int64")
    return dtype
