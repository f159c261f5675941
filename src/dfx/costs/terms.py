"""Small formulas the cost rules are built from: contractions, broadcasting, bytes of specs.

Dimension letters used in every rule's shape comments:

    B batch (all leading batch/broadcast dims multiplied)   M, N output rows, columns
    K contracted dim   H heads   S sequence   D head dim   C channels   G groups

Everything here reads :class:`~dfx.ir.TensorSpec` shapes, never tensors, so it is torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

from dfx.costs.record import Cost
from dfx.ir import ArgValue, AtenCall, TensorSpec

__all__ = [
    "FMA_FLOPS",
    "broadcast_shapes",
    "contraction_flops",
    "gemm_operands",
    "gemm_shape",
    "input_specs",
    "io_cost",
    "numel",
    "out_numel",
    "read_bytes",
    "tensor_arg",
    "write_bytes",
]

# One multiply-accumulate is a multiply and an add: 2 FLOPs (FlopCounterMode, JAX `_FMA_FLOPS_FACTOR`).
# NB: like FlopCounterMode we count K adds per output, not K-1 (the accumulator starts at zero).
FMA_FLOPS = 2


def numel(shape: Iterable[int]) -> int:
    """Elements of a shape; 1 for ``()``."""
    return math.prod(shape)


def contraction_flops(batch: int, m: int, k: int, n: int) -> int:
    """FLOPs of ``[B, M, K] x [B, K, N] -> [B, M, N]``: ``2*B*M*K*N`` (one MAC per (b, m, k, n))."""
    return FMA_FLOPS * batch * m * k * n


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The NumPy/PyTorch broadcast of ``shapes`` (right-aligned, size-1 dims stretch).

    Raises
    ------
    ValueError
        If two sizes differ and neither is 1.

    Examples
    --------
    >>> broadcast_shapes((2, 1, 4), (3, 1))
    (2, 3, 4)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size != 1 and out[i] not in (1, size):
                raise ValueError(f"shapes {list(map(tuple, shapes))} do not broadcast")
            out[i] = size if size != 1 else out[i]
    return tuple(out)


# aten op (its packet) -> positions of a contraction's two matrix operands (a: [.., M, K], b: [.., K, N])
_MATRIX_OPERANDS: dict[str, tuple[int, int]] = {
    "aten.mm": (0, 1),
    "aten._int_mm": (0, 1),
    "aten.bmm": (0, 1),
    "aten.matmul": (0, 1),
    "aten.mv": (0, 1),
    "aten.addmm": (1, 2),
    "aten._addmm_activation": (1, 2),
    "aten.baddbmm": (1, 2),
    "aten.addbmm": (1, 2),
    "aten.addmv": (1, 2),
}


def gemm_operands(call: AtenCall) -> tuple[TensorSpec, TensorSpec] | None:
    """The two matrix operands ``(a, b)`` of a mm/bmm/matmul-family call, or ``None`` (another op, or
    an operand that is not a tensor)."""
    positions = _MATRIX_OPERANDS.get(call.packet)
    if positions is None:
        return None
    a, b = (call.arg(i) for i in positions)
    return (a, b) if isinstance(a, TensorSpec) and isinstance(b, TensorSpec) else None


def _one_matrix(shape: tuple[int, ...], stride: tuple[int, ...] | None) -> bool:
    """Whether a ``[.., R, C]`` operand is one matrix for every batch entry: each leading dim has size 1
    or stride 0 (an ``expand``ed tensor; a missing stride counts as a real one)."""
    lead_strides = stride[:-2] if stride is not None and len(stride) == len(shape) else (None,) * (len(shape) - 2)
    return all(size == 1 or st == 0 for size, st in zip(shape[:-2], lead_strides))


def gemm_shape(a: TensorSpec, b: TensorSpec) -> tuple[int, int, int, int] | None:
    """``(M, K, N, batch)`` of ``a @ b`` as the machine runs it: ``batch`` products ``[M, K] @ [K, N]``.

    ``a: [.., M, K]``, ``b: [.., K, N]``; a 1-D ``a`` is ``[1, K]``, a 1-D ``b`` ``[K, 1]``; leading dims
    broadcast into ``batch``. An operand that is one matrix for the whole batch (every leading dim of size
    1 or stride 0: the weight ``expand``ed by torch's matmul, ``aten.expand`` + ``aten.bmm``) folds the
    batch into the other operand: one GEMM ``[B*M, K] @ [K, N]`` (``b`` shared) or ``[M, K] @ [K, B*N]``
    (``a`` shared: the product transposed, ``(b^T a^T)^T``). ``2*B*M*K*N`` FLOPs either way. ``None`` when
    the inner dims differ or the batches do not broadcast.

    Sources: torch's own matmul runs ``[B, M, K] @ [K, N]`` as one ``mm`` of ``[B*M, K]`` whenever the
    fold is a view ("use mm instead of bmm by folding the batch of the larger tensor into its leading
    matrix dimension": ``matmul``/``should_fold`` in torch/_decomp/decompositions.py, torch 2.13, and
    aten/src/ATen/native/LinearAlgebra.cpp); XLA's ``dot_general`` keeps an operand's non-contracting
    dims that are not batch dims as free dims of one dot, so a broadcast weight is one GEMM there too.
    NB: torch traces ``expand`` + ``bmm`` where the rows of ``a`` are not one view (the attention
    output after its transpose, stride ``[H*D, D, 1]``); a batched GEMM with a stride-0 ``b`` reads the
    same weight for every entry, which is what folding models.

    Examples
    --------
    >>> x = TensorSpec((8, 1, 4096), "bfloat16", (4096, 128, 1))  # o_proj's input in batched decode
    >>> w = TensorSpec((8, 4096, 4096), "bfloat16", (0, 1, 4096))  # weight.t().expand(8, -1, -1)
    >>> gemm_shape(x, w)  # one [8, 4096] @ [4096, 4096]
    (8, 4096, 4096, 1)
    >>> gemm_shape(x, TensorSpec((8, 4096, 4096), "bfloat16"))  # 8 distinct weights: a real batch
    (1, 4096, 4096, 8)
    >>> gemm_shape(TensorSpec((4, 32), "float32"), TensorSpec((3, 32, 16), "float32"))  # a shared
    (4, 32, 48, 1)
    """
    sa = (1, *a.shape) if len(a.shape) == 1 else tuple(a.shape)  # [K] -> [1, K]
    sb = (*b.shape, 1) if len(b.shape) == 1 else tuple(b.shape)  # [K] -> [K, 1]
    if sa[-1] != sb[-2]:
        return None
    m, k, n = sa[-2], sa[-1], sb[-1]
    try:
        batch = numel(broadcast_shapes(sa[:-2], sb[:-2]))  # B = broadcast(a[:-2], b[:-2])
    except ValueError:
        return None
    if batch == 1:
        return m, k, n, 1
    if _one_matrix(sb, b.stride if len(b.shape) > 1 else None):
        return batch * m, k, n, 1  # [B*M, K] @ [K, N]
    if _one_matrix(sa, a.stride if len(a.shape) > 1 else None):
        return m, k, batch * n, 1  # [M, K] @ [K, B*N]
    return m, k, n, batch


def read_bytes(spec: TensorSpec) -> int:
    """Bytes an op reads from ``spec``: its distinct elements times its itemsize.

    A broadcast (``expand``-ed) view has stride 0 along its stretched dims; those elements are one
    element read many times, so they are counted once. Without strides every element counts.
    """
    try:  # kept on the spec (frozen; read graphs share their specs): costing reads it per call
        return spec.__dict__["_read_bytes"]
    except KeyError:
        pass
    if spec.stride is None or len(spec.stride) != len(spec.shape) or spec.numel == 0:
        out = spec.nbytes
    else:
        out = numel(size for size, stride in zip(spec.shape, spec.stride) if stride != 0) * spec.itemsize
    spec.__dict__["_read_bytes"] = out
    return out


def write_bytes(spec: TensorSpec) -> int:
    """Bytes an op writes to ``spec``: every element once."""
    return spec.nbytes


def _is_output_kwarg(name: str) -> bool:
    # out=, out0=..out3= of `.out` overloads are written, not read.
    return name == "out" or (name.startswith("out") and name[3:].isdigit())


def _tensors(value: ArgValue) -> Iterator[TensorSpec]:
    if isinstance(value, TensorSpec):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _tensors(v)


def input_specs(call: AtenCall) -> tuple[TensorSpec, ...]:
    """Tensors the call reads: every tensor argument (lists flattened) except ``out=`` buffers."""
    specs = [t for a in call.args for t in _tensors(a)]
    specs += [t for k, v in call.kwargs if not _is_output_kwarg(k) for t in _tensors(v)]
    return tuple(specs)


def io_cost(
    call: AtenCall,
    flops: int = 0,
    *,
    reads: Iterable[TensorSpec] | None = None,
    writes: Iterable[TensorSpec] | None = None,
) -> Cost:
    """``Cost(flops, bytes read, bytes written)`` of ``call``.

    By default the call reads every tensor argument (each at its own dtype, broadcast views once)
    and writes every output; pass ``reads``/``writes`` to override either side.
    """
    reads = input_specs(call) if reads is None else reads
    writes = call.outputs if writes is None else writes
    return Cost(flops, sum(read_bytes(s) for s in reads), sum(write_bytes(s) for s in writes))


def tensor_arg(call: AtenCall, index: int, name: str | None = None) -> TensorSpec | None:
    """Argument ``index`` (or keyword ``name``) if it is a tensor, else ``None``."""
    value = call.arg(index, name)
    return value if isinstance(value, TensorSpec) else None


def out_numel(call: AtenCall) -> int:
    """Elements of the call's first output, or of the broadcast of its tensor inputs if it has none."""
    if call.outputs:
        return call.outputs[0].numel
    return numel(broadcast_shapes(*(s.shape for s in input_specs(call))))
