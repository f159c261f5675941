"""Top-k routed expert sizes cost tokens x k rows in all, not E x tokens (issue #19, MoE routing).

Three routing styles, each as published code writes it: Mixtral/transformers (``one_hot`` mask,
``torch.where(mask[e])``), Mistral's reference ``moe.py`` (``torch.where(selected == e)``) and a
Switch-style top-1 router (``x[argmax == e]``). Every expert is a SwiGLU MLP d -> f -> d, so one
routed row costs 3 matmuls of 2*d*f FLOPs = 6*d*f; all routings of T tokens to k experts route T*k
rows, whatever their split, so the experts' matmul FLOPs are T*k*6*d*f, plus the router's 2*T*d*E.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dfx.capture import capture
from dfx.costs import annotate

D, FF, E = 16, 32, 4
ROW_FLOPS = 3 * 2 * D * FF  # w1, w3: [1, D] x [D, FF]; w2: [1, FF] x [FF, D] -> 3,072


class Expert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1, self.w3 = nn.Linear(D, FF, bias=False), nn.Linear(D, FF, bias=False)
        self.w2 = nn.Linear(FF, D, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MixtralMoE(nn.Module):
    """transformers' MixtralSparseMoeBlock (v4.4x), loop over every expert."""

    def __init__(self, k: int = 2) -> None:
        super().__init__()
        self.k = k
        self.gate = nn.Linear(D, E, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(E))

    def forward(self, x):
        b, s, d = x.shape
        h = x.view(-1, d)
        w = F.softmax(self.gate(h), dim=1, dtype=torch.float)
        w, sel = torch.topk(w, self.k, dim=-1)
        w = (w / w.sum(dim=-1, keepdim=True)).to(h.dtype)
        out = torch.zeros((b * s, d), dtype=h.dtype, device=h.device)
        mask = F.one_hot(sel, num_classes=E).permute(2, 1, 0)
        for e in range(E):
            idx, top = torch.where(mask[e])
            y = self.experts[e](h[None, top].reshape(-1, d)) * w[top, idx, None]
            out.index_add_(0, top, y.to(h.dtype))
        return out.reshape(b, s, d)


class MistralMoE(nn.Module):
    """mistral-src's MoeLayer: ``torch.where(selected_experts == i)``."""

    def __init__(self, k: int = 2) -> None:
        super().__init__()
        self.k = k
        self.gate = nn.Linear(D, E, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(E))

    def forward(self, x):
        logits = self.gate(x)
        weights, selected = torch.topk(logits, self.k)
        weights = F.softmax(weights, dim=1, dtype=torch.float).to(x.dtype)
        results = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            batch_idx, nth = torch.where(selected == i)
            results[batch_idx] += weights[batch_idx, nth, None] * expert(x[batch_idx])
        return results


class SwitchMoE(nn.Module):
    """Top-1 routing by argmax and a boolean mask per expert (Switch Transformer style)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(D, E, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(E))

    def forward(self, x):
        sel = self.gate(x).argmax(dim=-1)
        parts = [expert(x[sel == e]) for e, expert in enumerate(self.experts)]
        return torch.cat(parts).sum(0)


def _matmul(model: nn.Module, *shape: int, method: str = "auto"):
    with torch.device("meta"):
        model = model.eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = capture(model, (torch.randn(*shape, device="meta"),), method=method)
        costed = annotate(graph)
    assert costed.unknown_ops == ()
    messages = [str(w.message) for w in caught]
    return costed.flops_by_category()["matmul"], dict(graph.meta), messages


@pytest.mark.parametrize("method", ["export", "fx"])
def test_mixtral_style_experts_cost_tokens_times_k_rows(method):
    with torch.device("meta"):
        model = MixtralMoE()
    flops, meta, messages = _matmul(model, 1, 8, D, method=method)
    tokens, k = 8, 2
    router = 2 * tokens * D * E  # [8, 16] x [16, 4] = 1,024
    # 16 routed rows x 3,072 = 49,152 (each expert alone bounded at 16 rows: 4 x 49,152 before)
    assert flops == router + tokens * k * ROW_FLOPS == 50_176
    assert "data_dependent_sizes" not in meta
    assert meta["routed_sizes"] == "u0 = 4, u1 = 4, u2 = 4, u3 = 4 of 16 slots over 4 classes"
    assert any("balanced routing" in m for m in messages)


def test_shares_that_do_not_divide_still_sum_to_the_routed_total():
    with torch.device("meta"):
        model = MixtralMoE(k=2)
    flops, meta, _ = _matmul(model, 1, 5, D)
    # 5 tokens x 2 = 10 slots over 4 experts: 3, 3, 2, 2
    assert flops == 2 * 5 * D * E + 10 * ROW_FLOPS
    assert meta["routed_sizes"].startswith("u0 = 3, u1 = 3, u2 = 2, u3 = 2 of 10 slots")


def test_mistral_reference_style_routes_tokens_times_k():
    with torch.device("meta"):
        model = MistralMoE(k=2)
    flops, _, _ = _matmul(model, 6, D)
    assert flops == 2 * 6 * D * E + 6 * 2 * ROW_FLOPS  # 768 + 36,864


def test_top1_boolean_mask_routing_routes_every_token_once():
    with torch.device("meta"):
        model = SwitchMoE()
    flops, meta, _ = _matmul(model, 10, D)
    # 10 tokens over 4 experts: 3, 3, 2, 2 rows; 10 rows in all
    assert flops == 2 * 10 * D * E + 10 * ROW_FLOPS
    assert meta["routed_sizes"].endswith("of 10 slots over 4 classes")


def test_each_expert_gets_its_balanced_share():
    with torch.device("meta"):
        model = MixtralMoE().eval()
    graph = capture(model, (torch.randn(1, 8, D, device="meta"),))
    rows = {n.module_path: n.outputs[0].shape[0] for n in graph.nodes if n.module_path.endswith(".w2")}
    assert rows == {f"experts.{e}.w2": 4 for e in range(E)}  # 16 slots / 4 experts


def test_a_mask_that_is_not_routing_keeps_its_upper_bound():
    class Positive(nn.Module):
        def forward(self, x):
            return x[x > 0].sum()

    flops, meta, _ = _matmul(Positive(), 4, 8)
    assert meta["data_dependent_sizes"] == "u0 <= 32" and "routed_sizes" not in meta
    assert flops == 0
