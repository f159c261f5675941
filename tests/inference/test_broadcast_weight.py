"""Batched decode: the attention output projection (o_proj) is timed as the GEMM it is.

In dfx's Llama decode step, o_proj's input is the attention output after its transpose (stride
``[4096, 128, 1]``), so torch's matmul does not fold it and the trace records ``expand`` + ``bmm``
with the weight broadcast over the batch (stride 0), where q_proj records ``mm``. Both are one
``[B, 4096] @ [4096, 4096]`` GEMM: the same 2 * B * 4096 * 4096 FLOPs and the same bytes (the weight,
32 MiB in bf16, once; input and output B * 4096 * 2 bytes each), so every model that times a GEMM
from its shape must give the two nodes the same time.
"""

import pytest

from dfx.analysis import analyze
from dfx.arch.gpu.plan import _gemm_dims
from dfx.arch.systolic.nodes import Gemm, node_gemms
from dfx.compile.tiling import gemm_of

HIDDEN = 4096  # llama-layer: Llama-2-7B's hidden size, 32 heads of 128
GPUS_AND_TPUS = ["h100", "a100", "tpu-v4", "tpu-v5e"]


def _decode(batch: int, hardware, execution_model: str):
    return analyze(
        "llama-layer",
        phase="decode",
        kv_len=16,
        batch=batch,
        dtype="bf16",
        hardware=hardware,
        execution_model=execution_model,
    )


@pytest.mark.parametrize("batch", [8, 64])
def test_o_proj_is_traced_as_a_broadcast_bmm(batch):
    costed = _decode(batch, [], "compiled").costed
    q, o = costed["linear"], costed["linear_3"]
    assert q.node.module_path.endswith("q_proj") and o.node.module_path.endswith("o_proj")
    assert "aten.mm.default" in [c.op for c in q.node.aten_calls]
    bmm = next(c for c in o.node.aten_calls if c.op == "aten.bmm.default")
    assert bmm.args[1].stride[0] == 0  # the weight, expanded over the batch
    flops = 2 * batch * HIDDEN * HIDDEN  # [B, 4096] @ [4096, 4096]
    assert q.cost.flops == o.cost.flops == flops
    assert q.cost.bytes == o.cost.bytes == 2 * (HIDDEN * HIDDEN + 2 * batch * HIDDEN)  # bf16: W + x + y
    # every shape extraction sees one [B, 4096] @ [4096, 4096]
    assert node_gemms(o.node.aten_calls) == node_gemms(q.node.aten_calls) == [Gemm(batch, HIDDEN, HIDDEN, 1)]
    assert _gemm_dims(o)[:4] == _gemm_dims(q)[:4] == (batch, HIDDEN, HIDDEN, 1)  # (M, K, N, batch)
    go, gq = gemm_of(o), gemm_of(q)
    assert (go.m, go.k, go.n, go.batch) == (gq.m, gq.k, gq.n, gq.batch) == (batch, HIDDEN, HIDDEN, 1)


@pytest.mark.parametrize("batch", [8, 64])
def test_o_proj_takes_q_projs_time_one_kernel_per_node(batch):
    # eager: each node its own kernel, so nothing fused into o_proj (compiled fuses the residual add)
    for result in _decode(batch, GPUS_AND_TPUS, "eager").hardware:
        t = {n.name: n for n in result.nodes}
        assert t["linear_3"].time_s == pytest.approx(t["linear"].time_s, rel=1e-12), result.profile.id


@pytest.mark.parametrize("batch", [8, 64])
def test_o_proj_takes_q_projs_time_compiled(batch):
    for result in _decode(batch, ["h100", "a100", "tpu-v5e", "groq"], "compiled").hardware:
        t = {n.name: n for n in result.nodes}
        q, o = t["linear"], t["linear_3"]
        # compiled, o_proj's kernel also carries the residual add (TPU) and Groq a chip crossing: the
        # GEMM's own compute (MXU / MXM / tensor-core time) is what must match; on a GPU the whole time
        assert o.compute_time_s == pytest.approx(q.compute_time_s, rel=1e-12), result.profile.id
        if result.profile.id.startswith("nvidia"):
            assert o.time_s == pytest.approx(q.time_s, rel=1e-12), result.profile.id
