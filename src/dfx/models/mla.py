"""DeepSeek's multi-head latent attention (MLA), in its expanded and absorbed forms, and the MTP module.

MLA (DeepSeek-V2, arXiv 2405.04434, section 2.1.2-2.1.3; DeepSeek-V3, arXiv 2412.19437, section
2.1.1) caches one latent per token and layer: ``c_kv`` (r = ``kv_lora_rank``, 512 in V3) and the
shared rotary key ``k_pe`` (dr = ``qk_rope_head_dim``, 64), so ``r + dr`` elements per token per
layer where GQA caches ``2 * nkv * hs``. Letters: H heads, dn = ``qk_nope_head_dim``, dv =
``v_head_dim``, qr = ``q_lora_rank``.

- **Expanded** (prefill, training; transformers' ``DeepseekV3Attention``): ``kv_b_proj`` up-projects
  the latent to per-head keys (dn) and values (dv); attention runs over heads of size dn + dr.
- **Absorbed** (decode; the paper's appendix: "W_UK can be absorbed into W_Q, and W_UV into W_O"):
  the query is moved into the latent space, ``q_lat = q_nope @ W_UK`` (per head, dn -> r), scores
  are ``[q_lat, q_pe] . [c_kv, k_pe]`` over the cached latents directly, the weighted latent sum is
  moved out with ``W_UV`` (r -> dv) per head. Matmul FLOPs of one step, T new tokens, S cached:
  ``2*B*T*H*dn*r + 2*B*H*T*(S+T)*(r+dr) + 2*B*H*T*(S+T)*r + 2*B*T*H*r*dv``; the cache is read once
  for all H heads.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from dfx.models.layers import RMSNorm
from dfx.models.llama import apply_rotary

__all__ = ["MLAttention"]


class MLAttention(nn.Module):
    """MLA self-attention; parameters named as transformers' ``DeepseekV3Attention``."""

    def __init__(self, c):
        super().__init__()
        self.H, self.dn, self.dr, self.dv, self.r = (
            c.n_heads,
            c.qk_nope_head_dim,
            c.qk_rope_head_dim,
            c.v_head_dim,
            c.kv_lora_rank,
        )
        qk = self.dn + self.dr
        self.scale = c.query_scale if c.query_scale is not None else qk**-0.5
        self.lora = c.q_lora_rank is not None
        if self.lora:
            self.q_a_proj = nn.Linear(c.dim, c.q_lora_rank, bias=False)
            self.q_a_layernorm = RMSNorm(c.q_lora_rank, c.norm_eps)
            self.q_b_proj = nn.Linear(c.q_lora_rank, c.n_heads * qk, bias=False)
        else:
            self.q_proj = nn.Linear(c.dim, c.n_heads * qk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(c.dim, self.r + self.dr, bias=False)
        self.kv_a_layernorm = RMSNorm(self.r, c.norm_eps)
        self.kv_b_proj = nn.Linear(self.r, c.n_heads * (self.dn + self.dv), bias=False)
        self.o_proj = nn.Linear(c.n_heads * self.dv, c.dim, bias=False)

    def forward(self, x, cos, sin, cache: torch.Tensor | None = None):
        """(B, T, C) -> (B, T, C); with ``cache`` (latents (B, S, r + dr)) also the new latents (B, T, r + dr)."""
        B, T, _ = x.shape
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))) if self.lora else self.q_proj(x)
        q = q.view(B, T, self.H, self.dn + self.dr).transpose(1, 2)  # (B, H, T, dn+dr)
        q_nope, q_pe = q.split([self.dn, self.dr], dim=-1)
        c_kv, k_pe = self.kv_a_proj_with_mqa(x).split([self.r, self.dr], dim=-1)  # (B, T, r), (B, T, dr)
        c_kv = self.kv_a_layernorm(c_kv)
        q_pe = apply_rotary(q_pe, cos, sin)  # (B, H, T, dr)
        k_pe = apply_rotary(k_pe.unsqueeze(1), cos, sin)  # (B, 1, T, dr): one rotary key for all heads
        if cache is None:
            y = self._expanded(q_nope, q_pe, c_kv, k_pe)
            return self.o_proj(y)
        latent = torch.cat((c_kv, k_pe.squeeze(1)), dim=-1)  # (B, T, r+dr): what the cache stores
        return self.o_proj(self._absorbed(q_nope, q_pe, latent, cache)), latent

    def _expanded(self, q_nope, q_pe, c_kv, k_pe) -> torch.Tensor:
        B, H, T, _ = q_nope.shape
        kv = self.kv_b_proj(c_kv).view(B, T, H, self.dn + self.dv).transpose(1, 2)  # (B, H, T, dn+dv)
        k_nope, v = kv.split([self.dn, self.dv], dim=-1)
        k = torch.cat((k_nope, k_pe.expand(B, H, T, self.dr)), dim=-1)  # (B, H, T, dn+dr)
        q = torch.cat((q_nope, q_pe), dim=-1)  # (B, H, T, dn+dr)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)  # (B, H, T, dv)
        return y.transpose(1, 2).reshape(B, T, H * self.dv)

    def _absorbed(self, q_nope, q_pe, latent, cache) -> torch.Tensor:
        B, H, T, _ = q_nope.shape
        S, r = cache.shape[1], self.r
        w = self.kv_b_proj.weight.view(H, self.dn + self.dv, r)
        w_uk, w_uv = w[:, : self.dn], w[:, self.dn :]  # (H, dn, r), (H, dv, r)
        qn = q_nope.transpose(0, 1).reshape(H, B * T, self.dn)  # (H, B*T, dn)
        q_lat = torch.bmm(qn, w_uk).view(H, B, T, r).transpose(0, 1)  # (B, H, T, r): W_UK absorbed
        q = torch.cat((q_lat, q_pe), dim=-1).reshape(B, H * T, r + self.dr) * self.scale  # (B, H*T, r+dr)
        s_cache = torch.bmm(q, cache.transpose(1, 2))  # (B, H*T, S): reads the latent cache once
        s_new = torch.bmm(q, latent.transpose(1, 2))  # (B, H*T, T)
        p = F.softmax(torch.cat((s_cache, s_new), dim=-1), dim=-1)  # (B, H*T, S+T)
        o = torch.bmm(p[..., :S], cache[..., :r]) + torch.bmm(p[..., S:], latent[..., :r])  # (B, H*T, r)
        o = o.view(B, H, T, r).transpose(0, 1).reshape(H, B * T, r)  # (H, B*T, r)
        y = torch.bmm(o, w_uv.transpose(1, 2))  # (H, B*T, dv): W_UV absorbed into the output
        return y.view(H, B, T, self.dv).permute(1, 2, 0, 3).reshape(B, T, H * self.dv)
