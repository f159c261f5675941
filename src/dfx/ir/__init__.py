"""The torch-free intermediate representation: tensor specs, nodes and graphs."""

from dfx.ir.graph import ArgValue, AtenCall, Edge, Graph, Node, ParameterInfo
from dfx.ir.spec import DTYPE_ITEMSIZE_BYTES, TensorSpec, itemsize_bytes, normalize_dtype

__all__ = [
    "ArgValue",
    "AtenCall",
    "DTYPE_ITEMSIZE_BYTES",
    "Edge",
    "Graph",
    "Node",
    "ParameterInfo",
    "TensorSpec",
    "itemsize_bytes",
    "normalize_dtype",
]
