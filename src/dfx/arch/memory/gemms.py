"""The matmuls of a costed graph as :class:`~dfx.arch.memory.tiling.Gemm` records.

The GEMMs are read from each matmul node's aten calls by the one reader dfx has,
:func:`dfx.arch.systolic.nodes.call_gemms`: ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``,
``linear``, forward convolutions (im2col: ``M = B * prod(out_spatial)``, ``K = C_in/G * prod(k)``,
``N = C_out/G``, ``G`` groups as the batch) and attention (``Q K^T`` then ``P V``, whatever backend).
The element size is that of the call's first operand.
"""

from __future__ import annotations

from dfx.arch.memory.tiling import Gemm
from dfx.arch.systolic.nodes import call_gemms
from dfx.costs.record import Category, CostedGraph

__all__ = ["gemms"]


def gemms(costed: CostedGraph) -> list[Gemm]:
    """Every matrix product in ``costed``, named by node (``node#i`` when a node has several)."""
    out = []
    for cn in costed.nodes:
        if cn.category is not Category.MATMUL:
            continue
        found = [
            Gemm(g.m, g.k, g.n, call.inputs[0].itemsize, g.batch, cn.name)
            for call in cn.node.aten_calls
            if call.inputs
            for g in call_gemms(call)
        ]
        for i, g in enumerate(found):
            out.append(g if len(found) == 1 else Gemm(g.m, g.k, g.n, g.elem_bytes, g.batch, f"{cn.name}#{i}"))
    return out
