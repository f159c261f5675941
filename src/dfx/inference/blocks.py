"""A forward graph from one captured block per distinct block kind: the others are copies.

``dfx analyze hf:llama-2-70b --seq 128`` used to export all 80 decoder layers: 80 times the tracing
and shape propagation of one layer, for 80 identical copies. :func:`capture_blocks` exports the
model with its layer list cut to layer 0 and the first layer of each distinct kind after it
(:func:`dfx.capture.blocks.capture_cut`), then assembles the whole-model graph by repeating each
kind's block in place (:func:`dfx.inference.repeat.repeat_layers`, as the inference phases do).

Layers of one kind (same module tree, parameter shapes and plain attributes) given the same input
(every layer reads and writes hidden states of one shape) run the same operators on the same
shapes, so the assembled graph has the whole capture's operators, shapes and parameters, and its
FLOPs, bytes and every profile's times equal the whole capture's (``tests/inference/test_blocks.py``
checks it for a dense first layer then MoE ones, a global-attention layer every sixth, and one
layer of another width). A model whose layer list dfx cannot find, with fewer than three layers,
whose layers are all distinct, or whose cut graph cannot be repeated, is captured whole.
"""

from __future__ import annotations

from typing import Any

from dfx.errors import DfxError
from dfx.ir import Graph

__all__ = ["capture_blocks"]


def capture_blocks(model: Any, args: tuple, kwargs: dict, *, method: str = "auto", name: str) -> Graph | None:
    """The forward graph of ``model`` from one captured block per distinct kind; ``None``: capture it whole.

    Parameters
    ----------
    model : torch.nn.Module
        The whole model, built (on the meta device) as :func:`dfx.models.resolve` builds it.
    args, kwargs
        Its inputs, as for :func:`dfx.capture.capture`.
    method : str
        Capture method (``auto``, ``export``, ``fx``, ``dynamo``).
    name : str
        The graph's name.

    Returns
    -------
    Graph or None
        The assembled whole-model graph (its meta ``repeated_layer`` names the built layers each
        layer copies), or ``None`` where the model has no repeated layer list, its layers are all
        distinct, the cut model fails to capture, or a built layer reads more than its predecessor's
        hidden states: the caller then captures the model whole.
    """
    from dfx.capture.blocks import capture_cut
    from dfx.inference.repeat import repeat_layers

    try:
        cut = capture_cut(model, args, kwargs, method=method, name=name)
    except DfxError:  # the cut model failed where the whole one may not: the caller captures it whole
        return None
    if cut is None:
        return None
    try:
        return repeat_layers(cut.graph, cut.prefix, cut.template)
    except ValueError:
        return None
