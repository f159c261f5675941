"""Recurrent layers' fused kernels, costed as the decomposition they replace.

Capture propagates with the device libraries' fused kernels switched off
(:func:`dfx.capture.propagate.device_neutral_kernels`), so an ``nn.LSTM`` normally arrives as its
per-step ``addmm`` and pointwise calls. These rules cover the fused kernels that can still appear
(a graph saved by another capture, or a device dfx cannot switch): oneDNN's CPU layer
``mkldnn_rnn_layer`` and CUDA's fused cells ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``.
Each costs exactly what the device-independent decomposition (``torch/csrc/.../RNN.cpp``'s
``LSTMCell``, ``GRUCell``, ``SimpleCell``) costs under the pointwise convention of
:mod:`dfx.costs.rules_pointwise`. Per row (one batch element, one time step), with G gates of
hidden size H over an input of I features::

    products      x @ W_ih^T [I, G*H] and h @ W_hh^T [H, G*H]      2*G*H*(I + H)   matmul
    biases        + b_ih, + b_hh (when the layer has biases)       2*G*H           elementwise
    LSTM cell     gates = ig + hg (4H); sigmoid i, f, o (3 x 4H); tanh g (H);
                  c' = f*c + i*g (3H); h' = o * tanh(c') (2H)       22*H
    GRU cell      r, z = sigmoid(ig + hg) (2 x 5H); n = tanh(ig_n + r*hg_n) (3H);
                  h' = (h - n)*z + n (3H)                           16*H
    RNN cell      tanh or relu(ig + hg): add (H), activation (H)   2*H
"""

from __future__ import annotations

from dataclasses import dataclass

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.rules_pointwise import RELU_FLOPS, SIGMOID_FLOPS
from dfx.costs.terms import contraction_flops, io_cost, tensor_arg
from dfx.ir import AtenCall

__all__ = ["CELLS", "Cell", "rnn_layer_flops"]

M, E = Category.MATMUL, Category.ELEMENTWISE
_TANH_FLOPS = 1  # one elementary-function evaluation
_BIASES = 2  # b_ih and b_hh, one add per gate element each


@dataclass(frozen=True)
class Cell:
    """A recurrent cell: its gate count G and its pointwise FLOPs per hidden unit, biases aside."""

    name: str
    gates: int
    pointwise_per_hidden: int


# gates add (4) + 3 sigmoids (3*4) + tanh g (1) + f*c, i*g, + (3) + tanh c', o* (2) = 22
LSTM = Cell("lstm", 4, 4 + 3 * SIGMOID_FLOPS + _TANH_FLOPS + 3 + _TANH_FLOPS + 1)
# r, z: add + sigmoid (2 x 5); n: r*hg_n, + ig_n, tanh (3); h' = (h - n)*z + n (3) = 16
GRU = Cell("gru", 3, 2 * (1 + SIGMOID_FLOPS) + 2 + _TANH_FLOPS + 3)
RNN_TANH = Cell("rnn_tanh", 1, 1 + _TANH_FLOPS)
RNN_RELU = Cell("rnn_relu", 1, 1 + RELU_FLOPS)
# cuDNN's and oneDNN's mode numbers (torch/backends/cudnn/rnn.py: RNN_RELU 0, RNN_TANH 1, LSTM 2, GRU 3)
CELLS = {0: RNN_RELU, 1: RNN_TANH, 2: LSTM, 3: GRU}


def rnn_layer_flops(cell: Cell, rows: int, input_size: int, hidden_size: int, *, biases: bool) -> dict[Category, int]:
    """FLOPs of one direction of one recurrent layer over ``rows`` = steps x batch rows.

    Examples
    --------
    >>> rnn_layer_flops(LSTM, 10, 8, 16, biases=True)  # 10 * 2*4*16*(8+16); 10 * (8 + 22) * 16
    {<Category.MATMUL: 'matmul'>: 30720, <Category.ELEMENTWISE: 'elementwise'>: 4800}
    """
    gate_width = cell.gates * hidden_size
    matmul = contraction_flops(1, rows, input_size, gate_width) + contraction_flops(1, rows, hidden_size, gate_width)
    pointwise = rows * (cell.pointwise_per_hidden * hidden_size + (_BIASES * gate_width if biases else 0))
    return {M: matmul, E: pointwise}


def _tensor(call: AtenCall, index: int, name: str):
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


@register_cost(["aten.mkldnn_rnn_layer"], category=M)
def mkldnn_rnn_layer(call: AtenCall) -> dict[Category, Cost]:
    # mkldnn_rnn_layer(input [T, B, I], w_ih [G*H, I], w_hh [G*H, H], b_ih, b_hh, hx, cx, reverse,
    #                  batch_sizes, mode, hidden_size, ...): one direction of one layer
    x, w_ih = _tensor(call, 0, "input"), _tensor(call, 1, "weight0")
    mode, hidden = call.arg(9, "mode"), call.arg(10, "hidden_size")
    cell = CELLS.get(mode) if isinstance(mode, int) else None
    if cell is None or not isinstance(hidden, int) or hidden <= 0:
        raise ValueError(f"{call.op}: unknown mode {mode!r} or hidden size {hidden!r}")
    input_size = w_ih.shape[-1]
    rows = x.numel // input_size  # T * B, whichever of the two comes first
    flops = rnn_layer_flops(cell, rows, input_size, hidden, biases=bool(call.arg(12, "has_biases")))
    return {M: io_cost(call, flops[M], writes=call.outputs[:3]), E: Cost(flops[E])}


def _fused_cell(call: AtenCall, cell: Cell, outputs: int) -> Cost:
    # (input_gates [B, G*H], hidden_gates [B, G*H], cx or hx [B, H], b_ih?, b_hh?): the products
    # were separate mm calls; this kernel is the bias adds and the cell's pointwise part
    state = _tensor(call, 2, "cx" if cell is LSTM else "hx")
    rows, hidden = state.numel // state.shape[-1], state.shape[-1]
    biases = sum(tensor_arg(call, i, n) is not None for i, n in ((3, "input_bias"), (4, "hidden_bias")))
    flops = rows * (cell.pointwise_per_hidden * hidden + biases * cell.gates * hidden)
    return io_cost(call, flops, writes=call.outputs[:outputs])


@register_cost(["aten._thnn_fused_lstm_cell"], category=E)
def thnn_fused_lstm_cell(call: AtenCall) -> Cost:
    return _fused_cell(call, LSTM, 2)  # hy, cy (the third output is the saved workspace)


@register_cost(["aten._thnn_fused_gru_cell"], category=E)
def thnn_fused_gru_cell(call: AtenCall) -> Cost:
    return _fused_cell(call, GRU, 1)  # hy (the second output is the saved workspace)
