"""Captured inference steps: a prefill or a decode step of a causal decoder as a whole-model graph.

Each distinct step shape (model, batch, new tokens, KV length, dtype) is captured once per process
(:func:`capture_step` keeps them), from the model built with at most two layers; the other layers
are repeated in the graph (:func:`dfx.inference.repeat.repeat_layer`), so a 32-layer model costs
two layers' capture.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from dfx.costs import CostedGraph, annotate
from dfx.ir import Graph, Node

__all__ = ["Step", "cache_inputs", "capture_step", "is_cache_input"]

_TEMPLATE_LAYERS = 2  # layers captured; the rest are copies of the second (see repeat.py)
_CACHE_INPUTS = ("k_cache", "v_cache", "kv_cache")  # forward argument names of the cache (dfx.models)


@dataclass(frozen=True)
class Step:
    """One captured step: its whole-model graph, costs and the decoder's KV geometry."""

    graph: Graph
    costed: CostedGraph
    geometry: object  # dfx.models.decode.KVGeometry (a torch-side module; typed loosely here)
    batch: int
    tokens: int
    kv_len: int
    dtype: str

    def cache_bytes(self) -> int:
        """Bytes of the KV cache the step reads: every cache input, at the capture dtype."""
        return sum(n.outputs[0].nbytes for n in cache_inputs(self.graph))


def is_cache_input(name: str) -> bool:
    """Whether a placeholder called ``name`` is a KV cache (named after the models' cache arguments)."""
    return name.startswith(_CACHE_INPUTS)


def cache_inputs(graph: Graph) -> list[Node]:
    """The graph's KV-cache inputs."""
    return [n for n in graph.nodes if n.op == "placeholder" and n.input_kind == "input" and is_cache_input(n.name)]


def capture_step(
    spec: str,
    *,
    batch: int,
    tokens: int,
    kv_len: int,
    dtype: str,
    method: str = "auto",
    logits_to_keep: int | None = None,
) -> Step:
    """The whole-model graph of one step (captured once per distinct arguments in this process).

    Parameters
    ----------
    spec : str
        A decoder built-in or ``hf:`` config (see :func:`dfx.models.decode.build_step`).
    batch, tokens, kv_len : int
        Sequences, new tokens per sequence, cached tokens per sequence (0 for a prefill).
    dtype : str
        torch's name of the float dtype to build in (``bfloat16``).
    method : str
        Capture method (``auto``, ``export``, ``fx``, ``dynamo``).
    logits_to_keep : int, optional
        The LM head's positions (:func:`dfx.models.decode.build_step`; ``None``: the step's own rule,
        the last position of a prefill).

    Raises
    ------
    DfxError
        A model that is not a causal decoder, bad sizes, or a capture failure.
    """
    return _capture_step(spec, batch, tokens, kv_len, dtype, method, logits_to_keep)


@lru_cache(maxsize=64)
def _capture_step(
    spec: str, batch: int, tokens: int, kv_len: int, dtype: str, method: str, logits_to_keep: int | None = None
) -> Step:
    from dfx.capture import capture
    from dfx.inference.repeat import repeat_layer, repeat_layers
    from dfx.models.decode import build_step

    built = build_step(
        spec,
        batch=batch,
        tokens=tokens,
        kv_len=kv_len,
        dtype=dtype,
        layers=_TEMPLATE_LAYERS,
        logits_to_keep=logits_to_keep,
    )
    what = f"decode-kv{kv_len}" if kv_len else f"prefill-{tokens}"
    graph = capture(built.spec.model, built.spec.args, built.spec.kwargs, method=method, name=f"{spec}:{what}")
    geometry = built.geometry
    if built.template and geometry.n_layers > built.built_layers:  # layers of several kinds
        graph = repeat_layers(graph, geometry.layer_prefix, built.template)
    elif geometry.n_layers > built.built_layers:
        graph = repeat_layer(graph, geometry.layer_prefix, geometry.n_layers)
    return Step(graph, annotate(graph), geometry, batch, tokens, kv_len, dtype)
