"""Expert parallelism of a grouped-GEMM MoE layer: the dispatch and combine all-to-alls, by hand.

transformers' own Mixtral, one layer (T = 128 tokens, D = 256, top-2 of 8 experts, bf16), on the
meta device, placed on 2 H100s with ``ep=2``. The H100 profile's NVLink: 450 GB/s each way, 0.6 us
per ring step, 6.6 us per collective (NCCL's baseLat and hwLat).
"""

from __future__ import annotations

import pytest

from dfx.costs.moe import apply_routing
from dfx.errors import DfxError
from dfx.hardware import load_profile
from dfx.parallel import ParallelPlan
from dfx.parallel.place import _ep_layers

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.costs._helpers import costed  # noqa: E402
from tests.costs._moe import mixtral  # noqa: E402


@pytest.fixture(scope="module")
def layer():
    model, ids = mixtral(layers=1)
    return costed(model, (ids,))


def test_all_to_all_bytes_and_time_of_one_layer(layer):
    from dfx.analysis import evaluate_on

    h100 = load_profile("h100")
    placed = evaluate_on(layer, h100, split=ParallelPlan(ep=2))
    (span,) = [s for s in placed.extras["parallel"]["timeline"] if "all-to-all" in s["name"]]
    # dispatch: the experts' input rows [T*k, D] = 128 * 2 * 256 * 2 B = 131,072 B; combine: the same
    # each all-to-all over 2 chips: 6.6 us + (2 - 1) steps * 0.6 us + (1/2) * 131,072 B / 450e9 B/s
    one = 6.6e-6 + 0.6e-6 + 0.5 * 131_072 / 450e9
    assert span["end_s"] - span["start_s"] == pytest.approx(2 * one)
    e = _ep_layers(layer, 2)[0]
    assert (e.dispatch_bytes, e.combine_bytes, e.imbalance) == (131_072, 131_072, 1.0)


def test_skewed_routing_loads_the_first_chip(layer):
    # zipf:1 over 8 experts: chip 0 holds experts 1-4 (ranks), share (1 + 1/2 + 1/3 + 1/4) / H_8
    h8 = sum(1 / r for r in range(1, 9))
    e = _ep_layers(apply_routing(layer, "zipf:1"), 2)[0]
    assert e.imbalance == pytest.approx(2 * (25 / 12) / h8, abs=2 * 0.5 / 256)  # counts rounded to slots


def test_ep_must_divide_the_experts(layer):
    with pytest.raises(DfxError, match="ep=3 does not divide the model's 8 experts"):
        _ep_layers(layer, 3)


def test_capacity_counts_every_experts_weights():
    from pathlib import Path

    from dfx.arch.memory.api import model_capacity

    config = Path(__file__).resolve().parents[2] / "examples" / "mixtral-tiny.json"
    report = model_capacity(f"hf:{config}", "h100", seq=16)
    d, f, e, heads_kv_dim, vocab = 256, 512, 8, 2 * 32, 1000
    per_layer = (
        2 * d * d  # q_proj, o_proj
        + 2 * d * heads_kv_dim  # k_proj, v_proj
        + d * e  # router
        + e * 3 * d * f  # all 8 experts' gate, up, down: 3,145,728
        + 2 * d  # two RMSNorms
    )
    assert report.parameter_count == 2 * per_layer + 2 * vocab * d + d == 7_136_512


def test_the_console_states_the_all_to_all_time(tmp_path):
    import json

    from tests.hostile._runner import run_main

    # the module's layer as a config: transformers' Mixtral, 1 layer, D 256, top-2 of 8, seq 128, bf16
    model, _ = mixtral(layers=1)
    config = {**model.config.to_dict(), "model_type": "mixtral"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    run = run_main(
        ["analyze", f"hf:{path}", "--seq", "128", "--hw", "h100", "--parallel", "ep=2", "--no-cache"], tmp_path
    )
    assert run.rc == 0, run.err
    (row,) = [line for line in run.out.splitlines() if "of which ep all-to-all" in line]
    # dispatch and combine, each 6.6 us + 0.6 us + (1/2) * 131,072 B / 450 GB/s = 7.346 us: 14.7 us
    assert "14.7 us" in row, row
