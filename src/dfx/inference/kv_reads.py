"""How a decode attention kernel reads a GQA/MQA KV cache: once per KV head, or once per query head.

A decode step's attention (:func:`dfx.models.kv.attend_with_cache`) multiplies the ``g = nh / nkv``
query heads of each KV head as the rows of one matmul, so each KV head's K and V are read once per
step: what a grouped decode kernel does (TensorRT-LLM's XQA, FlashInfer's and vLLM's GQA decode,
FlashAttention's ``flash_attn_with_kvcache``). That is ``shared``, the default.

``per-query-head`` is the older kernel: one thread block per (sequence, query head), each reading
its KV head's cache: TensorRT-LLM's masked multi-head attention (MMHA), which indexes
``hi_kv = hi / qhead_per_kv`` with ``blockIdx.x`` the query head
(``decoderMaskedMultiheadAttentionTemplate.h``). Its CHANGELOG lists "MMHA optimization for MQA and
GQA" and "FP8 KV cache support for XQA kernel" (XQA: its grouped kernel) as new in 0.7.0, so v0.6.1
ran a GQA model's fp8 cache through MMHA. Each KV head's cache then crosses HBM ``g`` times a
step: the cache-reading matmul of the step becomes ``g`` matmuls of ``T`` rows (one per query head),
each reading the cache operand, so its KV-cache bytes read grow ``g`` times and its FLOPs do not
change. MHA (``g = 1``) is unchanged either way.

NB: ``g`` is read from the matmul itself: its output's rows per KV head (second-last dimension,
``g * T``) over the step's ``T`` new tokens. Reuse of the cache in L2 across the ``g`` blocks is not
modelled: that is the option's point (docs/inference.md, 'GQA KV reads').
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable

from dfx.costs.precision import PrecisionNode, cache_read_bytes
from dfx.costs.record import Category, CostedGraph, CostedNode
from dfx.errors import DfxError

__all__ = ["KVReads", "KVReadNode", "apply_kv_reads", "parse_kv_reads"]


class KVReads(str, Enum):
    """Whether the query heads of a KV-head group share its cache reads (``--gqa-kv-reads``)."""

    SHARED = "shared"  # one read per KV head: a grouped decode kernel (XQA, FlashInfer, FlashAttention)
    PER_QUERY_HEAD = "per-query-head"  # one read per query head: one thread block per (sequence, query head)


def parse_kv_reads(text: str | KVReads | None) -> KVReads | None:
    """``--gqa-kv-reads`` as a :class:`KVReads`; ``None`` stays ``None`` (the default, ``shared``).

    Raises
    ------
    DfxError
        A name other than ``shared`` or ``per-query-head``.

    Examples
    --------
    >>> parse_kv_reads("per-query-head")
    <KVReads.PER_QUERY_HEAD: 'per-query-head'>
    """
    if text is None or isinstance(text, KVReads):
        return text
    try:
        return KVReads(text)
    except ValueError:
        raise DfxError(
            f"unknown --gqa-kv-reads {text!r}; expected shared (a grouped decode kernel, the default) "
            "or per-query-head (one read of a KV head's cache per query head: docs/inference.md)"
        ) from None


@dataclass(frozen=True)
class KVReadNode(PrecisionNode):
    """A cache-reading matmul whose KV-cache operand is read ``kv_reads`` times (once per query head).

    The GPU GEMM model (:func:`dfx.arch.gpu.plan.kernel_shape`) splits its rows into ``kv_reads``
    GEMMs of the batch, each reading the whole B operand (the cache).
    """

    kv_reads: int = 1


def apply_kv_reads(
    costed: CostedGraph, reads: KVReads | None, tokens: int, is_cache: Callable[[str], bool]
) -> CostedGraph:
    """``costed`` (a decode step, after :func:`dfx.costs.precision.apply_precision`) with its KV-cache reads
    as ``reads`` says: unchanged for ``shared`` (or ``None``); ``g`` reads of the cache operand of
    each cache-reading matmul for ``per-query-head``.

    Parameters
    ----------
    costed : CostedGraph
        A step's costs at its storage widths (``meta["precision"]``, when present, gives the KV width).
    reads : KVReads or None
    tokens : int
        New tokens per sequence in the step (1 in a decode step): ``g = rows / tokens``.
    is_cache : callable
        ``is_cache(placeholder_name)``: which graph inputs are the KV cache.

    Returns
    -------
    CostedGraph
        Each cache-reading matmul with ``g > 1`` as a :class:`KVReadNode`: bytes read
        ``+ (g - 1) * cache bytes at the KV width``; FLOPs and bytes written unchanged.
    """
    if reads is not KVReads.PER_QUERY_HEAD:
        return costed
    precision = costed.meta["precision"] if "precision" in costed.meta else None  # none: identity precision
    kv_ratio = precision.ratios()[2] if precision is not None else 1.0
    cache_bytes = cache_read_bytes(costed, is_cache)
    nodes = []
    for cn in costed.nodes:
        kv_bytes = cache_bytes.get(cn.name, 0)
        g = _group(cn, tokens) if kv_bytes and cn.category is Category.MATMUL else 1
        if g <= 1:
            nodes.append(cn)
            continue
        extra = math.ceil((g - 1) * kv_bytes * kv_ratio)  # the g - 1 further reads of the cache operand
        nodes.append(
            KVReadNode(
                cn.node,
                replace(cn.cost, bytes_read=cn.cost.bytes_read + extra),
                cn.category,
                cn.flops_by_category,
                cn.unknown_ops,
                cn.calls,
                getattr(cn, "compute_dtype", None),
                getattr(cn, "b_operand_bits", None),
                g,
            )
        )
    return replace(costed, nodes=tuple(nodes))


def _group(cn: CostedNode, tokens: int) -> int:
    """Query heads per KV head of a cache-reading matmul: output rows ``g * T`` over ``T``; 1 when unclear."""
    shape = cn.node.outputs[0].shape if cn.node.outputs else ()
    if len(shape) < 2 or tokens < 1 or shape[-2] % tokens:
        return 1
    return shape[-2] // tokens
