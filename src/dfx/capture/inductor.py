"""The real torch.compile pipeline on this machine: Inductor's graphs and fused kernel groups.

Inductor runs on the CPU here (its C++ backend), and its *scheduler* decides fusion before any code
is generated. dfx reads the decision at that point and stops, so nothing is compiled:

- ``config._post_fusion_custom_pass`` (``torch/_inductor/config.py``; "a custom pass to be run
  right after fusion in Inductor scheduler") receives the scheduler nodes after fusion. Each is a
  kernel: a ``SchedulerNode`` (one loop nest), a ``FusedSchedulerNode`` (several fused), or an
  ``ExternKernelSchedulerNode`` (a library call: mm, addmm, SDPA). dfx records them, then raises
  :class:`_Stop` so that no C++ is compiled (seconds instead of a minute per model).
- Each scheduler node's ``node.origins`` are post-grad fx nodes; their ``meta["from_node"]``
  provenance chain (``torch.fx.traceback.NodeSource``) leads back to the node of the graph handed
  to Inductor. :func:`inductor_kernels` hands Inductor the very ``torch.export`` graph dfx captures,
  so the chain ends at dfx's own node names.
- One lowering differs between Inductor's CPU and GPU backends in these models: ``aten.cat``
  (copy kernels on the CPU, a pointwise cat on the GPU); the run sets ``force_pointwise_cat`` so
  that the CPU schedule shows the GPU's choice.
- :func:`inductor_pipeline` runs ``torch.compile`` (TorchDynamo) with a recording backend and keeps
  the Dynamo graph, the AOTAutograd forward graph (what ``compile_fx`` hands its inner compiler),
  Inductor's post-grad graph (``config.post_grad_custom_post_pass``) and the kernel groups.

Torch lives here only; the comparison with dfx's own fusion is torch-free
(:mod:`dfx.compile.compare`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterable

import torch

from dfx.capture.trace import capture_context
from dfx.errors import DfxError

__all__ = [
    "InductorKernel",
    "InductorPipeline",
    "inductor_kernels",
    "inductor_pipeline",
    "runnable_model",
]


class _Stop(Exception):
    """Raised after the fusion decisions are recorded: nothing needs to be compiled."""


@dataclass(frozen=True)
class InductorKernel:
    """One kernel of Inductor's schedule after fusion.

    ``kind`` is ``extern`` (a library call), ``reduction`` or ``pointwise``; ``ops`` the post-grad
    aten nodes it computes; ``sources`` the nodes of the graph handed to Inductor they came from.
    """

    name: str
    kind: str
    ops: tuple[str, ...]
    sources: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "ops": list(self.ops), "sources": list(self.sources)}


@dataclass
class InductorPipeline:
    """The artefacts of one ``torch.compile`` run, as readable text plus the kernel groups."""

    dynamo_graph: str = ""
    aot_forward_graph: str = ""
    post_grad_graph: str = ""
    kernels: list[InductorKernel] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dynamo_graph": self.dynamo_graph,
            "aot_forward_graph": self.aot_forward_graph,
            "post_grad_graph": self.post_grad_graph,
            "kernels": [k.to_dict() for k in self.kernels],
        }


def _leaves(source: Any) -> Iterable[str]:
    """Names at the ends of a NodeSource provenance chain (the nodes of the graph given to Inductor)."""
    parents = getattr(source, "from_node", None) or []
    if not parents:
        yield source.name
    for p in parents:
        yield from _leaves(p)


def _sources(fx_node: Any) -> set[str]:
    out: set[str] = set()
    for src in fx_node.meta.get("from_node", None) or []:
        out.update(_leaves(src))
    return out or {fx_node.name}


def _kernel(index: int, snode: Any) -> InductorKernel:
    from torch._inductor.scheduler import ExternKernelSchedulerNode

    parts = snode.get_nodes()
    if isinstance(snode, ExternKernelSchedulerNode):
        node = snode.node
        op = str(getattr(node, "op_overload", None) or getattr(node, "python_kernel_name", "") or type(node).__name__)
        return InductorKernel(f"extern{index}_{snode.get_name()}", "extern", (op,), ())
    ops: set[str] = set()
    sources: set[str] = set()
    for part in parts:
        for origin in getattr(part.node, "origins", ()) if part.node is not None else ():
            ops.add(origin.name)
            sources.update(_sources(origin))
    kind = "reduction" if any(p.is_reduction() for p in parts) else "pointwise"
    return InductorKernel(f"{kind}{index}_{snode.get_name()}", kind, tuple(sorted(ops)), tuple(sorted(sources)))


@contextlib.contextmanager
def _recording(pipeline: InductorPipeline):
    import torch._inductor.config as inductor_config

    def post_fusion(nodes: list[Any]) -> list[Any]:
        pipeline.kernels = [_kernel(i, n) for i, n in enumerate(nodes)]
        raise _Stop()

    def post_grad(graph: torch.fx.Graph) -> None:
        pipeline.post_grad_graph = str(graph)

    patch = {
        "_post_fusion_custom_pass": post_fusion,
        "post_grad_custom_post_pass": post_grad,
        "fx_graph_cache": False,
        # Inductor lowers aten.cat to copy kernels (ConcatKernel) on the CPU only ("negative performance
        # impact of pointwise_cat optimization on CPU", torch/_inductor/lowering.py cat); on a GPU it
        # inlines the inputs into a pointwise cat. dfx models the GPU, so the CPU run takes the GPU's path.
        "force_pointwise_cat": True,
    }
    with inductor_config.patch(patch), capture_context(), _own_origins_for_input_copies():
        yield


@contextlib.contextmanager
def _own_origins_for_input_copies():
    """Give the copy kernels Inductor makes for a library call's inputs their input's own origins.

    While Inductor lowers a node it tags every IR node it creates with the origins of *all* the
    node's unrealized arguments (``GraphLowering.run_node``, ``utils.gather_origins``). The copies
    ``ExternKernel.copy_input`` makes to give SDPA contiguous q, k and v would each claim the
    origins of all three. This changes only the bookkeeping (origins are debug metadata), never a
    fusion decision.
    """
    from torch._inductor import ir
    from torch.utils._ordered_set import OrderedSet

    original = ir.ExternKernel.copy_input

    def own_origins(x: Any) -> Any:
        while getattr(x, "origins", None) is None and hasattr(x, "data"):  # TensorBox -> StorageBox -> node
            x = x.data
        return getattr(x, "origins", None)

    def copy_input(x: Any) -> Any:
        saved = ir.IRNode._current_origins
        origins = own_origins(x)
        if origins is None:
            return original(x)
        ir.IRNode._current_origins = OrderedSet(origins)
        try:
            return original(x)
        finally:
            ir.IRNode._current_origins = saved

    ir.ExternKernel.copy_input = staticmethod(copy_input)
    try:
        yield
    finally:
        ir.ExternKernel.copy_input = staticmethod(original)


def _stopped(exc: BaseException) -> bool:
    while exc is not None:
        if isinstance(exc, _Stop):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _flat_inputs(ep: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The exported graph's placeholder values: parameters and buffers, then the user inputs."""
    user = iter(torch.utils._pytree.tree_leaves((args, kwargs)))
    values = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind.name == "USER_INPUT":
            values.append(next(user))
        elif spec.target in ep.state_dict:
            values.append(ep.state_dict[spec.target])
        else:
            values.append(ep.constants[spec.target])
    return values


def inductor_kernels(model: torch.nn.Module, args: tuple, kwargs: dict | None = None) -> list[InductorKernel]:
    """Inductor's kernels for ``model`` on the CPU, with ``sources`` named as dfx's export capture names nodes.

    Exports ``model`` the way :func:`dfx.capture.capture` does (``torch.export``, non-strict) and
    hands the exported graph (parameters lifted to inputs) to ``compile_fx``; stops after fusion.

    Raises
    ------
    DfxError
        If export or Inductor fails before its fusion decisions are made.
    """
    from torch._inductor.compile_fx import compile_fx

    kwargs = kwargs or {}
    pipeline = InductorPipeline()
    with _recording(pipeline):
        try:
            ep = torch.export.export(model, args, kwargs, strict=False)
            compile_fx(ep.graph_module, _flat_inputs(ep, args, kwargs))
        except Exception as exc:  # noqa: BLE001 - Inductor wraps our _Stop in its own error types
            if not _stopped(exc):
                raise DfxError(f"Inductor failed before fusing: {str(exc).splitlines()[0][:200]}") from exc
    return pipeline.kernels


def inductor_pipeline(model: torch.nn.Module, args: tuple, kwargs: dict | None = None) -> InductorPipeline:
    """Run ``torch.compile`` (Dynamo, AOTAutograd, Inductor on the CPU) and keep each stage's graph.

    Raises
    ------
    DfxError
        If torch.compile fails before Inductor's fusion decisions are made.
    """
    import torch._dynamo
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    kwargs = kwargs or {}
    pipeline = InductorPipeline()

    def inner(gm: torch.fx.GraphModule, example_inputs: list[Any], **kw: Any) -> Any:
        pipeline.aot_forward_graph = str(gm.graph)
        return compile_fx_inner(gm, example_inputs, **kw)

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        pipeline.dynamo_graph = str(gm.graph)
        return compile_fx(gm, example_inputs, inner_compile=inner)

    torch._dynamo.reset()
    with _recording(pipeline):
        try:
            torch.compile(model, backend=backend, fullgraph=True)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - Dynamo wraps our _Stop in BackendCompilerFailed
            if not _stopped(exc):
                raise DfxError(f"torch.compile failed before fusing: {str(exc).splitlines()[0][:200]}") from exc
        finally:
            torch._dynamo.reset()
    return pipeline


def runnable_model(
    spec: str, *, batch: int = 1, seq: int | None = None, dtype: str = "float32"
) -> tuple[Any, tuple, dict]:
    """The model a spec names, on the CPU with real (random) weights and inputs, ready for Inductor.

    dfx's own capture builds models on the meta device; Inductor needs tensors it could run.

    Raises
    ------
    DfxError
        On a bad spec (see :func:`dfx.models.resolve`).
    """
    from dfx.models import resolve

    with torch.no_grad():
        built = resolve(spec, batch=batch, seq=seq, dtype=dtype, device="cpu")
    return built.model.eval(), tuple(built.args), dict(built.kwargs or {})
