"""Weight, activation and KV-cache precision: a costed graph's bytes at other widths.

A model is captured in a float dtype torch can build (bf16, fp16, fp32). :func:`apply_precision`
re-prices the traffic of each node as if its weights, its KV-cache reads and its activations were
stored at the widths a :class:`Precision` names (int4 weights, an fp8 cache, fp8 activations), and
runs the matmuls of fp8/int8/fp4 activations on that dtype's peak. FLOPs do not change.

Widths come from one typed table, :data:`STORAGE_BITS`; names are looked up in it (with the
aliases of :data:`_ALIASES`), never parsed.

Where the bytes of a node come from (NB: the approximations):

- weights: the parameters a **matmul** node reads (every ``nn.Linear``, conv, LM head: weight and
  bias), whole, once per node. Norm scales and embedding rows count as activations: they are a
  negligible part of the traffic, and an embedding reads only the rows it gathers.
- KV cache: the node's inputs that are a cache input of the graph, directly or through views
  (``dfx.inference.steps.cache_inputs``).
- activations: the rest, and everything written; scaled only when the activation width differs
  from the capture width (an fp32 norm upcast inside a bf16 model is scaled by the same ratio).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

from dfx.costs.record import STORED_WIDTHS, Category, Cost, CostedGraph, CostedNode
from dfx.errors import DfxError
from dfx.ir.spec import DTYPE_ALIASES

__all__ = [
    "STORAGE_BITS",
    "STORED_META",
    "Precision",
    "PrecisionNode",
    "apply_precision",
    "bytes_per_element",
    "cache_read_bytes",
    "storage_name",
]

# Bits per stored element, by canonical name. int4 is a packed 4-bit integer (two per byte, as
# GPTQ/AWQ kernels store weights); fp8 is OCP FP8 E4M3 unless E5M2 is named. The fp4 formats are
# FP4 E2M1 elements with their block scales priced as the bytes they take:
# - nvfp4 (what "fp4" means: the B200's native format): one FP8 E4M3 scale per 16 elements,
#   4 + 8/16 = 4.5 bits (NVIDIA, "Introducing NVFP4", developer blog 2025; the one FP32 scale per
#   tensor is left out: a few bytes);
# - mxfp4: one 8-bit E8M0 scale per 32 elements, 4 + 8/32 = 4.25 bits (OCP Microscaling Formats
#   (MX) Specification v1.0, 2023, MXFP4: block size 32, E8M0 scale).
_NVFP4_BLOCK, _MXFP4_BLOCK, _SCALE_BITS, _FP4_BITS = 16, 32, 8, 4
STORAGE_BITS: dict[str, float] = {
    "float32": 32,
    "bfloat16": 16,
    "float16": 16,
    "float8_e4m3fn": 8,
    "float8_e5m2": 8,
    "int8": 8,
    "int4": 4,
    "nvfp4": _FP4_BITS + _SCALE_BITS / _NVFP4_BLOCK,  # 4.5
    "mxfp4": _FP4_BITS + _SCALE_BITS / _MXFP4_BLOCK,  # 4.25
}
# The dtype a format's matmuls run in, where it is not the format's own name (the peak's key).
_COMPUTE_DTYPE = {"nvfp4": "float4_e2m1fn_x2", "mxfp4": "float4_e2m1fn_x2"}

# The formats that are not torch dtypes, by the other names they go by (torch's names and the short ones
# are dfx.ir.spec.DTYPE_ALIASES, the one table every dtype name goes through first).
_FORMAT_ALIASES: dict[str, str] = {"fp4": "nvfp4", "float4_e2m1fn_x2": "nvfp4"}

# The key of a re-priced graph's meta holding its stored footprint (apply_precision; CostedGraph reads it).
STORED_META = STORED_WIDTHS

# Formats a model can be built and captured in (the others are re-priced from a bf16 capture).
CAPTURE_DTYPES = ("float32", "bfloat16", "float16")
_CARRIER = "bfloat16"  # what an fp8/int8 activation model is captured in before re-pricing


def storage_name(name: str, what: str = "dtype") -> str:
    """The canonical name of a storage format (``"bf16"`` -> ``"bfloat16"``).

    Raises
    ------
    DfxError
        Naming the value and the accepted names.
    """
    key = str(name).strip().lower().removeprefix("torch.")
    key = _FORMAT_ALIASES.get(key, DTYPE_ALIASES.get(key, key))
    if key not in STORAGE_BITS:
        raise DfxError(f"unknown {what} {name!r}; expected one of bf16, fp16, fp32, fp8, int8, int4, fp4, mxfp4")
    return key


def bytes_per_element(name: str) -> float:
    """Bytes per element of a format: ``bits / 8`` (0.5 for int4; fp4's block scales included).

    Examples
    --------
    >>> bytes_per_element("int4"), bytes_per_element("bf16")
    (0.5, 2.0)
    >>> bytes_per_element("fp4"), bytes_per_element("mxfp4")   # (4 + 8/16) / 8, (4 + 8/32) / 8
    (0.5625, 0.53125)
    """
    return STORAGE_BITS[storage_name(name)] / 8


@dataclass(frozen=True)
class PrecisionNode(CostedNode):
    """A costed node re-priced by :func:`apply_precision`; ``dtype`` is the dtype it computes in.

    ``b_operand_bits``: a matmul's weight operand as stored, ``--weight-dtype``'s bits (or, for one
    that reads the KV cache, ``--kv-dtype``'s); ``None`` for the other nodes. A GPU GEMM reads that
    operand at this width and computes in ``dtype`` (weight-only quantisation: dequantised after the
    load; :func:`dfx.arch.gpu.plan.kernel_shape`).
    """

    compute_dtype: str | None = None
    b_operand_bits: float | None = None

    @property
    def dtype(self) -> str | None:  # type: ignore[override]
        return self.compute_dtype or super().dtype


@dataclass(frozen=True)
class Precision:
    """Storage widths of weights, activations and the KV cache, and the dtype the graph is captured in.

    Build it with :meth:`Precision.of`, which fills the defaults (weights and cache at the
    activation width) and picks the capture dtype.
    """

    activation: str
    weight: str
    kv: str
    capture: str

    @classmethod
    def of(cls, activation: str, weight: str | None = None, kv: str | None = None) -> Precision:
        """Canonical names; ``weight`` and ``kv`` default to ``activation``.

        Raises
        ------
        DfxError
            An unknown name, or int4 activations (no machine dfx models computes in int4).
        """
        act = storage_name(activation, "--dtype")
        if act == "int4":
            raise DfxError("int4 is a weight format; give --weight-dtype int4 with --dtype bf16 (or fp16)")
        # None is "as the activations"; "" (an unset shell variable) is refused by storage_name
        w = storage_name(weight, "--weight-dtype") if weight is not None else act
        k = storage_name(kv, "--kv-dtype") if kv is not None else act
        return cls(act, w, k, act if act in CAPTURE_DTYPES else _CARRIER)

    @property
    def is_identity(self) -> bool:
        return self.activation == self.weight == self.kv == self.capture

    @property
    def compute_dtype(self) -> str:
        """The dtype matmuls of these activations run in (its peak): ``float4_e2m1fn_x2`` for fp4."""
        return _COMPUTE_DTYPE.get(self.activation, self.activation)

    @property
    def kv_dtype(self) -> str:
        return self.kv

    def apply(self, costed: CostedGraph, is_cache: Callable[[str], bool] | None = None) -> CostedGraph:
        return apply_precision(costed, self, is_cache=is_cache)

    def ratios(self) -> tuple[float, float, float]:
        """Bytes at this precision over bytes as captured: activations, weights, KV cache."""
        return tuple(_ratio(x, self.capture) for x in (self.activation, self.weight, self.kv))

    def weight_bytes(self, costed: CostedGraph) -> int:
        """Footprint of the parameters at the weight width: ``ceil(count * bits / 8)`` (buffers left out)."""
        return math.ceil(costed.unique_parameter_count() * STORAGE_BITS[self.weight] / 8)

    def to_dict(self) -> dict[str, Any]:
        return {
            "activation": self.activation,
            "weight": self.weight,
            "kv_cache": self.kv,
            "captured_in": self.capture,
            "bits": {
                "activation": STORAGE_BITS[self.activation],
                "weight": STORAGE_BITS[self.weight],
                "kv_cache": STORAGE_BITS[self.kv],
            },
        }


def expert_weight_bytes(cn: CostedNode) -> int:
    """Bytes of expert weights a node's grouped GEMMs read (``rules_moe``), at the captured width; 0 for others.

    An MoE layer's expert weights reach its grouped GEMM through a transpose view, so they are not
    among the node's own ``params``: they are the call's reads beyond its activations.
    """
    from dfx.costs.moe import GROUPED_OPS
    from dfx.costs.rules_moe import grouped_mm_cost

    grouped = [c for c in cn.node.aten_calls if c.packet in GROUPED_OPS]
    costed_calls = [cc for cc in cn.calls if ".".join(cc.op.split(".")[:2]) in GROUPED_OPS]
    if not grouped or len(grouped) != len(costed_calls):
        return 0
    return sum(max(0, cc.cost.bytes_read - grouped_mm_cost(c, 0).bytes_read) for c, cc in zip(grouped, costed_calls))


def _ratio(to: str, captured: str) -> float:
    return STORAGE_BITS[to] / STORAGE_BITS[captured]


def apply_precision(
    costed: CostedGraph, precision: Precision, *, is_cache: Callable[[str], bool] | None = None
) -> CostedGraph:
    """``costed`` with its bytes at the widths of ``precision`` (FLOPs unchanged).

    Parameters
    ----------
    costed : CostedGraph
        Captured at ``precision.capture``.
    precision : Precision
    is_cache : callable, optional
        ``is_cache(placeholder_name)``: which graph inputs are the KV cache (default: none).

    Returns
    -------
    CostedGraph
        Nodes are :class:`PrecisionNode`; a matmul's ``dtype`` is the activation dtype (its peak).
        Its ``meta`` records the stored footprint (:data:`STORED_META`): the parameters' bits, so
        ``unique_parameter_bytes`` is the weights as stored; the user inputs' bytes as stored (the KV
        cache at ``kv``, other float inputs at the activation width); and the activation ratio, which
        scales the peak live activations. The fewest-chips choice and ``dfx capacity`` read them.
    """
    if precision.is_identity:
        return costed
    graph = costed.graph
    params = graph.parameter_index
    is_cache = is_cache or (lambda name: False)
    cache_bytes = cache_read_bytes(costed, is_cache)
    act = _ratio(precision.activation, precision.capture)
    wgt = _ratio(precision.weight, precision.capture)
    kv = _ratio(precision.kv, precision.capture)
    nodes = []
    for cn in costed.nodes:
        c = cn.cost
        is_mm = cn.category is Category.MATMUL
        w_bytes = sum(params[p].spec.nbytes for p in cn.node.params if params[p].kind == "parameter") if is_mm else 0
        w_bytes += expert_weight_bytes(cn) if is_mm else 0  # grouped expert GEMMs: weights through a view
        kv_bytes = cache_bytes.get(cn.name, 0)
        rest = max(c.bytes_read - w_bytes - kv_bytes, 0)
        read = math.ceil(rest * act + min(w_bytes, c.bytes_read) * wgt + kv_bytes * kv)
        cost = Cost(c.flops, read if c.bytes_read else 0, math.ceil(c.bytes_written * act))
        compute = precision.compute_dtype if is_mm and precision.activation != precision.capture else None
        stored = (precision.weight if w_bytes else precision.kv if kv_bytes else None) if is_mm else None
        nodes.append(
            PrecisionNode(
                cn.node,
                cost,
                cn.category,
                cn.flops_by_category,
                cn.unknown_ops,
                cn.calls,
                compute,
                None if stored is None else STORAGE_BITS[stored],
            )
        )
    meta = {
        **costed.meta,
        STORED_META: {
            "weight_bits": STORAGE_BITS[precision.weight],
            "input_bytes": _stored_input_bytes(graph, is_cache, act, kv),
            "activation_ratio": act,
        },
        "precision": precision,
    }
    return replace(costed, nodes=tuple(nodes), meta=meta)


def cache_read_bytes(costed: CostedGraph, is_cache: Callable[[str], bool]) -> dict[str, int]:
    """Bytes of the KV cache each node reads, as captured: its inputs that are a cache input of the
    graph, directly or through views; nodes that read none are left out (placeholders too)."""
    graph = costed.graph
    views = {n.name: n for n in costed.nodes if n.category is Category.VIEW}

    def from_cache(src: str) -> bool:
        while src in views and views[src].node.inputs:
            src = views[src].node.inputs[0].src
        node = graph.node(src)
        return node.op == "placeholder" and is_cache(node.name)

    out = {}
    for cn in costed.nodes:
        if cn.node.op == "placeholder":
            continue
        read = sum(graph.node(e.src).outputs[e.index].nbytes for e in cn.node.inputs if from_cache(e.src))
        if read:
            out[cn.name] = read
    return out


def _stored_input_bytes(graph: Any, is_cache: Callable[[str], bool], act: float, kv: float) -> int:
    """The user inputs' bytes as stored: cache inputs at ``kv`` x, other float inputs at ``act`` x, the
    rest (token ids) as captured."""
    total = 0
    for n in graph.nodes:
        if n.op != "placeholder" or n.input_kind in ("parameter", "buffer", "constant"):
            continue
        for o in n.outputs:
            ratio = kv if is_cache(n.name) else act if o.dtype.startswith(("float", "bfloat")) else 1
            total += math.ceil(o.nbytes * ratio)
    return total
