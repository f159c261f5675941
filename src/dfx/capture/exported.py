"""The ``torch.export.ExportedProgram`` a viewer such as Model Explorer draws, exported as dfx's capture exports it."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from dfx.capture.propagate import device_neutral_kernels
from dfx.capture.routing import grouped_experts
from dfx.capture.trace import capture_context
from dfx.errors import CaptureError

__all__ = ["export_program"]


def export_program(model: torch.nn.Module, args: tuple, kwargs: dict[str, Any] | None = None):
    """``torch.export.export(model, args, kwargs, strict=False)`` under the contexts of dfx's capture.

    The same call and contexts as :func:`dfx.capture.trace.trace_export` (the default capture), so
    the program's fx node names are the ``nodes[].name`` of dfx's export document.

    Returns
    -------
    torch.export.ExportedProgram
        With ``example_inputs`` cleared: dfx's models live on the meta device, whose tensors hold
        no values a viewer could print (Model Explorer's adapter skips constant values without them).

    Raises
    ------
    CaptureError
        If torch.export cannot capture the model (the first line of torch's reason).
    """
    try:
        with capture_context(), device_neutral_kernels(), grouped_experts(model), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(model, tuple(args), dict(kwargs or {}), strict=False)
    except Exception as exc:  # torch.export fails in many ways; keep its first line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CaptureError(f"torch.export could not capture {type(model).__name__}: {first}") from None
    ep.example_inputs = None
    return ep
