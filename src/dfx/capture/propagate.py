"""Shape propagation on fake tensors, recording the aten calls every fx node dispatches to.

:class:`AtenRecorder` runs an fx ``GraphModule`` node by node (a ``torch.fx.Interpreter``) on fake
tensors, so nothing is allocated and no real weights are needed. Call hierarchy::

    run()
      run_node(n)           -> enters the recording mode, delegates, records output specs
        placeholder / get_attr / call_function / call_module / call_method / output (inherited)

Every aten operator that reaches the Python dispatcher while a node runs is recorded for that node,
with its arguments turned into :class:`dfx.ir.TensorSpec` (habit: "analyse on fake tensors").
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from dfx.capture.routing import RoutingTracker, is_one_hot_target
from dfx.ir import ArgValue, AtenCall, TensorSpec

__all__ = ["AtenRecorder", "device_neutral_kernels", "to_arg_value", "to_spec"]


def to_spec(t: torch.Tensor) -> TensorSpec:
    """The :class:`TensorSpec` of a (fake, meta or real) tensor.

    Raises
    ------
    ValueError
        If a size is symbolic and has no concrete hint (an unbacked size).
    """
    shape = tuple(_concrete(s) for s in t.shape)
    try:
        stride = tuple(_concrete(s) for s in t.stride())
    except (RuntimeError, ValueError):  # sparse or nested tensors have no strides
        stride = None
    return TensorSpec(shape, str(t.dtype).removeprefix("torch."), stride)


# Data-dependent sizes met while propagating (an unbacked symbol such as u0 from a boolean mask or
# nonzero), as "u0 <= 64" strings; AtenRecorder collects them per run.
_DATA_DEPENDENT: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "dfx_data_dependent", default=None
)
# The routing tracker of the run in progress: top-k routed sizes it knows are costed at their
# balanced share of the routed total, not their upper bound (dfx.capture.routing).
_ROUTING: contextvars.ContextVar[RoutingTracker | None] = contextvars.ContextVar("dfx_routing", default=None)


def _concrete(size: Any) -> int:
    """A size as an int: its value, its hint, or for a data-dependent size its upper bound.

    A data-dependent size (``x[mask]`` has ``mask.sum()`` rows) has no value on fake tensors; the
    shape environment bounds it (``0 <= u0 <= mask.numel()``), and dfx costs it at that upper
    bound, so the FLOPs and bytes of every node it reaches are upper bounds, reported as such. A
    size made of top-k routed counts only (an expert's tokens) is costed at their balanced shares,
    which sum to the routed total exactly (:mod:`dfx.capture.routing`).

    Raises
    ------
    ValueError
        If a symbolic size has neither a value nor a finite upper bound.
    """
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt):
        hint = size.node.hint if hasattr(size.node, "hint") else None
        if hint is not None:
            return int(hint)
        env, expr = size.node.shape_env, size.node.expr
        routing = _ROUTING.get()
        routed = {sym: routing.value_of(str(sym)) for sym in expr.free_symbols} if routing else {}
        if routed and all(v is not None for v in routed.values()):
            return int(expr.xreplace(routed))
        upper = env.bound_sympy(expr).upper
        if upper.is_finite:
            seen = _DATA_DEPENDENT.get()
            if seen is not None:
                for sym in sorted(expr.free_symbols, key=str):  # u0, not the 16*u0 of a stride
                    seen[str(sym)] = int(env.bound_sympy(sym).upper)
            return int(upper)
        raise ValueError(
            f"data-dependent size {size} has no upper bound; give an example whose sizes do not depend on data"
        )
    return int(size)


def to_arg_value(value: Any) -> ArgValue:
    """Turn an aten argument into a JSON-able :data:`dfx.ir.ArgValue` (tensors become specs)."""
    if isinstance(value, torch.Tensor):
        return to_spec(value)
    if isinstance(value, (list, tuple, torch.Size)):
        return tuple(to_arg_value(v) for v in value)
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        try:
            return _concrete(value) if isinstance(value, torch.SymInt) else str(value)
        except ValueError:
            return str(value)
    # dtypes, devices, layouts, memory formats, ...: their readable name
    return str(value)


@contextlib.contextmanager
def device_neutral_kernels() -> Iterator[None]:
    """Propagate through the device-independent decompositions, not a device library's fused kernel.

    A composite op such as ``aten.lstm`` picks its kernel by the device it runs on: on the CPU with
    oneDNN on, a whole LSTM layer becomes one ``mkldnn_rnn_layer`` call; on CUDA with cuDNN on, one
    ``_cudnn_rnn``. The recorder sees only that call, so the products and pointwise ops the rules
    cost would vanish from the graph (issue #19, "kernels chosen by the propagation device"); with
    both libraries off, the dispatcher takes the portable path every device shares (per-step
    ``addmm`` and pointwise calls), the one the meta device takes. Only the choice of kernel
    changes, never a shape; the user's settings are restored on exit.
    """
    mkldnn, cudnn = torch._C._get_mkldnn_enabled(), torch._C._get_cudnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    torch._C._set_cudnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(mkldnn)
        torch._C._set_cudnn_enabled(cudnn)


class _RecordingMode(TorchDispatchMode):
    """A dispatch mode that appends every aten call it sees to ``self.calls``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[AtenCall] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.namespace == "prim":  # metadata queries (prim.device, ...): no work, no data
            return out
        routing = _ROUTING.get()
        if routing is not None:
            routing.on_op(func, args, kwargs, out)
        flat_out, _ = tree_flatten(out)
        self.calls.append(
            AtenCall(
                op=_op_name(func),
                args=tuple(to_arg_value(a) for a in args),
                kwargs=tuple(sorted((k, to_arg_value(v)) for k, v in kwargs.items())),
                outputs=tuple(to_spec(t) for t in flat_out if isinstance(t, torch.Tensor)),
            )
        )
        return out


def _op_name(func: Any) -> str:
    # str(torch.ops.aten.mm.default) == "aten.mm.default"
    return str(func)


# Ops every GPU and accelerator backend runs as one fused kernel, recorded as that one call whatever
# the propagation device lowers them to: on the meta device scaled_dot_product_attention lowers to
# its math backend, whose S x S scores would otherwise be charged as memory traffic.
_FUSED_OP = "aten.scaled_dot_product_attention.default"
_FUSED_TARGETS: tuple[Any, ...] = (
    torch.ops.aten.scaled_dot_product_attention.default,
    torch._C._nn.scaled_dot_product_attention,
    torch.nn.functional.scaled_dot_product_attention,
)


def _fused_layout(out: Any) -> Any:
    """The attention output as fused kernels lay it out: [B, H, S, D] over [B, S, H, D] memory.

    Flash and memory-efficient kernels (and PyTorch's CPU flash kernel) write the output
    head-interleaved, so the usual ``out.transpose(1, 2).contiguous()`` that follows is free; the
    math backend on the meta device returns a plain contiguous [B, H, S, D], which would make that
    ``contiguous`` a copy no fused kernel pays for.
    """
    if not isinstance(out, torch.Tensor) or out.dim() != 4:
        return out
    b, h, s, d = out.shape
    return torch.empty((b, s, h, d), dtype=out.dtype, device=out.device).transpose(1, 2)


def _is_fused(n: torch.fx.Node) -> bool:
    return n.op == "call_function" and any(n.target is t for t in _FUSED_TARGETS)


class AtenRecorder(torch.fx.Interpreter):
    """Run a GraphModule on fake tensors and record, per node, output specs and aten calls.

    After :meth:`run`, ``outputs[name]`` holds the node's output tensors (flattened) and
    ``calls[name]`` the aten calls it dispatched to.
    """

    def __init__(self, module: torch.fx.GraphModule) -> None:
        super().__init__(module, garbage_collect_values=True)
        self.outputs: dict[str, tuple[TensorSpec, ...]] = {}
        self.calls: dict[str, tuple[AtenCall, ...]] = {}
        self.data_dependent: dict[str, int] = {}  # symbol -> the upper bound it was costed at
        self.routing = RoutingTracker()  # routed symbols -> their balanced share

    def run(self, *args: Any, **kwargs: Any) -> Any:
        token = _DATA_DEPENDENT.set(self.data_dependent)
        routing = _ROUTING.set(self.routing)
        try:
            return super().run(*args, **kwargs)
        finally:
            _DATA_DEPENDENT.reset(token)
            _ROUTING.reset(routing)

    def run_node(self, n: torch.fx.Node) -> Any:
        mode = _RecordingMode()
        try:
            if n.op in ("placeholder", "get_attr", "output"):
                result = super().run_node(n)
            else:
                with mode:
                    result = super().run_node(n)
        except Exception as exc:  # name the failing node (habit 12)
            where = n.meta.get("stack_trace", "")
            line = where.strip().splitlines()[-1].strip() if where else ""
            raise RuntimeError(
                f"shape propagation failed at node {n.name} ({n.format_node()}): {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}" + (f" [{line}]" if line else "")
            ) from exc
        if _is_fused(n):
            result = _fused_layout(result)
        if n.op == "call_function" and is_one_hot_target(n.target):
            self.routing.tag_one_hot(result)
        flat, _ = tree_flatten(result)
        if n.op != "output":
            self.outputs[n.name] = tuple(to_spec(t) for t in flat if isinstance(t, torch.Tensor))
        self.calls[n.name] = tuple(mode.calls)
        if _is_fused(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            self.calls[n.name] = (
                AtenCall(
                    op=_FUSED_OP,
                    args=tuple(to_arg_value(a) for a in args),
                    kwargs=tuple(sorted((k, to_arg_value(v)) for k, v in kwargs.items())),
                    outputs=self.outputs[n.name],
                ),
            )
        return result
