"""Single operators as models, for the op-level rows of ``bench/bench_reality.py``.

Each is a file model for ``dfx analyze bench/configs/ops.py:NAME --input-shape ...`` (one
``--input-shape`` per positional input, ``:float16`` for the dtype the row was measured in).
"""

import torch


class MatMul(torch.nn.Module):
    """``a @ b``: ``[m, k] x [k, n]``, one ``aten.mm``."""

    def forward(self, a, b):
        return a @ b


class Softmax(torch.nn.Module):
    """``softmax(x, dim=-1)``: one ``aten._softmax`` over the rows of ``x``."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)
