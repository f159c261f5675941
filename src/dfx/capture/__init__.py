"""Capture a PyTorch model as a torch-free, shape-annotated :class:`dfx.ir.Graph`.

Only this package, :mod:`dfx.models` and :mod:`dfx.measure` import torch.

``dfx.capture`` is both this package and the function users call
(``dfx.capture(model, args)``): the module is made callable, forwarding to :func:`capture`, because
Python binds a subpackage over a same-named attribute of its parent as soon as it is imported.
"""

import sys
import types

from dfx.capture.build import CAPTURE_METHODS, capture

__all__ = ["CAPTURE_METHODS", "capture"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return capture(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
