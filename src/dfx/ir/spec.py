"""Tensor specifications: shape, dtype and strides, never data.

A :class:`TensorSpec` is what a cost rule reads. It is plain Python (no torch), so a saved graph can
be costed without torch installed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

__all__ = ["DTYPE_ITEMSIZE_BYTES", "InputShape", "TensorSpec", "itemsize_bytes", "normalize_dtype"]

# Bytes per element of every dtype dfx knows, keyed by torch's own dtype name (``str(torch.float32)``
# without the ``torch.`` prefix). Sub-byte types are rounded up to the byte they are stored in
# unpacked; packed int4 tensors appear to torch as uint8 anyway.
DTYPE_ITEMSIZE_BYTES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float4_e2m1fn_x2": 1,  # torch's FP4 E2M1, two elements packed in a byte (the B200's fp4 peak key)
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,  # torch.chalf: two float16s, what an fp16 FFT returns
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
}

# Short names users type on the command line, mapped to torch's names: dfx's one alias table (the
# capture, the precision formats of dfx.costs.precision and the model builders all read it).
DTYPE_ALIASES: dict[str, str] = {
    "fp64": "float64",
    "f64": "float64",
    "double": "float64",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp8": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "int": "int32",
    "long": "int64",
}


@lru_cache(maxsize=256)  # a pure function of a short string, asked once per node and profile
def normalize_dtype(name: str) -> str:
    """Return torch's name for a dtype given as ``"bf16"``, ``"torch.bfloat16"`` or ``"bfloat16"``.

    Raises
    ------
    ValueError
        If the name is not a dtype dfx knows; the message lists the known names.
    """
    key = name.strip().lower().removeprefix("torch.")
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_ITEMSIZE_BYTES:
        known = ", ".join(sorted(set(DTYPE_ALIASES) | set(DTYPE_ITEMSIZE_BYTES)))
        raise ValueError(f"unknown dtype {name!r}; expected one of: {known}")
    return key


class InputShape(tuple):
    """A file model's input shape and the dtype of the input made for it (``--input-shape 4,128:int64``).

    A ``tuple`` of ints, so wherever a shape is expected it is one; ``dtype`` is a normalized dtype
    name, or ``None`` for the model's float dtype. An integer dtype makes token ids (zeros).

    >>> s = InputShape((4, 128), "int64")
    >>> s, s.dtype
    ((4, 128), 'int64')
    """

    dtype: str | None

    def __new__(cls, dims: Any, dtype: str | None = None) -> InputShape:
        obj = super().__new__(cls, dims)
        obj.dtype = None if dtype is None else normalize_dtype(dtype)
        return obj

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (tuple(self), self.dtype)


def itemsize_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (a name accepted by :func:`normalize_dtype`)."""
    return DTYPE_ITEMSIZE_BYTES[normalize_dtype(dtype)]


@dataclass(frozen=True)
class TensorSpec:
    """The static description of one tensor.

    Parameters
    ----------
    shape : tuple of int
        Sizes per dimension; ``()`` for a 0-d tensor.
    dtype : str
        torch's dtype name, e.g. ``"float32"`` or ``"bfloat16"``.
    stride : tuple of int, optional
        Strides in elements, as torch reports them; ``None`` when unknown.

    Examples
    --------
    >>> TensorSpec((2048, 4096), "float32").nbytes
    33554432
    """

    shape: tuple[int, ...]
    dtype: str
    stride: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        if self.stride is not None:
            object.__setattr__(self, "stride", tuple(int(s) for s in self.stride))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @cached_property  # the spec is frozen; every pass and profile asks it again
    def numel(self) -> int:
        """Number of elements: the product of the shape (1 for a 0-d tensor)."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return DTYPE_ITEMSIZE_BYTES[self.dtype]

    @cached_property
    def nbytes(self) -> int:
        """Bytes of the tensor's elements: ``numel * itemsize`` (a view's storage is not counted)."""
        return self.numel * self.itemsize

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        if self.stride is not None:
            out["stride"] = list(self.stride)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorSpec:
        """The spec ``to_dict`` wrote. Equal dicts give one shared instance (specs are frozen): a graph
        file repeats each tensor in its producer's outputs and in every aten call that reads it."""
        stride = data.get("stride")
        key = (cls, tuple(data["shape"]), data["dtype"], tuple(stride) if stride is not None else None)
        spec = _READ.get(key)
        if spec is None:
            if len(_READ) >= _READ_MAX:
                _READ.clear()
            spec = _READ[key] = cls(*key[1:])
        return spec

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


# TensorSpec.from_dict's shared instances, keyed by the dict's values; bounded (cleared when full)
_READ: dict[tuple[Any, ...], TensorSpec] = {}
_READ_MAX = 1 << 16
