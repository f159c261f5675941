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


class PolarRope(torch.nn.Module):
    """A complex rotary embedding built with torch.polar (Llama's precompute_freqs_cis)."""

    def forward(self, x, angles):
        cis = torch.polar(torch.ones_like(angles), angles)  # [S, D/2] complex
        z = torch.view_as_complex(x)  # [S, D/2]
        return torch.view_as_real(z * cis)


def test_polar_has_a_cost_rule():
    # x: (32, 8, 2) -> 256 complex elements; angles (32, 8).
    # ones_like: 0 FLOPs. polar: 256 x (cos, sin, 2 muls) = 1,024 FLOPs, reading 2 x 256 float32
    # (2,048 B) and writing 256 complex64 (2,048 B). z * cis: 256 x 6 = 1,536 FLOPs.
    x, angles = torch.randn(32, 8, 2), torch.randn(32, 8)
    costed = dfx.annotate(dfx.capture(PolarRope(), (x, angles)))
    assert not costed.unknown_ops
    polar = [n for n in costed.nodes if any(c.op.startswith("aten.polar") for c in n.node.aten_calls)]
    assert len(polar) == 1 and polar[0].cost.flops == 1024
    assert polar[0].cost.bytes_read == 2048 and polar[0].cost.bytes_written == 2048
    assert costed.total.flops == 1024 + 1536
