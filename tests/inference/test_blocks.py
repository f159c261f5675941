"""The forward path captures one block per distinct layer kind and repeats it: equal to the whole capture.

The reference is the model captured whole (every layer traced by torch.export); the assembled graph
must have its FLOPs, bytes, parameters and node count, and every profile's makespan.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from dfx.analysis import analyze, capture_spec
from dfx.capture import capture
from dfx.capture.blocks import layer_list
from dfx.inference.blocks import capture_blocks
from dfx.models import resolve

_PROFILES = ["nvidia-h100-sxm", "groq-lpu", "cerebras-wse-3", "ibm-spyre"]


class _Block(nn.Module):
    """A pre-norm MLP block of width ``dim`` with a hidden width ``hidden``."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


class _Stack(nn.Module):
    """Five blocks; the fourth has a hidden width of 96 where the others have 128."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 64)
        self.layers = nn.ModuleList([_Block(64, 96 if i == 3 else 128) for i in range(5)])
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def _same(blocks, whole) -> None:
    """Equal analyses: totals, parameters, node count, and each profile's makespan."""
    a = analyze(blocks, hardware=_PROFILES)
    b = analyze(whole, hardware=_PROFILES)
    assert a.costed.total == b.costed.total
    assert a.costed.unique_parameter_count() == b.costed.unique_parameter_count()
    assert len(a.graph.nodes) == len(b.graph.nodes)
    assert [r.latency_s for r in a.hardware] == [r.latency_s for r in b.hardware]


def test_a_layer_of_another_width_is_its_own_block():
    model = _Stack().eval()
    x = torch.zeros(2, 8, 16)
    graph = capture_blocks(model, (x,), {}, name="stack")
    assert graph is not None
    # built layers 0, 1 (width 128) and 3 (width 96): layer k >= 1 copies the built layer of its kind
    assert dict(graph.meta)["repeated_layer"] == "layers.0 .. layers.4 from built layers (0, 1, 1, 2, 1)"
    assert len(model.layers) == 5  # the model is restored after the cut capture
    _same(graph, capture(model, (x,), {}, name="stack"))


def test_layer_list_needs_three_alike():
    assert layer_list(nn.Sequential(nn.Linear(2, 2), nn.ModuleList([nn.Linear(2, 2)] * 2))) is None
    path, layers = layer_list(_Stack())
    assert (path, len(layers)) == ("layers", 5)


_TINY = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=128)


@pytest.mark.parametrize(
    "model_type, extra",
    [
        ("llama", {}),
        # a dense first layer, then MoE layers (kinds D M M M: layer 0 is not layer 1's kind)
        ("qwen3_moe", dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, mlp_only_layers=[0])),
        # sliding-window layers and a global one every sixth (config.layer_types read by position)
        ("gemma3_text", dict(head_dim=32, sliding_window=8, num_hidden_layers=7)),
    ],
)
def test_hf_forward_by_blocks_equals_the_whole_capture(tmp_path, model_type, extra):
    config = {"model_type": model_type, "num_hidden_layers": 4, **_TINY, **extra}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = f"hf:{path}"
    graph, _ = capture_spec(spec, batch=2, seq=16, dtype="bfloat16")
    assert "repeated_layer" in dict(graph.meta)  # captured by blocks, not whole
    model = resolve(spec, batch=2, seq=16, dtype="bfloat16")
    _same(graph, capture(model.model, model.args, model.kwargs, name=model.name))
