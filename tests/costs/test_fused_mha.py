"""PB-10: TransformerEncoderLayer / MultiheadAttention count the same whatever fast path runs."""

import pytest
import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from dfx.capture.propagate import to_arg_value, to_spec
from dfx.costs import cost_calls
from dfx.ir import AtenCall

from ._helpers import call, cost, costed, flop_counter_total, flops_of, matmul_flops, spec

# in_proj 2*64*512*1536 + QK^T 2*64*64*512 + attn.V 2*64*64*512 + out_proj 2*64*512*512 + FFN 2 x 2*64*512*512
PB10 = 100_663_296 + 4_194_304 + 4_194_304 + 33_554_432 + 2 * 33_554_432
assert PB10 == 209_715_200


def _encoder(dropout: float = 0.1) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=4, dim_feedforward=512, dropout=dropout, batch_first=True)
    return nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)


@pytest.fixture(scope="module")
def x():
    return torch.randn(1, 64, 512)


@pytest.mark.parametrize("mode", ["eval_frozen", "eval_no_grad", "train_no_dropout"])
def test_pb10_encoder_layer_in_every_mode(x, mode):
    enc = _encoder(dropout=0.0 if mode == "train_no_dropout" else 0.1)
    if mode.startswith("eval"):
        enc.eval()
    if mode == "eval_frozen":
        enc.requires_grad_(False)
    if mode == "eval_no_grad":
        with torch.no_grad():
            cg = costed(enc, (x,))
    else:
        cg = costed(enc, (x,))
    assert matmul_flops(cg) == PB10


def _encoder_layer_call(d=512, f=512, s=64, heads=4, use_gelu=False) -> AtenCall:
    w = spec  # weights as captured: qkv [3E, E], proj [E, E], ffn1 [F, E], ffn2 [E, F]
    return call(
        "aten._transformer_encoder_layer_fwd.default",
        spec(1, s, d),
        d,
        heads,
        w(3 * d, d),
        w(3 * d),
        w(d, d),
        w(d),
        use_gelu,
        False,
        1e-5,
        w(d),
        w(d),
        w(d),
        w(d),
        w(f, d),
        w(f),
        w(d, f),
        w(d),
        None,
        None,
        outputs=(spec(1, s, d),),
    )


def test_pb10_fused_encoder_layer_rule():
    c = _encoder_layer_call()
    assert flops_of(c, "matmul") == PB10
    # biases (3*64*512 + 64*512 + 64*512 + 64*512) + scale (4*64*64) + ReLU (64*512) + 2 residuals (2*64*512)
    assert flops_of(c, "elementwise") == 64 * 512 * 6 + 4 * 64 * 64 + 64 * 512 + 2 * 64 * 512
    # softmax 5*4*64*64 + two layer norms 2*(7*64*512 + 4*64)
    assert flops_of(c, "normalization") == 5 * 16_384 + 2 * (7 * 32_768 + 256)


def test_pb10_fused_mha_rule():
    # q/k/v projections 3*2*64*512*512, attention 2*4*64*64*128*2, out projection 2*64*512*512
    d = 512
    c = call(
        "aten._native_multi_head_attention.default",
        spec(1, 64, d),
        spec(1, 64, d),
        spec(1, 64, d),
        d,
        4,
        spec(3 * d, d),
        spec(3 * d),
        spec(d, d),
        spec(d),
        None,
        False,
        outputs=(spec(1, 64, d),),
    )
    assert flops_of(c, "matmul") == 100_663_296 + 8_388_608 + 33_554_432


class _Record(TorchDispatchMode):
    """Record the aten calls a real (fast-path) forward dispatches, as capture records them."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = [to_spec(t) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        self.calls.append(
            AtenCall(
                str(func),
                tuple(to_arg_value(a) for a in args),
                tuple(sorted((k, to_arg_value(v)) for k, v in (kwargs or {}).items())),
                tuple(outs),
            )
        )
        return out


def _fast_path_calls(module, *inputs):
    module.eval().requires_grad_(False)
    rec = _Record()
    with torch.no_grad(), rec:
        module(*inputs)
    return rec.calls


def test_real_fast_path_calls_are_costed_and_flop_counter_misses_them():
    # a small encoder layer (d 64, F 128, S 16, 4 heads) run for real on its fused fast path
    enc = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval().requires_grad_(False)
    x = torch.randn(2, 16, 64)
    calls = _fast_path_calls(enc, x)
    assert [c.op for c in calls] == ["aten._transformer_encoder_layer_fwd.default"]
    # qkv 2*32*64*192 + attention 4*2*4*16*16*16 + out 2*32*64*64 + FFN 2*(2*32*64*128)
    expected = 786_432 + 131_072 + 262_144 + 1_048_576
    assert flops_of(calls[0], "matmul") == expected
    with torch.no_grad():
        assert flop_counter_total(enc, x) in (0, expected)  # 0: FlopCounterMode has no rule for it
    assert matmul_flops(costed(enc, (x,))) == expected  # capture lowers it: the same count


def test_real_fast_path_mha():
    mha = nn.MultiheadAttention(64, 4, batch_first=True)
    x = torch.randn(2, 16, 64)
    calls = _fast_path_calls(mha, x, x, x)
    assert [c.op for c in calls] == ["aten._native_multi_head_attention.default"]
    # in 2*32*64*192 + attention 4*2*4*16*16*16 + out 2*32*64*64
    assert flops_of(calls[0], "matmul") == 786_432 + 131_072 + 262_144
    assert cost_calls(calls).flops == cost(calls[0]).cost.flops
