"""Recurrent layers cost the same on every propagation device (issue #19, kernels chosen by device).

On the CPU with oneDNN on, ``nn.LSTM`` dispatches to one fused ``aten.mkldnn_rnn_layer`` per layer,
which used to reach no rule (an LSTM of 0 FLOPs). Capture now propagates through the portable
decomposition, and the fused kernels that can still appear have rules of their own. Expected
values are the hand formula: per row (batch element x step) and layer, G gates of width H over I
inputs cost 2*G*H*(I + H) matmul FLOPs; pointwise per row is 2*G*H for the two biases plus the
cell's own part (LSTM 22*H, GRU 16*H, tanh RNN 2*H), see ``dfx.costs.rules_rnn``.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dfx.capture.propagate import device_neutral_kernels
from tests.costs._helpers import call, cost, costed, flops_of, spec


class _First(nn.Module):
    """Return the recurrent module's output sequence (or hidden state for a cell)."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        out = self.rnn(x)
        return out[0] if isinstance(out, tuple) else out


def _on(device: str, rnn: nn.Module) -> nn.Module:
    return _First(rnn).to(device).eval()


def _ops(cg) -> set[str]:
    return {c.op for n in cg.graph.nodes for c in n.aten_calls}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_lstm_costs_the_hand_formula_not_a_fused_zero(dtype):
    model = _on("cpu", nn.LSTM(8, 16, num_layers=2, batch_first=True)).to(dtype)
    cg = costed(model, (torch.randn(2, 5, 8, dtype=dtype),))
    rows = 2 * 5  # B * T
    # layer 0: 4*16*(2*8 + 2*16) = 3,072 per row; layer 1: 4*16*(2*16 + 2*16) = 4,096 per row
    assert cg.flops_by_category()["matmul"] == rows * (3_072 + 4_096) == 71_680
    # per row and layer: biases 2*4*16 = 128, cell 22*16 = 352 -> 480; 10 rows, 2 layers
    assert cg.flops_by_category()["elementwise"] == rows * 2 * 480 == 9_600
    assert not any("mkldnn" in op for op in _ops(cg))


def test_cpu_equals_meta_for_every_recurrent_module():
    cases = [
        (lambda: nn.LSTM(8, 16, bidirectional=True), (5, 2, 8)),
        (lambda: nn.GRU(8, 16, num_layers=2), (5, 2, 8)),
        (lambda: nn.RNN(8, 16, nonlinearity="relu"), (5, 2, 8)),
        (lambda: nn.LSTMCell(8, 16), (2, 8)),
        (lambda: nn.GRUCell(8, 16, bias=False), (2, 8)),
    ]
    for make, shape in cases:
        cpu = costed(_on("cpu", make()), (torch.randn(*shape),))
        meta = costed(_on("meta", make()), (torch.randn(*shape, device="meta"),))
        assert cpu.flops_by_category() == meta.flops_by_category(), make()


def test_gru_and_rnn_hand_formulas():
    gru = costed(_on("cpu", nn.GRU(8, 16)), (torch.randn(5, 2, 8),))
    # 10 rows * 3*16*(2*8 + 2*16) = 10 * 2,304; pointwise 10 * (2*3*16 + 16*16) = 10 * 352
    assert gru.flops_by_category()["matmul"] == 23_040
    assert gru.flops_by_category()["elementwise"] == 3_520
    rnn = costed(_on("cpu", nn.RNN(8, 16)), (torch.randn(5, 2, 8),))
    # 10 rows * 16*(2*8 + 2*16) = 7,680; pointwise 10 * (2*16 bias + add 16 + tanh 16) = 640
    assert (rnn.flops_by_category()["matmul"], rnn.flops_by_category()["elementwise"]) == (7_680, 640)


def test_user_backend_settings_are_restored():
    before = (torch.backends.mkldnn.enabled, torch.backends.cudnn.enabled)
    with pytest.raises(RuntimeError), device_neutral_kernels():
        assert not torch.backends.mkldnn.enabled and not torch.backends.cudnn.enabled
        raise RuntimeError("stop")
    assert (torch.backends.mkldnn.enabled, torch.backends.cudnn.enabled) == before


def test_mkldnn_rnn_layer_rule_is_its_decomposition():
    # one LSTM layer over T=5, B=2, I=8, H=16 as oneDNN's kernel records it
    x, w_ih, w_hh, b = spec(5, 2, 8), spec(64, 8), spec(64, 16), spec(64)
    h = spec(2, 16)
    c = call(
        "aten.mkldnn_rnn_layer.default",
        x,
        w_ih,
        w_hh,
        b,
        b,
        h,
        h,
        False,
        (),
        2,
        16,
        1,
        True,
        False,
        False,
        outputs=(spec(5, 2, 16), h, h, spec(1)),
    )
    assert flops_of(c, "matmul") == 10 * 2 * 64 * (8 + 16) == 30_720
    assert flops_of(c, "elementwise") == 10 * (2 * 64 + 22 * 16) == 4_800
    # reads x, weights, biases, h0, c0 once; writes output, hy, cy (not the workspace), fp32
    reads = (80 + 512 + 1024 + 64 + 64 + 32 + 32) * 4
    assert cost(c).cost.bytes == reads + (160 + 32 + 32) * 4


def test_cuda_fused_cells_cost_their_pointwise_part():
    gates4, gates3, state = spec(2, 64), spec(2, 48), spec(2, 16)
    bias4 = spec(64)
    lstm = call(
        "aten._thnn_fused_lstm_cell.default", gates4, gates4, state, bias4, bias4, outputs=(state, state, spec(2, 112))
    )
    assert flops_of(lstm, "elementwise") == 2 * (22 * 16 + 2 * 64)  # 960
    gru = call("aten._thnn_fused_gru_cell.default", gates3, gates3, state, outputs=(state, spec(2, 80)))
    assert flops_of(gru, "elementwise") == 2 * 16 * 16  # no biases: 512


def test_unknown_rnn_mode_is_reported_not_zero():
    x, w = spec(5, 2, 8), spec(64, 8)
    c = call("aten.mkldnn_rnn_layer.default", x, w, w, w, w, x, x, False, (), 7, 16, outputs=(x,))
    with pytest.raises(ValueError, match="unknown mode 7"):
        cost(c)
