"""Building blocks every decoder family shares: RMSNorm, the gated MLP (SwiGLU, GeGLU), the LM head's positions.

In a module of their own so that the dense layer (:mod:`dfx.models.decoder`), multi-head latent
attention (:mod:`dfx.models.mla`) and the experts (:mod:`dfx.models.moe`) all build on them without
importing one another.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["GatedMLP", "RMSNorm", "logit_positions"]


def logit_positions(h: torch.Tensor, logits_to_keep: int) -> torch.Tensor:
    """The positions of ``h`` (B, T, C) the LM head is applied to: the last ``logits_to_keep`` (0: all T).

    An inference step needs logits only where a token is sampled: a prefill, at its last prompt
    position (transformers' ``logits_to_keep``, which ``generate`` sets to 1; vLLM and SGLang gather
    the sampled positions' hidden states before the LM head; TensorRT-LLM's
    ``gather_last_token_logits``). The slice is a view: the LM head's GEMM then has ``logits_to_keep``
    rows, not T.

    >>> logit_positions(torch.zeros(2, 5, 3), 1).shape
    torch.Size([2, 1, 3])
    >>> logit_positions(torch.zeros(2, 5, 3), 0).shape
    torch.Size([2, 5, 3])
    """
    return h if logits_to_keep == 0 else h[:, -logits_to_keep:]


class RMSNorm(nn.Module):
    """``x / sqrt(mean(x^2) + eps) * w`` in float32; Gemma's scales by ``(1 + w)`` (weight stored as 0)."""

    def __init__(self, dim: int, eps: float, plus_one: bool = False):
        super().__init__()
        self.eps, self.plus_one = eps, plus_one
        self.weight = nn.Parameter(torch.zeros(dim) if plus_one else torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        w = 1.0 + self.weight.float() if self.plus_one else self.weight
        return (h * w).to(x.dtype) if self.plus_one else w * h.to(x.dtype)


def _act(name: str):
    return F.silu if name == "silu" else (lambda x: F.gelu(x, approximate="tanh"))


class GatedMLP(nn.Module):
    """``down(act(gate(x)) * up(x))``: SwiGLU or GeGLU; Phi-3 fuses gate and up into ``gate_up_proj``."""

    def __init__(self, dim: int, hidden: int, act: str = "silu", fused: bool = False):
        super().__init__()
        self.fused, self.act = fused, _act(act)
        if fused:
            self.gate_up_proj = nn.Linear(dim, 2 * hidden, bias=False)
        else:
            self.gate_proj = nn.Linear(dim, hidden, bias=False)
            self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused:
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)  # 2 x (..., F)
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.act(gate) * up)  # (..., C)
