"""Capture a training step's forward and backward as one joint graph, the way torch.compile does.

torch.compile hands a graph that needs gradients to AOTAutograd, which traces forward and backward
together into one aten-level *joint* graph before its partitioner cuts it in two
(``torch/_functorch/aot_autograd.py``). :func:`capture_joint` asks AOTAutograd for that joint
graph directly (``aot_export_module(..., trace_joint=True)``) on fake tensors, so nothing is
allocated and no GPU is needed, then propagates and converts it like any other capture
(:mod:`dfx.capture.build`). The graph's ``meta`` names the loss node, how the loss was formed and
which node holds each parameter's gradient; :mod:`dfx.training` reads them (torch-free).

Parameters live on the fake CPU device while tracing, so the dispatcher picks the kernels a real
CPU run picks (e.g. ``_scaled_dot_product_flash_attention_for_cpu`` and its backward).

NB: the joint graph holds no module paths (AOTAutograd keeps no ``nn_module_stack``), so its nodes
are not grouped by module.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import warnings
from dataclasses import replace
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._pytree import tree_flatten

from dfx.capture.build import _check_signature, _dtype_hint, _first_line, _to_ir
from dfx.capture.propagate import AtenRecorder, device_neutral_kernels
from dfx.capture.trace import Traced, canonical_param_names, make_fake
from dfx.errors import CaptureError, user_code
from dfx.ir import Graph

__all__ = ["JOINT_METHOD", "LOSS_MODEL", "LOSS_SUM", "capture_joint", "trainable_parameters"]

JOINT_METHOD = "aot_joint"  # Graph.capture_method of a joint graph
LOSS_MODEL = "model"  # the model's own scalar loss (a 0-d output, or an output's .loss)
LOSS_SUM = "sum"  # the sum of every floating-point output (the gradient of each element is 1)

_WRAPPED = "model"  # the attribute the loss wrapper keeps the model under


def trainable_parameters(model: torch.nn.Module) -> list[str]:
    """Names of the parameters that need a gradient (``requires_grad``), tied ones once."""
    return [n for n, p in model.named_parameters() if p.requires_grad]


class _LossOf(torch.nn.Module):
    """``model`` followed by a scalar loss, returned first as AOTAutograd's joint export asks."""

    def __init__(self, model: torch.nn.Module, kinds: list[str], n_args: int, kwarg_names: tuple[str, ...]) -> None:
        super().__init__()
        setattr(self, _WRAPPED, model)
        self._kinds = kinds  # how each trace formed the loss (torch.export restores module attributes)
        self._n_args, self._kwarg_names = n_args, kwarg_names  # every input positional: AOTAutograd's kwargs fail

    def forward(self, *inputs: Any) -> tuple[torch.Tensor]:
        args, rest = inputs[: self._n_args], inputs[self._n_args :]
        loss, kind = scalar_loss(getattr(self, _WRAPPED)(*args, **dict(zip(self._kwarg_names, rest))))
        self._kinds.append(kind)
        return (loss,)


def scalar_loss(out: Any) -> tuple[torch.Tensor, str]:
    """The loss to differentiate and how it was formed (:data:`LOSS_MODEL` or :data:`LOSS_SUM`).

    A 0-d floating-point output, or an output object's ``.loss`` (Hugging Face's ``ModelOutput``),
    is the model's own loss; otherwise the loss is the sum of every floating-point output tensor
    (of ``.logits`` alone when the output has them), so every output element's gradient is 1.

    Raises
    ------
    CaptureError
        If the model returns no floating-point tensor to take a loss of.
    """
    own = getattr(out, "loss", None)
    if isinstance(own, torch.Tensor) and own.dim() == 0 and own.is_floating_point():
        return own, LOSS_MODEL
    if isinstance(out, torch.Tensor) and out.dim() == 0 and out.is_floating_point():
        return out, LOSS_MODEL
    logits = getattr(out, "logits", None)  # a ModelOutput's caches are not outputs to train
    flat, _ = tree_flatten(
        logits if isinstance(logits, torch.Tensor) else out.to_tuple() if hasattr(out, "to_tuple") else out
    )
    floats = [t for t in flat if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not floats:
        raise CaptureError(
            "the model returns no floating-point tensor to take a training loss of; "
            "return its outputs (or a scalar loss) from forward"
        )
    total = floats[0].sum()
    for t in floats[1:]:
        total = total + t.sum()
    return total, LOSS_SUM


def _fake_state(model: torch.nn.Module, mode: FakeTensorMode) -> dict[str, torch.Tensor]:
    """Every parameter and buffer as a fake CPU tensor (parameters stay ``nn.Parameter``s)."""
    state: dict[str, torch.Tensor] = {}
    canonical = canonical_param_names(model)
    named = list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers(remove_duplicate=False))
    for name, t in named:
        if canonical[name] != name:
            continue
        with mode:
            fake = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="cpu")
        state[name] = (
            torch.nn.Parameter(fake, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else fake
        )
    return {name: state[canonical[name]] for name, _ in named}


def _fake_inputs(mode: FakeTensorMode, tree: Any) -> Any:
    from torch.utils._pytree import tree_map

    def fake(v: Any) -> Any:
        if not isinstance(v, torch.Tensor):
            return v
        with mode:
            return torch.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device="cpu")

    return tree_map(fake, tree)


@contextlib.contextmanager
def _joint_context(model: torch.nn.Module):
    """Training mode, gradients on, MHA fast path off, torch's own logging quiet; all restored."""
    was_training = model.training
    fastpath = torch.backends.mha.get_fastpath_enabled()
    loggers = [logging.getLogger(n) for n in ("torch", "transformers")]  # their warnings are not dfx's output
    levels = [lg.level for lg in loggers]
    torch.backends.mha.set_fastpath_enabled(False)
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    model.train()
    try:
        with (
            torch.inference_mode(False),
            torch.enable_grad(),
            contextlib.redirect_stderr(io.StringIO()),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        model.train(was_training)
        torch.backends.mha.set_fastpath_enabled(fastpath)
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _strip(name: str) -> str:
    return name[len(_WRAPPED) + 1 :] if name.startswith(_WRAPPED + ".") else name


def capture_joint(
    model: torch.nn.Module, args: Any = (), kwargs: dict[str, Any] | None = None, name: str | None = None
) -> Graph:
    """Capture one training step's forward and backward of ``model(*args, **kwargs)`` as one graph.

    The model runs in training mode (dropout on, batch norm on batch statistics; its mode is
    restored afterwards) and the loss is :func:`scalar_loss` of its output. Inputs do not need
    gradients; a parameter with ``requires_grad=False`` gets none.

    Returns
    -------
    Graph
        ``capture_method`` :data:`JOINT_METHOD`; ``meta`` holds ``joint_loss`` (the loss node),
        ``joint_loss_kind`` (:data:`LOSS_MODEL` or :data:`LOSS_SUM`) and ``joint_gradients`` (a
        JSON object from each trained parameter's canonical name to ``[its placeholder node, the
        node holding its gradient]``).

    Raises
    ------
    CaptureError
        If ``model`` is not a module, has no parameter that needs a gradient, returns no
        floating-point tensor, or AOTAutograd cannot trace it (the message names why).
    """
    from torch._functorch.aot_autograd import aot_export_module
    from torch.nn.utils.stateless import _reparametrize_module

    if not isinstance(model, torch.nn.Module):
        raise CaptureError(f"expected a torch.nn.Module, got {type(model).__name__}")
    label = name or type(model).__name__
    if not trainable_parameters(model):
        raise CaptureError(
            f"{label} has no trainable parameters (none, or every one has requires_grad=False), so a training "
            "step has nothing to update; drop --train, or give the model a parameter that requires grad"
        )
    args = args if isinstance(args, tuple) else (args,) if isinstance(args, torch.Tensor) else tuple(args)
    kwargs = dict(kwargs or {})
    _check_signature(model, args, kwargs)
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
    kinds: list[str] = []
    wrapper = _LossOf(model, kinds, len(args), tuple(kwargs))
    # oneDNN and cuDNN off, as the forward capture (dfx.capture.build): an nn.LSTM's joint graph then
    # holds its per-step decomposition and its backward, not mkldnn_rnn_layer(_backward) no rule prices
    with user_code(f"{type(model).__name__}.forward", CaptureError), _joint_context(model), device_neutral_kernels():
        inputs = tuple(_fake_inputs(mode, (*args, *kwargs.values())))
        try:
            with _reparametrize_module(model, _fake_state(model, mode), tie_weights=True, strict=False):
                # torch.export first, as torch.compile's Dynamo first: model code that branches on
                # "am I being compiled" (Hugging Face's masks) takes its traceable path
                exported = _untied(torch.export.export(wrapper, inputs, strict=False).module())
                gm, sig = aot_export_module(exported, inputs, trace_joint=True, output_loss_index=0)
                min_cut = _min_cut_saved_bytes(exported, inputs, mode, skip=len(sig.buffers_to_mutate) + 1)
        except CaptureError:
            raise
        except Exception as exc:  # AOTAutograd fails in many ways; name the first line and where
            hint = _dtype_hint([str(exc)])
            if hint:  # a dtype an op refuses (a bf16 FFT): the fix is --dtype, not the advice below
                raise CaptureError(
                    f"could not capture the training step{hint} ({JOINT_METHOD}: {_first_line(exc)})"
                ) from None
            raise CaptureError(
                f"could not capture the training step ({JOINT_METHOD}: {_first_line(exc)}); AOTAutograd "
                "needs every parameter to get a gradient and sizes that do not depend on data (top-k routing's "
                "do): analyze the forward without --train, or freeze unused parameters (requires_grad_(False))"
            ) from None
        traced = _traced(gm, sig, model, mode)
        recorder = AtenRecorder(gm)
        with torch.no_grad(), mode:
            recorder.run(*traced.inputs)
    graph = _to_ir(traced, recorder, model, label)
    canonical = canonical_param_names(model)
    placeholder = {p: node for node, p in sig.inputs_to_parameters.items()}
    gradients = {
        canonical.get(_strip(p), _strip(p)): [placeholder[p], node]
        for node, p in sig.backward_signature.gradients_to_parameters.items()
    }
    meta = (
        graph.meta
        + (
            ("joint_gradients", json.dumps(gradients, sort_keys=True)),
            ("joint_loss", sig.user_outputs[0]),
            ("joint_loss_kind", kinds[0]),
        )
        + ((("min_cut_saved_bytes", str(min_cut)),) if min_cut is not None else ())
    )
    return replace(graph, meta=meta)


def _min_cut_saved_bytes(module: torch.fx.GraphModule, inputs: tuple, mode: FakeTensorMode, skip: int) -> int | None:
    """Bytes torch.compile's partitioner passes from forward to backward, or ``None`` if it fails.

    ``aot_module_simplified`` with ``min_cut_rematerialization_partition`` (Inductor's default)
    splits the joint graph; the forward's outputs after the ``skip`` mutated buffers and the loss
    are what it saves. Each is followed through views to the tensor holding its data, counted once;
    parameters and buffers (resident anyway) are left out.
    """
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, _: Any) -> torch.fx.GraphModule:
        graphs.append(gm)
        return gm

    try:
        with mode:
            aot_module_simplified(
                module,
                list(inputs),
                fw_compiler=keep,
                bw_compiler=keep,
                partition_fn=min_cut_rematerialization_partition,
            )
    except Exception:  # the partitioner is a second opinion: without it the step is still analysed
        return None
    if not graphs:
        return None
    placeholders = [n for n in graphs[0].graph.nodes if n.op == "placeholder"]
    state = set(placeholders[: len(list(module.parameters())) + len(list(module.buffers()))])
    outputs = next(n for n in graphs[0].graph.nodes if n.op == "output").args[0]
    held: dict[str, int] = {}
    for node in outputs[skip:]:
        while node.op == "call_function" and getattr(node.target, "is_view", False):
            node = node.args[0]  # the tensor holding a view's data
        val = node.meta.get("val")
        if node not in state and isinstance(val, torch.Tensor):
            held[node.name] = val.numel() * val.element_size()
    return sum(held.values())


def _untied(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm`` with a tied parameter registered and read under one name: AOTAutograd's joint export
    passes every registered name as its own input and asserts each one receives a gradient, which a
    second name of the same tensor never does (GPT-2's ``lm_head.weight`` tied to ``wte.weight``)."""
    first: dict[int, str] = {}
    alias: dict[str, str] = {}
    for name, p in gm.named_parameters(remove_duplicate=False):
        alias[name] = first.setdefault(id(p), name)
    for node in gm.graph.nodes:
        if node.op == "get_attr" and alias.get(str(node.target), str(node.target)) != node.target:
            node.target = alias[str(node.target)]
    for name, canonical in alias.items():
        if name != canonical:
            owner, _, attr = name.rpartition(".")
            del gm.get_submodule(owner)._parameters[attr]
    gm.recompile()
    return gm


def _traced(gm: torch.fx.GraphModule, sig: Any, model: torch.nn.Module, mode: FakeTensorMode) -> Traced:
    """The joint graph as a :class:`Traced`: placeholder kinds and canonical parameter names."""
    canonical = canonical_param_names(model)
    param_of: dict[str, str] = {}
    input_kind: dict[str, str] = {}
    for kind, mapping in (("parameter", sig.inputs_to_parameters), ("buffer", sig.inputs_to_buffers)):
        for placeholder, target in mapping.items():
            input_kind[placeholder] = kind
            param_of[placeholder] = canonical.get(_strip(target), _strip(target))
    inputs = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        input_kind.setdefault(node.name, "input")
        val = node.meta.get("val")
        inputs.append(make_fake(mode, val) if isinstance(val, torch.Tensor) else val)
    return Traced(gm, inputs, JOINT_METHOD, param_of, input_kind)
