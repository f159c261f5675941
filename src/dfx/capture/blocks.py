"""Capture a model with its repeated layer list cut to one layer per distinct kind (torch side).

:func:`capture_cut` finds the model's layer list (:func:`layer_list`), groups its layers by kind
(:func:`layer_kinds`), and exports the model with the list cut to layer 0 and the first layer of
each kind after it (:func:`dfx.models.decode.template_layers`); the model is restored afterwards.
:func:`dfx.inference.blocks.capture_blocks` repeats the cut graph's blocks back to the whole model.

Two layers are the same kind when their module trees match: the same submodule types, the same
parameter and buffer names, shapes and dtypes, and the same plain attributes (``attention_type``,
``sliding_window``, ...) but for the layer's own index. Config lists read by layer position in the
forward (Hugging Face's ``layer_types``) and the layer count are cut to the built layers too.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from dfx.ir import Graph

__all__ = ["CutCapture", "capture_cut", "cut_layers", "layer_kinds", "layer_list"]

# per-layer index attributes: the one plain attribute in which identical layers differ
_INDEX_ATTRS = frozenset({"layer_idx", "layer_id", "layer_index", "layer_number", "idx", "training"})
# config fields that count the layers, or list one entry per layer (read by position in forward)
_COUNT_FIELDS = ("num_hidden_layers", "n_layer")
_PER_LAYER_FIELDS = ("layer_types",)


@dataclass(frozen=True)
class CutCapture:
    """The graph of the model cut to its template layers, and how to repeat them.

    ``graph`` has layers ``prefix.0 .. prefix.m-1``; model layer ``k`` repeats built layer
    ``template[k]`` (:func:`dfx.inference.repeat.repeat_layers`).
    """

    graph: Graph
    prefix: str
    template: tuple[int, ...]


def layer_list(model: torch.nn.Module) -> tuple[str, torch.nn.ModuleList] | None:
    """The model's repeated layer list: its module path and the ``nn.ModuleList``, or ``None``.

    The largest ``ModuleList`` whose children are all of one class (``model.layers`` of a Llama,
    ``transformer.h`` of GPT-2, ``bert.encoder.layer`` of BERT); ``None`` when there is none of at
    least three entries.
    """
    best: tuple[str, torch.nn.ModuleList] | None = None
    for path, module in model.named_modules():
        if not isinstance(module, torch.nn.ModuleList) or len(module) < 3:
            continue
        if len({type(m) for m in module}) != 1:
            continue
        if best is None or len(module) > len(best[1]):
            best = (path, module)
    return best


def _signature(layer: torch.nn.Module) -> tuple:
    """What makes two layers the same kind: submodule types, parameters' shapes and dtypes, plain attributes."""
    out = []
    for path, m in layer.named_modules():
        params = tuple((n, tuple(p.shape), str(p.dtype)) for n, p in m.named_parameters(recurse=False))
        buffers = tuple((n, tuple(b.shape), str(b.dtype)) for n, b in m.named_buffers(recurse=False))
        attrs = tuple(
            sorted(
                (k, repr(v))
                for k, v in vars(m).items()
                if not k.startswith("_")
                and k not in _INDEX_ATTRS
                and isinstance(v, (bool, int, float, str, type(None)))
            )
        )
        out.append((path, type(m).__qualname__, params, buffers, attrs))
    return tuple(out)


def layer_kinds(layers: torch.nn.ModuleList) -> tuple[int, ...]:
    """Per layer, a kind number: equal for layers of the same structure, numbered by first appearance.

    >>> layer_kinds(torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), torch.nn.Linear(2, 3)]))
    (0, 0, 1)
    """
    seen: dict[tuple, int] = {}
    return tuple(seen.setdefault(_signature(m), len(seen)) for m in layers)


@contextmanager
def cut_layers(model: torch.nn.Module) -> Iterator[tuple[str, tuple[int, ...]] | None]:
    """With ``model``'s layer list cut to layer 0 and the first layer of each kind after it: yields
    ``(prefix, template)`` (model layer ``k`` repeats built layer ``template[k]``), or ``None`` where
    the model has no layer list of three or more alike layers or every layer would have to be built
    (the model is then left whole). The model and its config are restored on the way out.
    """
    from dfx.models.decode import template_layers

    found = layer_list(model)
    if found is None:
        yield None
        return
    path, layers = found
    L = len(layers)
    kinds = layer_kinds(layers)
    built = template_layers(kinds)
    if len(built) >= L:
        yield None
        return
    index = {kinds[j]: b for b, j in enumerate(built) if b > 0}
    template = tuple(0 if k == 0 else index[kinds[k]] for k in range(L))
    parent_path, _, attr = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    config = getattr(model, "config", None)
    saved = {f: getattr(config, f) for f in (*_COUNT_FIELDS, *_PER_LAYER_FIELDS) if _has(config, f)}
    parent._modules[attr] = torch.nn.ModuleList([layers[j] for j in built])
    try:
        for f, v in saved.items():  # the forward loops over (and looks up per layer) the built layers only
            setattr(config, f, len(built) if f in _COUNT_FIELDS else [v[j] for j in built])
        yield path, template
    finally:
        parent._modules[attr] = layers
        for f, v in saved.items():
            setattr(config, f, v)


def capture_cut(
    model: torch.nn.Module, args: tuple, kwargs: dict, *, method: str = "auto", name: str
) -> CutCapture | None:
    """Capture ``model`` with its layer list cut to layer 0 and the first layer of each kind after it.

    Parameters
    ----------
    model : torch.nn.Module
        The whole model (on the meta device, as :func:`dfx.models.resolve` builds it).
    args, kwargs
        Its inputs, as for :func:`dfx.capture.capture`.
    method : str
        Capture method (``auto``, ``export``, ``fx``, ``dynamo``).
    name : str
        The graph's name.

    Returns
    -------
    CutCapture or None
        ``None`` where the model has no layer list of three or more alike layers, or every layer
        would have to be built (no two of a kind after layer 0).

    Raises
    ------
    DfxError
        As :func:`dfx.capture.capture`, on a model it cannot capture.
    """
    from dfx.capture import capture

    with cut_layers(model) as cut:
        if cut is None:
            return None
        graph = capture(model, args, kwargs, method=method, name=name)
    return CutCapture(graph, *cut)


def _has(config: Any, field: str) -> bool:
    value = getattr(config, field, None)
    if field in _COUNT_FIELDS:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, list)
