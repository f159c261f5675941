"""`analyze` on Groq and Cerebras profiles times nodes with the architecture model and exports its fields."""

from __future__ import annotations

import pytest

from dfx.analysis import analyze

from ._graphs import mlp


@pytest.fixture(scope="module")
def doc():
    # the node-level model (each operator timed by the architecture model), not the compiled program
    return analyze(
        mlp(),
        hardware=["groq-lpu", "cerebras-wse-3", "cerebras-wse-2", "nvidia-h100-sxm"],
        execution_model="scratchpad",
    ).to_dict()


def test_groq_uses_the_tsp_model(doc):
    groq = doc["hardware"]["groq-lpu"]
    assert groq["arch_model"] == "groq-tsp"
    assert groq["chips_needed"] == 1  # 1,845,760 B of weights < 230,686,720 B
    assert groq["schedule"]["run_time_variation_cv"] == 0.0
    assert groq["nodes"]["fc1"]["time_s"] == pytest.approx(96 / 0.9e9)  # see test_spatial_groq


@pytest.mark.parametrize("hw", ["cerebras-wse-3", "cerebras-wse-2"])
def test_cerebras_uses_the_wafer_model(doc, hw):
    wafer = doc["hardware"][hw]
    assert wafer["arch_model"] == "cerebras-wafer"
    mapping = wafer["mapping"]
    assert set(mapping["cores_per_stage"]) == {"fc1", "(top)", "fc2"}
    assert sum(mapping["cores_per_stage"].values()) <= mapping["usable_cores"]
    assert mapping["bottleneck"] in mapping["cores_per_stage"]
    assert 0 < mapping["busy_fraction"] <= 1


def test_a_gpu_keeps_the_roofline(doc):
    assert doc["hardware"]["nvidia-h100-sxm"]["arch_model"] is None
