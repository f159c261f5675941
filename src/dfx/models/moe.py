"""Mixture-of-experts feed-forward with static shapes: router top-k, tokens sorted by expert, grouped GEMMs.

The routed computation never runs the router on data: every tensor's shape is known from
(tokens N, top-k k, experts E) alone, so it captures under torch.export on fake tensors on every
path (forward, decode step, training step). It is the form transformers 5 runs
(``integrations/moe.py``, ``grouped_mm`` experts implementation), so both graphs are priced alike:

1. router: ``logits = x @ W_r^T`` (N, E); ``topk`` picks k experts per token (weights w, ids);
2. dispatch: the N*k (token, expert) pairs sorted by expert id (``sort``), the token rows
   gathered in that order (N*k, C), and each expert's row count ``histc`` -> ``cumsum`` offsets;
3. experts: ``torch._grouped_mm`` of the sorted rows with the stacked expert weights (E, C, 2F)
   and (E, F, C): each expert multiplies only its own rows, so matmul FLOPs are
   ``2 * N * k * (C * 2F + F * C)``: routed tokens only, whatever the offsets' values;
4. combine: rows weighted by w and scattered back to their tokens (``index_add``), summed over k.

Shared experts (DeepSeek) are one dense :class:`~dfx.models.layers.GatedMLP` every token passes.
Expert weights live under ``mlp.experts`` (``gate_up_proj``, ``down_proj``), the router's under
``mlp.gate`` (``mlp.router`` in gpt-oss), as in transformers.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.models.layers import GatedMLP

__all__ = ["Experts", "MoE", "Router", "check_expert_dtype"]

_GPT_OSS_LIMIT = 7.0  # gpt-oss config.json swiglu_limit: gate and up clamped to it
_GPT_OSS_ALPHA = 1.702  # gpt-oss's GLU: gate * sigmoid(1.702 * gate), OpenAI's gpt-oss reference code


class Router(nn.Module):
    """Top-k router: ``(N, C) -> (weights (N, k), expert ids (N, k))``.

    ``softmax_topk`` (Mixtral, Qwen3-MoE): softmax over E, top k, renormalized when
    ``norm_topk_prob``. ``topk_softmax`` (gpt-oss): top k logits, softmax over those k.
    ``sigmoid_group`` (DeepSeek-V3, arXiv 2412.19437 section 2.1.2): sigmoid scores plus a
    load-balancing bias choose ``topk_group`` of ``n_group`` expert groups (each group scored by its
    top 2), then k experts among them; weights are the chosen sigmoid scores, normalized, times
    ``routed_scaling_factor``.
    """

    def __init__(self, c):
        super().__init__()
        self.kind, self.k, self.E, self.norm = c.router, c.top_k, c.n_experts, c.norm_topk_prob
        self.n_group, self.topk_group, self.scaling = c.n_group, c.topk_group, c.routed_scaling_factor
        self.weight = nn.Parameter(torch.empty(c.n_experts, c.dim))
        self.bias = nn.Parameter(torch.zeros(c.n_experts)) if c.router_bias else None
        if self.kind == "sigmoid_group":
            self.register_buffer("e_score_correction_bias", torch.zeros(c.n_experts), persistent=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = F.linear(x, self.weight, self.bias)  # (N, E)
        if self.kind == "topk_softmax":
            top, ids = torch.topk(logits, self.k, dim=-1)  # (N, k)
            return F.softmax(top.float(), dim=-1), ids
        if self.kind == "sigmoid_group":
            return self._grouped(logits)
        w, ids = torch.topk(F.softmax(logits.float(), dim=-1), self.k, dim=-1)  # (N, k)
        return (w / w.sum(dim=-1, keepdim=True) if self.norm else w), ids

    def _grouped(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        N, E, G = logits.shape[0], self.E, self.n_group
        scores = logits.float().sigmoid()  # (N, E)
        choice = scores + self.e_score_correction_bias
        group = choice.view(N, G, E // G).topk(2, dim=-1)[0].sum(dim=-1)  # (N, G): each group's top 2
        keep = torch.zeros_like(group).scatter(1, torch.topk(group, self.topk_group, dim=-1)[1], 1.0)
        keep = keep.unsqueeze(-1).expand(N, G, E // G).reshape(N, E).bool()
        ids = torch.topk(choice.masked_fill(~keep, float("-inf")), self.k, dim=-1)[1]  # (N, k)
        w = scores.gather(1, ids)
        w = w / (w.sum(dim=-1, keepdim=True) + 1e-20) if self.norm else w
        return w * self.scaling, ids


class Experts(nn.Module):
    """E gated MLPs stacked: ``gate_up_proj`` (E, C, 2F), ``down_proj`` (E, F, C), run as grouped GEMMs."""

    def __init__(self, c):
        super().__init__()
        E, C, Fh = c.n_experts, c.dim, c.moe_hidden_dim
        self.E, self.act = E, c.expert_act
        self.gate_up_proj = nn.Parameter(torch.empty(E, C, 2 * Fh))
        self.down_proj = nn.Parameter(torch.empty(E, Fh, C))
        if c.expert_bias:
            self.gate_up_proj_bias = nn.Parameter(torch.zeros(E, 2 * Fh))
            self.down_proj_bias = nn.Parameter(torch.zeros(E, C))
        self.has_bias = c.expert_bias

    def forward(self, x: torch.Tensor, w: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """x (N, C), w and ids (N, k) -> (N, C): each token's k experts' outputs, weighted and summed."""
        k = ids.shape[-1]
        sorted_ids, perm = torch.sort(ids.reshape(-1))  # (N*k,): pairs in expert order
        token = perm // k  # (N*k,) the token of each sorted pair
        rows = x[token]  # (N*k, C) dispatch
        counts = torch.histc(sorted_ids.float(), bins=self.E, min=0, max=self.E - 1)  # (E,) rows per expert
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)  # (E,) end row of each expert's group
        h = torch._grouped_mm(rows, self.gate_up_proj, offs=offs)  # (N*k, 2F)
        if self.has_bias:
            h = h + self.gate_up_proj_bias[sorted_ids]
        h = self._glu(h)  # (N*k, F)
        y = torch._grouped_mm(h, self.down_proj, offs=offs)  # (N*k, C)
        if self.has_bias:
            y = y + self.down_proj_bias[sorted_ids]
        y = y * w.reshape(-1)[perm].unsqueeze(-1).to(y.dtype)  # (N*k, C) weighted
        return torch.zeros_like(x).index_add(0, token, y)  # (N, C) combine

    def _glu(self, h: torch.Tensor) -> torch.Tensor:
        if self.act == "clamped_swiglu":  # gpt-oss: gate and up interleaved in the 2F columns
            gate = h[..., ::2].clamp(max=_GPT_OSS_LIMIT)
            up = h[..., 1::2].clamp(min=-_GPT_OSS_LIMIT, max=_GPT_OSS_LIMIT)
            return (up + 1) * (gate * torch.sigmoid(gate * _GPT_OSS_ALPHA))
        gate, up = h.chunk(2, dim=-1)
        return F.silu(gate) * up


class MoE(nn.Module):
    """Routed experts (and shared ones): (B, T, C) -> (B, T, C)."""

    def __init__(self, c):
        super().__init__()
        self.router_name = "router" if c.router == "topk_softmax" else "gate"  # gpt-oss names it router
        setattr(self, self.router_name, Router(c))
        self.experts = Experts(c)
        if c.n_shared_experts:
            self.shared_experts = GatedMLP(c.dim, c.moe_hidden_dim * c.n_shared_experts, c.act)
        self.shared = c.n_shared_experts > 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        flat = x.reshape(B * T, C)  # (N, C)
        w, ids = getattr(self, self.router_name)(flat)
        y = self.experts(flat, w, ids).view(B, T, C)
        return y + self.shared_experts(x) if self.shared else y


def check_expert_dtype(model: nn.Module, dtype: torch.dtype) -> None:
    """Refuse a grouped-GEMM MoE model at a dtype other than bfloat16.

    torch 2.13's shape rule for ``aten._grouped_mm`` (``torch/_meta_registrations.py``,
    ``_meta_grouped_mm_common``) copies the CUDA kernel's check and accepts bfloat16 only, so
    capture on fake or meta tensors fails at any other dtype (transformers' ``grouped_mm`` experts
    too). Stacked expert weights are 3-D parameters under an ``experts`` module.

    Raises
    ------
    ModelSpecError
        ``model`` has stacked expert weights and ``dtype`` is not bfloat16.
    """
    from dfx.errors import ModelSpecError

    if dtype == torch.bfloat16:
        return
    if any(p.dim() == 3 and ".experts." in f".{name}" for name, p in model.named_parameters()):
        raise ModelSpecError(
            f"mixture-of-experts models capture in bfloat16 only (torch's grouped-GEMM shape rule); "
            f"got {str(dtype).removeprefix('torch.')}: use --dtype bf16"
        )
