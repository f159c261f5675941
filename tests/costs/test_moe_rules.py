"""Cost rules of mixture-of-experts ops: ``_grouped_mm`` (every operand form) and ``histc``.

The reference is transformers' own Mixtral (``MixtralForCausalLM``, experts through
``integrations/moe.py``'s ``grouped_mm_experts_forward``) built on the meta device: dfx's matmul
FLOPs equal top-k routing's hand count, and FlopCounterMode's count plus the experts' (FlopCounterMode
has no formula for ``_grouped_mm``, so it counts attention, router and lm_head only).
"""

from __future__ import annotations

import pytest

from tests.costs._helpers import call, cost, costed, flop_counter_total, matmul_flops, spec

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.costs._moe import D, E, F, H, HD, HKV, K, L, T, V, mixtral  # noqa: E402

BF16 = "bfloat16"


def test_grouped_mm_2d_3d_counts_routed_rows_only():
    # a [S=256, K=64] x b [E=8, K=64, N=32] with offs [8] -> [256, 32]: 2 * 256 * 64 * 32
    a, b, offs = spec(256, 64, dtype=BF16), spec(8, 64, 32, dtype=BF16), spec(8, dtype="int32")
    c = cost(call("aten._grouped_mm.default", a, b, offs, outputs=(spec(256, 32, dtype=BF16),)))
    assert c.category.value == "matmul"
    assert c.cost.flops == 2 * 256 * 64 * 32
    # reads: a (256*64*2 B) + min(E, S) = 8 experts' weights (8*64*32*2 B) + offs (8*4 B); writes 256*32*2 B
    assert c.cost.bytes_read == 256 * 64 * 2 + 8 * 64 * 32 * 2 + 8 * 4
    assert c.cost.bytes_written == 256 * 32 * 2


def test_grouped_mm_one_token_reads_k_experts():
    # decode, one token, top-2: S = 2 routed rows can touch at most 2 of the 8 experts
    a, b, offs = spec(2, 64, dtype=BF16), spec(8, 64, 32, dtype=BF16), spec(8, dtype="int32")
    c = cost(call("aten._grouped_mm.default", a, b, offs, outputs=(spec(2, 32, dtype=BF16),)))
    assert c.cost.bytes_read == 2 * 64 * 2 + 2 * 64 * 32 * 2 + 8 * 4


def test_grouped_mm_weight_gradient_and_batched_forms():
    # 2D x 2D (weight gradient): [M=64, S=256] x [S=256, N=32] -> [E=8, 64, 32]: 2 * 64 * 256 * 32
    a, b, offs = spec(64, 256, dtype=BF16), spec(256, 32, dtype=BF16), spec(8, dtype="int32")
    c = cost(call("aten._grouped_mm.default", a, b, offs, outputs=(spec(8, 64, 32, dtype=BF16),)))
    assert c.cost.flops == 2 * 64 * 256 * 32
    # 3D x 3D: 8 GEMMs [16, 64] x [64, 32]: 2 * 8 * 16 * 64 * 32
    a3, b3 = spec(8, 16, 64, dtype=BF16), spec(8, 64, 32, dtype=BF16)
    assert cost(call("aten._grouped_mm.default", a3, b3, outputs=(spec(8, 16, 32, dtype=BF16),))).cost.flops == (
        2 * 8 * 16 * 64 * 32
    )
    # 3D x 2D: [E=8, M=16, K=64] x [K=64, S=256] -> [16, 256]: 2 * 16 * 64 * 256
    b2 = spec(64, 256, dtype=BF16)
    out = (spec(16, 256, dtype=BF16),)
    assert cost(call("aten._grouped_mm.default", a3, b2, offs, outputs=out)).cost.flops == 2 * 16 * 64 * 256


def test_histc_is_a_reduction_with_three_ops_per_input():
    x = spec(256, dtype="int32")
    c = cost(call("aten.histc.default", x, 8, 0, 7, outputs=(spec(8, dtype="int32"),)))
    assert c.cost.flops == 3 * 256  # (x - min) * scale, then one add to the bin
    assert (c.cost.bytes_read, c.cost.bytes_written) == (256 * 4, 8 * 4)


def test_f_grouped_mm_lowers_to_the_same_op():
    if not hasattr(torch.nn.functional, "grouped_mm"):
        pytest.skip("torch.nn.functional.grouped_mm needs torch >= 2.10")

    class Experts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.empty(4, 32, 16, dtype=torch.bfloat16))

        def forward(self, x, offs):
            return torch.nn.functional.grouped_mm(x, self.w, offs=offs)

    with torch.device("meta"):
        model, x, offs = Experts(), torch.empty(64, 32, dtype=torch.bfloat16), torch.empty(4, dtype=torch.int32)
    cg = costed(model, (x, offs))
    assert matmul_flops(cg) == 2 * 64 * 32 * 16


# --- transformers' own models on the meta device ------------------------------------------------


def test_transformers_mixtral_matmul_flops_equal_top_k_hand_count():
    model, ids = mixtral()
    cg = costed(model, (ids,))
    q_o = 2 * 2 * T * D * (H * HD)  # q_proj and o_proj: 2 * T * D * D each
    k_v = 2 * 2 * T * D * (HKV * HD)  # k_proj and v_proj
    attention = 4 * H * T * T * HD  # QK^T and PV, causal mask not halved
    router = 2 * T * D * E
    experts = 2 * T * K * 3 * D * F  # gate, up, down over the T*k routed rows only
    lm_head = 2 * T * D * V
    hand = L * (q_o + k_v + attention + router + experts) + lm_head
    assert hand == 586_678_272
    assert matmul_flops(cg) == hand
    # FlopCounterMode has no _grouped_mm formula: it counts everything but the experts
    with torch.no_grad():  # with a cache object: without one transformers checks for packed sequences (.item())
        reference = flop_counter_total(lambda x: model(x, use_cache=True), ids)
    assert matmul_flops(cg) == reference + L * experts
    assert not any(n.node.name.startswith("_grouped_mm") and n.cost.flops == 0 for n in cg.nodes)


def _tiny(config_cls, model_cls, attn: str = "sdpa", **fields):
    cfg = config_cls(vocab_size=V, num_hidden_layers=L, use_cache=False, **fields)
    with torch.device("meta"):
        model = model_cls._from_config(cfg, attn_implementation=attn).to(torch.bfloat16).eval()
        ids = torch.zeros(1, T, dtype=torch.int64)
    return model, ids


@pytest.mark.parametrize(
    "family",
    ["qwen3_moe", "gpt_oss", "deepseek_v3"],
)
def test_moe_families_have_a_rule_for_every_op(family):
    # costed() fails on any op left without a rule; every expert GEMM is costed (> 0 FLOPs)
    common = dict(hidden_size=D, num_attention_heads=H, num_key_value_heads=HKV, num_experts_per_tok=K)
    if family == "qwen3_moe":
        model, ids = _tiny(
            transformers.Qwen3MoeConfig,
            transformers.Qwen3MoeForCausalLM,
            intermediate_size=F,
            moe_intermediate_size=F // 4,
            num_experts=E,
            head_dim=HD,
            **common,
        )
    elif family == "gpt_oss":  # transformers refuses SDPA for gpt-oss (attention sinks): eager
        model, ids = _tiny(
            transformers.GptOssConfig,
            transformers.GptOssForCausalLM,
            attn="eager",
            intermediate_size=F,
            num_local_experts=E,
            head_dim=HD,
            sliding_window=64,
            layer_types=["sliding_attention", "full_attention"],
            **common,
        )
    else:
        model, ids = _tiny(
            transformers.DeepseekV3Config,
            transformers.DeepseekV3ForCausalLM,
            intermediate_size=F,
            moe_intermediate_size=F // 4,
            n_routed_experts=E,
            n_shared_experts=1,
            first_k_dense_replace=1,
            n_group=2,
            topk_group=1,
            kv_lora_rank=64,
            q_lora_rank=96,
            qk_nope_head_dim=32,
            qk_rope_head_dim=16,
            v_head_dim=32,
            **{**common, "num_key_value_heads": H},
        )
    cg = costed(model, (ids,))
    grouped = [n for n in cg.nodes if any(c.packet == "aten._grouped_mm" for c in n.node.aten_calls)]
    assert grouped and all(n.flops_by_category and n.cost.flops > 0 for n in grouped)


def test_transformers_fallback_op_fp32_and_its_backward():
    # fp32 weights under torch.export take transformers' own grouped_mm_fallback: the same count
    a, b, offs = spec(256, 64), spec(8, 64, 32), spec(8, dtype="int32")
    fwd = cost(call("transformers.grouped_mm_fallback.default", a, b, offs, outputs=(spec(256, 32),)))
    assert fwd.cost.flops == 2 * 256 * 64 * 32
    g = spec(256, 32)
    bwd = cost(call("transformers.grouped_mm_fallback_backward.default", a, b, offs, g, outputs=(a, b)))
    assert bwd.cost.flops == 2 * (2 * 256 * 64 * 32)  # grad_input and grad_weight, one GEMM each


def test_transformers_mixtral_block_alone_captures_as_grouped_gemms():
    # MixtralSparseMoeBlock built on its own has no experts implementation chosen and would run its
    # per-expert loop over the experts a batch hits (data-dependent); dfx captures it as a whole model
    # runs it, with grouped GEMMs, and leaves the config as it found it
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    cfg = transformers.MixtralConfig(hidden_size=D, intermediate_size=F, num_local_experts=E, num_experts_per_tok=K)
    with torch.device("meta"):
        block = MixtralSparseMoeBlock(cfg).to(torch.bfloat16).eval()
        x = torch.zeros(1, T, D, dtype=torch.bfloat16)
    cg = costed(block, (x,))
    router = 2 * T * D * E
    experts = 2 * T * K * 3 * D * F  # top-2 of 8 over 128 tokens: 201,326,592
    assert matmul_flops(cg) == router + experts == 201_850_880
    assert cfg._experts_implementation is None
