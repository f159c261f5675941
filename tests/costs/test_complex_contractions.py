"""Complex contractions cost real FLOPs: a complex MAC is 4 real multiplies and 4 real adds."""

import pytest
import torch

from dfx.capture import capture
from dfx.costs import annotate


class _MatMul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


class _Outer(torch.nn.Module):
    def forward(self, a, b):
        return torch.outer(a, b)


def _flops(model, *args) -> int:
    return sum(n.cost.flops for n in annotate(capture(model, args)).nodes)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_gemm_is_8mkn_real_flops(dtype):
    m, k, n = 4, 6, 5
    # (a+bi)(c+di): 4 muls + 2 adds, accumulating re and im: 2 adds -> 8 * m * k * n = 8 * 120 = 960
    assert _flops(_MatMul(), torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)) == 960
    # the real GEMM of the same shape stays 2 * m * k * n = 240
    assert _flops(_MatMul(), torch.randn(m, k), torch.randn(k, n)) == 240


def test_complex_batched_matvec_and_outer():
    # bmm [3, 4, 6] x [3, 6, 5]: 8 * 3 * 4 * 6 * 5 = 2,880
    a, b = torch.randn(3, 4, 6, dtype=torch.complex64), torch.randn(3, 6, 5, dtype=torch.complex64)
    assert _flops(_MatMul(), a, b) == 2_880
    # matrix-vector [4, 6] x [6]: 8 * 4 * 6 = 192
    assert _flops(_MatMul(), torch.randn(4, 6, dtype=torch.complex64), torch.randn(6, dtype=torch.complex64)) == 192
    # outer [4] x [5]: 20 complex products, 6 real FLOPs each (4 muls, 2 adds) = 120
    assert _flops(_Outer(), torch.randn(4, dtype=torch.complex64), torch.randn(5, dtype=torch.complex64)) == 120
