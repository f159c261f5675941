"""FFTs: FFTW's benchFFT scale, 5 N log2 N per complex transform and 2.5 N log2 N per real one.

FlopCounterMode has no formula for the FFT ops (it counts 0); the tests accept 0 or our value.
"""

import pytest
import torch
import torch.nn as nn

from dfx.costs import Cost
from dfx.costs.rules_fft import fft_flops

from ._helpers import call, cost, costed, flop_counter_total, spec

NORM_NONE, NORM_BY_N = 0, 2  # fft_norm_mode


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def test_real_input_fft():
    # rfft over the last dim of (8, 16) fp32: 8 transforms of N = 16, 2.5 * 16 * log2 16 = 160 each -> 1280.
    # Reads 128 * 4 = 512 B; writes (8, 9) complex64, 72 * 8 = 576 B
    r2c = call("aten._fft_r2c.default", spec(8, 16), (1,), NORM_NONE, True, outputs=(spec(8, 9, dtype="complex64"),))
    c = cost(r2c)
    assert c.cost == Cost(1280, 512, 576)
    assert c.category.value == "elementwise"


def test_complex_fft_and_normalization():
    # c2c over dim 1 of (4, 8) complex64: 4 transforms * 5 * 8 * log2 8 = 4 * 120 = 480
    x = spec(4, 8, dtype="complex64")
    assert cost(call("aten._fft_c2c.default", x, (1,), NORM_NONE, True, outputs=(x,))).cost.flops == 480
    # normalized (1/n): + 2 real multiplies per complex element, 2 * 32 = 64
    assert cost(call("aten._fft_c2c.default", x, (1,), NORM_BY_N, False, outputs=(x,))).cost.flops == 480 + 64


def test_non_power_of_two_is_rounded_once():
    # 10 transforms of N = 12: 10 * 5 * 12 * log2 12 = 600 * 3.5849625 = 2150.98 -> 2151
    assert fft_flops(12, 10, real=False) == 2151
    assert fft_flops(1, 7, real=True) == 0  # a 1-point transform is a copy


def test_captured_rfft_irfft_round_trip():
    # rfft: 1280 as above. irfft (c2r, (8, 9) -> (8, 16), default norm scales by 1/n): 8 transforms
    # of N = 16 at 2.5 * 16 * 4 = 1280, + 1 multiply per real output, 128 -> 1408. Total 2688.
    fn = lambda a: torch.fft.irfft(torch.fft.rfft(a), n=16)  # noqa: E731
    x = torch.randn(8, 16)
    cg = costed(Fn(fn), (x,))  # fails on any unknown op
    assert cg.total.flops == 1280 + 1408
    assert flop_counter_total(fn, x) in (0, 2688)  # FlopCounterMode: no FFT formula (0)


def test_captured_full_fft_of_a_real_input():
    # torch.fft.fft of a real (8, 16): _fft_r2c with onesided=False. 1280 for the transform, then the
    # mirrored half is conjugated: 8 * 16 - 8 * 9 = 56 negates -> 1336
    cg = costed(Fn(lambda a: torch.fft.fft(a)), (torch.randn(8, 16),))
    assert cg.total.flops == 1280 + 56


def test_captured_fft2_of_a_real_input():
    # torch.fft.fft2 of a real (2, 5, 4, 8) converts to complex (_to_copy, 0 FLOPs), then one c2c over
    # the last two dims: 10 transforms of N = 32, 5 * 32 * 5 = 800 each -> 8000
    cg = costed(Fn(lambda a: torch.fft.fft2(a)), (torch.randn(2, 5, 4, 8),))
    assert cg.total.flops == 8000


@pytest.mark.parametrize("norm, extra", [("backward", 0), ("ortho", 2 * 8 * 9)])
def test_rfft_norm_modes(norm, extra):
    # "ortho" scales each of the 72 complex outputs by 1/sqrt(16): 2 real multiplies each, 144
    cg = costed(Fn(lambda a: torch.fft.rfft(a, norm=norm)), (torch.randn(8, 16),))
    assert cg.total.flops == 1280 + extra


def test_captured_fp16_rfft_writes_complex32_at_4_bytes():
    # An fp16 FFT returns torch.complex32 (two float16s, 4 B per element), a dtype the IR lacked: the
    # capture failed with "unknown dtype 'complex32'". rfft of fp16 (8, 16): 1280 FLOPs as above;
    # reads 128 * 2 = 256 B, writes (8, 9) complex32, 72 * 4 = 288 B. On meta, as dfx builds models:
    # torch takes fp16 FFTs on CUDA and meta, not on CPU (torch/_refs/fft.py)
    x = torch.empty(8, 16, dtype=torch.float16, device="meta")
    cg = costed(Fn(lambda a: torch.fft.rfft(a)), (x,))
    assert cg.total == Cost(1280, 256, 288)
    out = [n for n in cg.graph.nodes if n.op == "call_function"][-1]
    assert out.outputs[0].dtype == "complex32"
