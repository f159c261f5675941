"""Full activation recomputation (dfx.training.recompute): a step that does not fit keeps each layer's
input and runs the layers' forward again, by hand on a two-layer model."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn

import dfx
from dfx.training.recompute import recompute_kept_bytes
from dfx.training.step import saved_for_backward

B, D = 2**21, 8192  # 2,097,152 rows x 8,192 features, fp32: one activation is 2^21 * 2^13 * 4 = 64 GiB


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, D, bias=False)

    def forward(self, x):
        return torch.relu(self.fc(x))


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.fixture(scope="module")
def step():
    with torch.device("meta"):
        model = TwoLayers()
    x = torch.empty(B, D, device="meta")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = dfx.analyze(model, (x,), train=True, optimizer="sgd", hardware=["h100"], execution_model="eager")
    return a, [str(w.message) for w in caught]


def test_a_layers_input_is_all_it_keeps(step):
    a, _ = step
    act = B * D * 4  # 2^36 bytes = 64 GiB: one [B, D] fp32 activation
    # without recomputation each ReLU's output is kept (its backward and the next linear's weight
    # gradient read it): 2 activations; x, the input, is counted apart
    assert a.training.saved_activation_bytes == 2 * act
    assert sum(saved_for_backward(a.costed, a.training).values()) == 2 * act + act  # + the input x
    # full recomputation: layer 1's input (layer 0's ReLU output); layer 0's input is x
    assert recompute_kept_bytes(a.costed, a.training) == (act, 2)


def test_a_step_that_does_not_fit_pays_the_layers_forward_again(step):
    a, caught = step
    r = a.hardware[0]
    rec = r.extras["recompute"]
    # 128 GiB kept > the H100's 80 GB: recomputed; 64 GiB + model state (2 x 8192^2 x 4 B weights and
    # as many gradients; SGD keeps no state: 1 GiB) = 65 GiB fits
    assert rec["policy"] == "full" and rec["kept_bytes"] == B * D * 4 and rec["saved_bytes"] == 2 * B * D * 4
    mem = r.extras["parallel"]["memory"] if "parallel" in r.extras else None
    assert mem is None or mem["fits"]
    assert not any("training step needs" in m for m in caught)
    # eager: the step's latency is its serial time, the sum of node times, so the recomputation is the
    # forward nodes' own times (both linears and both ReLUs), added once
    # the joint graph's forward: t (a view), mm, relu, then t_1, mm_1, relu_1 and the loss's sum_1,
    # in layer 1 by the last parameter read (layers.1.fc.weight); detaches and transposes do no work
    again = sum(r.node(n).time_s for n in ("mm", "relu", "mm_1", "relu_1", "sum_1"))
    assert {"mm", "relu", "mm_1", "relu_1", "sum_1"} <= set(rec["nodes"])
    assert not set(rec["nodes"]) & set(a.training.backward_nodes)
    assert again > 0 and rec["recompute_s"] == pytest.approx(again)
    assert r.latency_s == pytest.approx(r.serial_time_s + again)
    doc = a.to_dict()["hardware"]["nvidia-h100-sxm"]  # the export, through its typed record
    assert doc["recompute"]["kept_bytes"] == B * D * 4 and doc["makespan_s"] == pytest.approx(r.latency_s)
    # the console says so, under the training step's memory line: 64 GiB of 128 GiB, 2 layers
    from dfx.training.console import training_lines

    (line,) = [x for x in training_lines(a.to_dict()) if "recomputation" in x]
    assert line.startswith("  nvidia-h100-sxm: does not fit") and "keeps 64.00 GiB of the 128.00 GiB" in line
    assert "over 2 layer(s)" in line
