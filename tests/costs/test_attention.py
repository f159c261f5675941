"""PB-01: SDPA counts 4*B*H_q*S_q*S_kv*D matmul FLOPs on every backend, GQA and causal included."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ._helpers import call, cost, costed, flop_counter_total, flops_of, matmul_flops, spec

B, H, S, D = 1, 12, 64, 64
PB01 = 12_582_912  # QK^T 2*1*12*64*64*64 = 6,291,456, plus attn x V the same
SCORES = B * H * S * S  # 49,152 softmax inputs


class Attention(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **self.kwargs)


def _bhsd(heads=H):
    return spec(B, heads, S, D)


def _bshd(heads=H):
    return spec(B, S, heads, D)  # the flash/efficient kernels' own layout


# Every backend op, called as its dispatcher would call it (GPU-only ones built by hand).
QKV, QKV_KERNEL = (_bhsd(), _bhsd(), _bhsd()), (_bshd(), _bshd(), _bshd())
BACKENDS = {
    "scaled_dot_product_attention": call("aten.scaled_dot_product_attention.default", *QKV),
    "math": call("aten._scaled_dot_product_attention_math.default", *QKV),
    "flash": call("aten._scaled_dot_product_flash_attention.default", *QKV, 0.0, False, False),
    "efficient": call("aten._scaled_dot_product_efficient_attention.default", *QKV, None, True, 0.0, False),
    "cudnn": call("aten._scaled_dot_product_cudnn_attention.default", *QKV, None, True, 0.0, False, False),
    "cpu_flash": call("aten._scaled_dot_product_flash_attention_for_cpu.default", *QKV, 0.0, False),
    "overrideable": call("aten._scaled_dot_product_fused_attention_overrideable.default", *QKV),
    "flash_forward": call("aten._flash_attention_forward.default", *QKV_KERNEL, None, None, S, S, 0.0, False, False),
    "efficient_forward": call("aten._efficient_attention_forward.default", *QKV_KERNEL, None, None, None, S, S, 0.0, 0),
}


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_pb01_every_backend_counts_the_same(backend):
    c = BACKENDS[backend]
    assert flops_of(c, "matmul") == PB01
    assert flops_of(c, "normalization") == 5 * SCORES  # softmax, kept out of the matmul entry
    assert flops_of(c, "elementwise") == SCORES  # the scale, one mul per score
    assert cost(c).category.value == "matmul"


def test_pb01_captured_on_cpu_and_with_the_math_backend():
    # Capture records SDPA as the one fused call whatever backend the CPU would pick (the flash
    # kernel by default, the math decomposition when forced); the kernels themselves are costed
    # from hand-built calls in the tests below.
    q = torch.randn(B, H, S, D)
    fused = costed(Attention(), (q, q, q))
    ops = [c.op for n in fused.graph.nodes for c in n.aten_calls]
    assert ops == ["aten.scaled_dot_product_attention.default"]
    with sdpa_kernel(SDPBackend.MATH):
        math = costed(Attention(), (q, q, q))
    assert matmul_flops(fused) == matmul_flops(math) == PB01
    assert fused.flops_by_category()["normalization"] == 5 * SCORES


def test_pb01_flop_counter_mode_on_cpu():
    # torch 2.13's FlopCounterMode has no formula for the CPU flash kernel: it still counts 0.
    q = torch.randn(B, H, S, D)
    reference = flop_counter_total(F.scaled_dot_product_attention, q, q, q)
    assert reference in (0, PB01)  # 0 is the PB-01 bug; PB01 once torch fixes it
    assert matmul_flops(costed(Attention(), (q, q, q))) == PB01


@pytest.mark.parametrize("kwargs", [{"is_causal": True}, {"dropout_p": 0.1}])
def test_causal_and_train_dropout_do_not_change_the_matmul_count(kwargs):
    q = torch.randn(B, H, S, D)
    cg = costed(Attention(**kwargs), (q, q, q))
    assert matmul_flops(cg) == PB01  # causal is not halved; dropout > 0 lowers to the math backend


def test_gqa_counts_query_heads():
    # q 12 heads, k/v 4 heads: still 4*1*12*64*64*64
    q, kv = torch.randn(B, H, S, D), torch.randn(B, 4, S, D)
    fused = costed(Attention(enable_gqa=True), (q, kv, kv))
    with sdpa_kernel(SDPBackend.MATH):
        math = costed(Attention(enable_gqa=True), (q, kv, kv))
        reference = flop_counter_total(lambda *a: F.scaled_dot_product_attention(*a, enable_gqa=True), q, kv, kv)
    assert matmul_flops(fused) == matmul_flops(math) == reference == PB01
    for name in ("flash", "efficient", "cudnn"):
        c = BACKENDS[name]
        gqa = call(c.op, _bhsd(), _bhsd(4), _bhsd(4), *c.args[3:])
        assert flops_of(gqa, "matmul") == PB01


def test_gqa_in_the_flash_kernel_layout():
    c = call("aten._flash_attention_forward.default", _bshd(), _bshd(4), _bshd(4), None, None, S, S, 0.0, True, False)
    assert flops_of(c, "matmul") == PB01
    assert flops_of(c, "elementwise") == 2 * SCORES  # scale + causal mask


def test_cross_attention_and_value_dim():
    # q [2, 8, 10, 32], k [2, 8, 30, 32], v [2, 8, 30, 16]: 2*16*10*30*32 + 2*16*10*30*16
    c = call("aten.scaled_dot_product_attention.default", spec(2, 8, 10, 32), spec(2, 8, 30, 32), spec(2, 8, 30, 16))
    assert flops_of(c, "matmul") == 307_200 + 153_600


def test_variable_length_flash_is_per_token():
    # three packed sequences of 64: q [192, 12, 64]; 3 x PB01 when every key length is max_k
    packed = spec(3 * S, H, D)
    c = call(
        "aten._flash_attention_forward.default",
        packed,
        packed,
        packed,
        spec(4, dtype="int32"),
        spec(4, dtype="int32"),
        S,
        S,
        0.0,
        False,
        False,
    )
    assert flops_of(c, "matmul") == 3 * PB01


def test_masks_and_bytes():
    mask = spec(B, 1, S, S, dtype="bool")
    c = call(
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
        _bhsd(),
        _bhsd(),
        _bhsd(),
        0.0,
        False,
        attn_mask=mask,
        outputs=(_bhsd(), spec(B, H, S)),
    )
    assert flops_of(c, "elementwise") == 2 * SCORES  # scale + mask add
    assert cost(c).cost.bytes_read == 3 * SCORES * 4 + S * S  # q, k, v fp32 and a bool mask
    assert cost(c).cost.bytes_written == (SCORES + H * S) * 4  # output and logsumexp


@pytest.mark.parametrize("s", [64, 100])
def test_kernel_layout_against_flop_counter_mode(s):
    # _flash/_efficient_attention_forward take [B, S, H, D]; FlopCounterMode (torch 2.13) reads a
    # dense query as [B, H, S, D], giving 4*B*S*H*H*D instead of 4*B*H*S*S*D.
    q = torch.empty(B, s, H, D, device="meta", dtype=torch.float16)
    right, wrong = 4 * B * H * s * s * D, 4 * B * s * H * H * D
    args = {
        "aten._flash_attention_forward.default": (None, None, s, s, 0.0, False, False),
        "aten._efficient_attention_forward.default": (None, None, None, s, s, 0.0, 0),
    }
    for op, rest in args.items():
        fn = getattr(torch.ops.aten, op.split(".")[1])
        assert flop_counter_total(lambda: fn(q, q, q, *rest)) in (wrong, right)
        bshd = spec(B, s, H, D, dtype="float16")
        assert flops_of(call(op, bshd, bshd, bshd, *rest), "matmul") == right


@pytest.mark.parametrize("backend", [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH])
def test_pb01_on_the_kernels_the_cpu_really_dispatches_to(backend):
    # Record the aten calls a real CPU run dispatches to (the CPU flash kernel, or the math
    # backend's bmm/softmax) and cost each with the registry: both give 12,582,912 matmul FLOPs.
    from torch.utils._python_dispatch import TorchDispatchMode

    from dfx.capture.propagate import to_arg_value, to_spec
    from dfx.costs import cost_of_call
    from dfx.ir import AtenCall

    class Record(TorchDispatchMode):
        calls: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            outs = out if isinstance(out, (tuple, list)) else (out,)
            self.calls.append(
                AtenCall(
                    str(func),
                    tuple(to_arg_value(a) for a in args),
                    (),
                    tuple(to_spec(t) for t in outs if isinstance(t, torch.Tensor)),
                )
            )
            return out

    q = torch.randn(B, H, S, D)
    with sdpa_kernel(backend), Record() as rec:
        F.scaled_dot_product_attention(q, q, q)
    ops = [c.op for c in rec.calls]
    if backend is SDPBackend.FLASH_ATTENTION:
        assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in ops
    matmul = sum(dict(cost_of_call(c).flops_by_category).get("matmul", 0) for c in rec.calls if cost_of_call(c))
    assert matmul == PB01
