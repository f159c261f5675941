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
