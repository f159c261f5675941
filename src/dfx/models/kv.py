"""Attention of new tokens over a KV cache: the decode step's attention, shared by GPT-2 and Llama.

Dimension letters: B batch, nh query heads, nkv key/value heads, g = nh // nkv (query heads per
KV head), T new tokens (1 in a decode step), S cached tokens (the KV length), hs head size.

The cache is an input of the step (``(B, nkv, S, hs)`` for K and for V), read once per step by the
two matmuls that use it; the new token's K and V are returned so the caller appends them (the
cache write of one step is those ``2 * B * nkv * T * hs`` elements). No ``torch.cat`` of the
cache: a serving runtime appends in place (vLLM's paged cache, HF's ``StaticCache``), so a
concatenation that re-reads and re-writes the whole cache every step would overstate the traffic.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["attend_with_cache"]


def attend_with_cache(
    q: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    *,
    scale: float | None = None,
    cap: float | None = None,
    sinks: torch.Tensor | None = None,
) -> torch.Tensor:
    """Softmax attention of ``q`` against ``S`` cached keys plus the ``T`` new ones.

    Parameters
    ----------
    q : Tensor (B, nh, T, hs)
    k_new, v_new : Tensor (B, nkv, T, hs)
        The new tokens' keys (after rotary positions, where the model has them) and values.
    k_cache, v_cache : Tensor (B, nkv, S, hs)
    scale : float, optional
        Score scale; ``None`` is SDPA's ``hs**-0.5`` (Gemma: ``query_pre_attn_scalar**-0.5``).
    cap : float, optional
        Gemma 2's logit soft cap: scores become ``cap * tanh(scores / cap)``.
    sinks : Tensor (nh,), optional
        gpt-oss's per-head sink logit, joined to each softmax and dropped after it.

    Returns
    -------
    Tensor (B, nh, T, hs)

    Notes
    -----
    Matmul FLOPs are ``4 * B * nh * T * (S + T) * hs``, the attention convention of
    ``docs/cost-model.md`` with ``S_kv = S + T``. GQA groups the ``g`` query heads of each KV head
    into the rows of one matmul, so K and V are read at their own ``nkv`` heads (no ``repeat_kv``).
    NB: the ``T`` new tokens all see each other (no causal mask among them); a decode step has
    ``T = 1``, where that is exact.
    """
    B, nh, T, hs = q.shape
    nkv, S = k_cache.shape[1], k_cache.shape[2]
    g = nh // nkv
    q = q.reshape(B, nkv, g * T, hs) * (hs**-0.5 if scale is None else scale)  # (B, nkv, g*T, hs)
    s_cache = torch.matmul(q, k_cache.transpose(-1, -2))  # (B, nkv, g*T, S): reads the K cache
    s_new = torch.matmul(q, k_new.transpose(-1, -2))  # (B, nkv, g*T, T)
    s = torch.cat((s_cache, s_new), dim=-1)  # (B, nkv, g*T, S+T)
    if cap is not None:
        s = torch.tanh(s / cap) * cap
    if sinks is not None:  # row (j, t) of KV head h belongs to query head h*g + j
        sink = sinks.view(1, nkv, g, 1, 1).expand(B, nkv, g, T, 1).reshape(B, nkv, g * T, 1).to(s.dtype)
        s = torch.cat((s, sink), dim=-1)  # (B, nkv, g*T, S+T+1)
    p = F.softmax(s, dim=-1)
    p = p[..., : S + T] if sinks is not None else p  # (B, nkv, g*T, S+T)
    y = torch.matmul(p[..., :S], v_cache) + torch.matmul(p[..., S:], v_new)  # (B, nkv, g*T, hs): reads V
    return y.reshape(B, nh, T, hs)
