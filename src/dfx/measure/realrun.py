"""Build a model with real random weights and export it, so its nodes can be run and timed.

The graph run for real is ``torch.export``'s ``ep.graph_module``, the same graph
``dfx.capture(method="export")`` converts to the IR, so node names match one for one
(:func:`check_names` refuses a mismatch rather than pairing nodes wrongly).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_flatten

from dfx.errors import DfxError

__all__ = ["Exported", "check_names", "export_real", "flat_inputs"]


@dataclass(frozen=True)
class Exported:
    """An exported real model: its graph module and the flat values its placeholders take, in order."""

    gm: torch.fx.GraphModule
    inputs: list[Any]

    def node_names(self) -> list[str]:
        return [n.name for n in self.gm.graph.nodes]


def flat_inputs(ep: torch.export.ExportedProgram, args: tuple, kwargs: dict) -> list[Any]:
    """The placeholder values of ``ep.graph_module``: parameters, buffers, constants, then user inputs."""
    user = iter(tree_flatten((args, kwargs))[0])
    values: list[Any] = []
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            values.append(next(user))
        elif spec.target in ep.state_dict:
            values.append(ep.state_dict[spec.target])
        else:  # non-persistent buffers, lifted constant tensors
            values.append(ep.constants[spec.target])
    return values


def export_real(model: torch.nn.Module, args: tuple, kwargs: dict | None = None) -> Exported:
    """``torch.export`` a model that holds real tensors, in dfx's capture context (no grad, MHA fast path off)."""
    from dfx.capture.trace import capture_context

    kwargs = dict(kwargs or {})
    try:
        with capture_context():
            ep = torch.export.export(model, args, kwargs, strict=False)
    except Exception as exc:  # torch raises many kinds; one line for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DfxError(f"could not export the model to run it: {type(exc).__name__}: {first[:200]}") from None
    return Exported(ep.graph_module, flat_inputs(ep, args, kwargs))


def check_names(measured: list[str], captured: list[str]) -> None:
    """Refuse to compare when the run graph's nodes are not the captured graph's nodes."""
    if measured != captured:
        only_run = sorted(set(measured) - set(captured))[:3]
        only_cap = sorted(set(captured) - set(measured))[:3]
        raise DfxError(
            f"the graph run for real does not match dfx's captured graph (only run: {only_run}, only captured: {only_cap})"
        )
