"""Capture a PyTorch model as a torch-free, shape-annotated :class:`dfx.ir.Graph`.

Only this package, :mod:`dfx.models` and :mod:`dfx.measure` import torch.
"""

from dfx.capture.build import CAPTURE_METHODS, capture

__all__ = ["CAPTURE_METHODS", "capture"]
