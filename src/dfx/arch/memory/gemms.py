"""The matmuls of a costed graph as :class:`~dfx.arch.memory.tiling.Gemm` records.

Read from each matmul node's aten calls: ``mm`` ``[M,K] @ [K,N]``, ``addmm`` (bias, A, B),
``bmm`` ``[b,M,K] @ [b,K,N]`` and ``baddbmm`` (bias, A, B). Attention decomposed by SDPA's math
backend shows its two bmm calls (QK^T and PV) this way. Convolutions are not tiled here.
"""

from __future__ import annotations

from dfx.arch.memory.tiling import Gemm
from dfx.costs.record import CostedGraph
from dfx.ir import AtenCall, TensorSpec

__all__ = ["gemm_of_call", "gemms"]

# aten op -> index of the A operand among the call's tensor inputs (B follows it)
_OPERAND_A = {"aten.mm.default": 0, "aten.addmm.default": 1, "aten.bmm.default": 0, "aten.baddbmm.default": 1}


def gemm_of_call(call: AtenCall, name: str) -> Gemm | None:
    """The GEMM one aten call performs, or ``None`` if it is not a (batched) matrix product."""
    first = _OPERAND_A.get(call.op)
    if first is None:
        return None
    inputs = call.inputs
    if len(inputs) < first + 2:
        return None
    a, b = inputs[first], inputs[first + 1]
    return _gemm(a, b, name)


def _gemm(a: TensorSpec, b: TensorSpec, name: str) -> Gemm | None:
    if a.ndim == 2 and b.ndim == 2:  # [M, K] @ [K, N]
        return Gemm(a.shape[0], a.shape[1], b.shape[1], a.itemsize, 1, name)
    if a.ndim == 3 and b.ndim == 3:  # [b, M, K] @ [b, K, N]
        return Gemm(a.shape[1], a.shape[2], b.shape[2], a.itemsize, a.shape[0], name)
    return None


def gemms(costed: CostedGraph) -> list[Gemm]:
    """Every matrix product in ``costed``, named by node (``node#i`` when a node has several)."""
    out = []
    for cn in costed.nodes:
        if cn.category.value != "matmul":
            continue
        found = [g for c in cn.node.aten_calls if (g := gemm_of_call(c, cn.name)) is not None]
        for i, g in enumerate(found):
            out.append(g if len(found) == 1 else Gemm(g.m, g.k, g.n, g.elem_bytes, g.batch, f"{cn.name}#{i}"))
    return out
