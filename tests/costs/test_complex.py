"""Pointwise work on complex tensors counts real FLOPs (complex RoPE multiplies rotations)."""

import torch

import dfx


class ComplexRotate(torch.nn.Module):
    def forward(self, a, b):
        za, zb = torch.view_as_complex(a), torch.view_as_complex(b)
        return torch.view_as_real(za * zb + za)


def test_complex_multiply_and_add():
    # a, b: (16, 8, 2) real pairs -> 128 complex elements each.
    # za * zb: 128 * (4 muls + 2 adds) = 768 FLOPs; + za: 128 * 2 = 256 FLOPs. Total 1,024.
    a = torch.randn(16, 8, 2)
    costed = dfx.annotate(dfx.capture(ComplexRotate(), (a, a.clone())))
    assert costed.total.flops == 768 + 256
