"""--gqa-kv-reads: a decode attention that reads each KV head's cache once per query head."""

import pytest

import dfx
from dfx.arch.gpu.plan import kernel_shape
from dfx.errors import DfxError
from dfx.inference.kv_reads import KVReads, parse_kv_reads

# llama3-8b-layer: 32 query heads, 8 KV heads of 128 -> g = 4 query heads per KV head.
B, S, NKV, HS, G = 2, 16, 8, 128, 4
K_CACHE_BF16 = B * NKV * S * HS * 2  # one layer's K (or V) cache: 2 * 8 * 16 * 128 * 2 B = 65,536 B


def _decode(model="llama3-8b-layer", **kw):
    return dfx.analyze(model, hardware=[], phase="decode", batch=B, kv_len=S, **kw)


def _cache_matmuls(r):
    """The attention matmuls over the cache: q @ K_cache^T (B, nkv, g, S) and p @ V_cache (B, nkv, g, hs)."""
    return [
        n
        for n in r.costed.nodes
        if n.category.value == "matmul" and not n.node.params and n.node.outputs[0].shape[-1] in (S, HS)
    ]


def test_per_query_head_reads_the_cache_once_per_query_head():
    shared, per_head = _decode(), _decode(gqa_kv_reads="per-query-head")
    # K and V each read g = 4 times instead of once: + (4 - 1) * 65,536 B each = + 393,216 B a layer
    assert per_head.costed.total.bytes_read - shared.costed.total.bytes_read == (G - 1) * 2 * K_CACHE_BF16
    assert per_head.costed.total.flops == shared.costed.total.flops  # the same products, regrouped
    by_name = {n.name: n for n in shared.costed.nodes}
    grown = [n for n in per_head.costed.nodes if n.cost.bytes_read != by_name[n.name].cost.bytes_read]
    assert len(grown) == 2  # the two matmuls that read the cache, nothing else
    for n in grown:  # each: + 3 * 65,536 = 196,608 B
        assert n.cost.bytes_read - by_name[n.name].cost.bytes_read == (G - 1) * K_CACHE_BF16


def test_per_query_head_reads_at_the_kv_width():
    shared = _decode(kv_dtype="fp8")
    per_head = _decode(kv_dtype="fp8", gqa_kv_reads="per-query-head")
    # an fp8 cache is 1 byte an element: + 3 * 2 * 65,536 / 2 = 196,608 B
    assert per_head.costed.total.bytes_read - shared.costed.total.bytes_read == (G - 1) * 2 * K_CACHE_BF16 // 2


def test_mha_is_unchanged():
    # llama-layer (Llama-2-7B): 32 query heads, 32 KV heads: g = 1, one read either way
    shared, per_head = _decode("llama-layer"), _decode("llama-layer", gqa_kv_reads="per-query-head")
    assert per_head.costed.total == shared.costed.total


def test_the_gpu_gemm_is_one_per_query_head():
    per_head = _decode(gqa_kv_reads="per-query-head")
    shapes = sorted(kernel_shape("gemm", [n])[1][0][:4] for n in _cache_matmuls(per_head) if n.cost.flops > 2**16)
    # shared: (M, K, N, batch) = (4, 128, 16, 16) and (4, 16, 128, 16): g = 4 rows per (sequence, KV head);
    # per query head: 1 row per (sequence, query head), batch 2 * 8 * 4 = 64
    assert shapes == [(1, 16, 128, 64), (1, 128, 16, 64)]


def test_per_query_head_costs_time_where_the_cache_is_large():
    kw = dict(hardware=["nvidia-h100-sxm"], phase="decode", batch=8, kv_len=4096)
    shared = dfx.analyze("llama3-8b-layer", **kw).inference.profiles[0].tpot_s
    per_head = dfx.analyze("llama3-8b-layer", gqa_kv_reads="per-query-head", **kw).inference.profiles[0].tpot_s
    assert per_head > 1.5 * shared  # the cache (8 * 8 * 4096 * 128 * 2 * 2 B = 134 MB) is most of the step


def test_bad_values_are_refused_before_capture():
    assert parse_kv_reads("shared") is KVReads.SHARED and parse_kv_reads(None) is None
    with pytest.raises(DfxError, match="per-query-head"):
        parse_kv_reads("per-head")
    with pytest.raises(DfxError, match="phase"):
        dfx.analyze("llama3-8b-layer", hardware=[], gqa_kv_reads="per-query-head")
