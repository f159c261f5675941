"""PB-14: a tied embedding / lm_head: parameters once, the lookup a gather (bytes, 0 FLOPs)."""

import pytest
import torch
import torch.nn as nn

from dfx.costs import Cost

from ._helpers import call, cost, costed, matmul_flops, spec

V, DIM, T = 50_000, 384, 16 * 256  # vocab, width, tokens (ids of shape (16, 256))


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, DIM)
        self.head = nn.Linear(DIM, V, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))


def _lookup(cg):
    (node,) = [n for n in cg.nodes if any(c.op == "aten.embedding.default" for c in n.node.aten_calls)]
    return node


@pytest.mark.parametrize("dtype, itemsize", [(torch.float32, 4), (torch.bfloat16, 2)])
def test_pb14_tied_embedding(dtype, itemsize):
    with torch.device("meta"):
        model = TiedLM().to(dtype)
    cg = costed(model, (torch.zeros(16, 256, dtype=torch.long),))
    assert cg.unique_parameter_count() == V * DIM == 19_200_000  # not 38,400,000
    assert cg.unique_parameter_bytes() == V * DIM * itemsize  # 76,800,000 B fp32; 38,400,000 B bf16
    lookup = _lookup(cg)
    assert lookup.cost.flops == 0 and lookup.category.value == "memory"
    rows = T * DIM * itemsize  # 4096 * 384 * 4 = 6,291,456 B in fp32: only the gathered rows
    assert lookup.cost == Cost(0, rows + T * 8, rows)  # + the int64 ids
    assert matmul_flops(cg) == 2 * T * DIM * V == 157_286_400_000  # lm_head


def test_gathers_read_only_the_rows_they_gather():
    table, ids = spec(1000, 64), spec(5, dtype="int64")
    sel = call("aten.index_select.default", table, 0, ids, outputs=(spec(5, 64),))
    assert cost(sel).cost == Cost(0, 5 * 64 * 4 + 5 * 8, 5 * 64 * 4)
    idx = call("aten.index.Tensor", table, (ids,), outputs=(spec(5, 64),))
    assert cost(idx).cost == cost(sel).cost
    index = spec(10, 3, dtype="int64")
    gat = call("aten.gather.default", spec(10, 64), 1, index, outputs=(spec(10, 3),))
    assert cost(gat).cost == Cost(0, 30 * 4 + 30 * 8, 30 * 4)


def test_embedding_bag_sums_the_gathered_rows():
    # 12 ids into 3 bags of width 16, mode sum: 12*16 adds, reads 12 rows
    c = call(
        "aten._embedding_bag.default",
        spec(100, 16),
        spec(12, dtype="int64"),
        spec(3, dtype="int64"),
        False,
        0,
        outputs=(spec(3, 16),),
    )
    assert cost(c).cost.flops == 12 * 16
    assert cost(c).cost.bytes_read == 12 * 16 * 4 + 12 * 8 + 3 * 8


def test_scatter_functional_and_in_place():
    # index_put_(self[100, 16], (ids[8],), values[8, 16], accumulate=True): touches 8 rows
    ids, vals = spec(8, dtype="int64"), spec(8, 16)
    inplace = call("aten.index_put_.default", spec(100, 16), (ids,), vals, True, outputs=(spec(100, 16),))
    assert cost(inplace).cost == Cost(8 * 16, 8 * 8 + 8 * 16 * 4 + 8 * 16 * 4, 8 * 16 * 4)
    functional = call("aten.index_put.default", spec(100, 16), (ids,), vals, False, outputs=(spec(100, 16),))
    assert cost(functional).cost == Cost(0, (1600 + 128) * 4 + 64, 1600 * 4)  # copies self
