"""The profile additions the spatial models read: `design`, spare cores, vector units; each sourced."""

from __future__ import annotations

import copy
from importlib import resources

import pytest
import yaml

from dfx.hardware import Determinism, HardwareProfileError, list_profiles, load_profile, parse_profile


def _data(pid: str) -> dict:
    text = (resources.files("dfx.hardware") / "profiles" / f"{pid}.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yaml.safe_load(text))


def test_groq_is_cycle_exact_and_gpus_are_not():
    assert load_profile("groq-lpu").design.determinism is Determinism.CYCLE_EXACT
    assert load_profile("groq-lpu").cycle_exact
    assert not any(load_profile(i).cycle_exact for i in ("h100", "tpu-v5e", "wse3", "spyre", "host-cpu"))
    assert load_profile("h100").design.determinism is Determinism.VARIABLE
    assert load_profile("host-cpu").design.determinism is Determinism.VARIABLE


def test_the_new_numbers_have_sources():
    groq = load_profile("groq-lpu")
    assert "design.chip_link_latency_s" in groq.estimates()  # the 3 us bound is an estimate
    assert groq.compute.vector_units == 5120 and groq.source_of("compute.vector_units").startswith("[S]")
    wse3 = load_profile("cerebras-wse-3")
    assert (wse3.compute.physical_cores, wse3.compute.usable_cores) == (970_000, 900_000)
    assert "compute.usable_cores" in load_profile("cerebras-wse-2").estimates()


def test_positions_are_sourced_as_judgements():
    for p in list_profiles():
        for key in ("design.memory_model_position", "design.scheduling_position"):
            assert "judgement" in p.source_of(key), (p.id, key)


def test_a_design_number_without_a_source_is_refused():
    data = _data("groq-lpu")
    del data["sources"]["design.chip_link_latency_s"]
    with pytest.raises(HardwareProfileError, match=r"design\.chip_link_latency_s.*no source"):
        parse_profile(data, "groq")


def test_more_usable_than_physical_cores_is_refused():
    data = _data("cerebras-wse-3")
    data["compute"]["usable_cores"] = 980_000
    with pytest.raises(HardwareProfileError, match="usable_cores"):
        parse_profile(data, "wse3")


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_a_map_position_is_between_0_and_1(value):
    data = _data("groq-lpu")
    data["design"]["scheduling_position"] = value
    with pytest.raises(HardwareProfileError, match="scheduling_position"):
        parse_profile(data, "groq")


def test_an_unknown_determinism_is_refused():
    data = _data("groq-lpu")
    data["design"]["determinism"] = "mostly"
    with pytest.raises(HardwareProfileError, match="determinism"):
        parse_profile(data, "groq")


def test_a_profile_without_design_still_loads():
    data = _data("groq-lpu")
    del data["design"]
    for key in [k for k in data["sources"] if k.startswith("design")]:
        del data["sources"][key]
    assert parse_profile(data, "groq").design is None
