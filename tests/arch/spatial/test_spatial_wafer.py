"""Cerebras wafer: cores per layer in proportion to work, the bottleneck, spares, weight streaming."""

from __future__ import annotations

from pathlib import Path

import pytest

from dfx.arch.spatial.wafer import StageWork, WaferCore, WaferMode, map_graph, map_layers, stages_of, wafer_node_timer
from dfx.errors import DfxError
from dfx.hardware import load_profile
from dfx.roofline import evaluate

from ._graphs import costed, mlp

ROOT_PROFILES = Path(__file__).resolve().parents[3] / "src" / "dfx" / "hardware" / "profiles"


# A made-up wafer with round numbers: 1 GFLOP/s and 1 GB/s of SRAM per core, 1,000 B of SRAM per
# core, 1 MB/s to the off-wafer store.
def wafer(usable: int, physical: int = 110) -> WaferCore:
    return WaferCore(usable, physical, 1e9, 1000.0, 1e9, 1e6)


def test_cores_follow_time_and_the_bottleneck_sets_the_cycle():
    stages = [
        StageWork("a", 7_000_000_000, 0, 0),
        StageWork("b", 2_000_000_000, 0, 0),
        StageWork("c", 1_000_000_000, 0, 0),
    ]
    m = map_layers(stages, wafer(99))
    # work on one core: 7, 2, 1 s. The shortest cycle T with ceil(7/T) + ceil(2/T) + ceil(1/T) <= 99:
    # T = 0.1 needs 70 + 20 + 10 = 100; T = 7/69 = 0.10145 needs 69 + ceil(19.71) + ceil(9.86) = 99.
    # (Shares in proportion to work rounded down, 69, 19, 9, would leave c at 1/9 = 0.111.)
    assert m.mode is WaferMode.LAYER_PIPELINED
    assert m.cores_per_stage == {"a": 69, "b": 20, "c": 10}
    assert sum(m.cores_per_stage.values()) == 99 == m.usable_cores
    # stage times = work per core: 7/69 = 0.10145, 2/20 = 0.1, 1/10 = 0.1 -> a
    assert m.bottleneck == "a"
    assert m.cycle_s == pytest.approx(7 / 69)
    assert m.busy_fraction == pytest.approx(10 / (99 * (7 / 69)))  # 0.996
    assert m.to_dict()["spare_cores"] == 110 - 99


def test_a_layer_keeps_enough_cores_for_its_weights():
    stages = [StageWork("a", 7_000_000_000, 0, 0), StageWork("d", 500_000_000, 0, 25_000)]
    m = map_layers(stages, wafer(100))
    # d's share 100 * 0.5 / 7.5 = 6.7 cores < ceil(25,000 / 1,000) = 25: d gets 25, a the other 75
    assert m.cores_per_stage == {"a": 75, "d": 25}
    assert m.bottleneck == "a"  # 7 / 75 = 0.093 s against 0.5 / 25 = 0.02 s


def test_a_stage_with_no_flops_still_gets_a_core():
    m = map_layers([StageWork("a", 1_000_000_000, 0, 0), StageWork("gather", 0, 0, 0)], wafer(10))
    assert m.cores_per_stage == {"a": 9, "gather": 1}


def test_memory_traffic_counts_as_work():
    # 1 GFLOP or 3 GB on a core of 1 GFLOP/s and 1 GB/s: 1 s and 3 s -> b has 3x the work
    m = map_layers([StageWork("a", 1_000_000_000, 0, 0), StageWork("b", 0, 3_000_000_000, 0)], wafer(8))
    assert m.cores_per_stage == {"a": 2, "b": 6}


def test_weights_that_do_not_fit_stream_one_layer_at_a_time():
    stages = [StageWork("big", 1_000_000_000, 0, 200_000), StageWork("small", 1_000_000_000, 0, 0)]
    m = map_layers(stages, wafer(100))  # 200,000 B needs 200 cores of 1,000 B: more than 100
    assert m.mode is WaferMode.WEIGHT_STREAMING
    assert m.cores_per_stage == {"big": 100, "small": 100}  # the whole wafer, in turn
    # big: max(1 s / 100 cores, 200,000 B / 1 MB/s) = 0.2 s; small: 1 / 100 = 0.01 s
    assert m.to_dict()["stage_time_s"] == pytest.approx({"big": 0.2, "small": 0.01})
    assert m.bottleneck == "big" and m.cycle_s == pytest.approx(0.21)


def test_streaming_needs_an_off_wafer_store():
    with pytest.raises(DfxError, match="stream"):
        map_layers([StageWork("big", 1, 0, 10**9)], WaferCore(10, 10, 1e9, 1000.0, 1e9, None))


def test_usable_cores_hold_back_the_spares():
    wse3 = WaferCore.from_profile(load_profile("cerebras-wse-3"))
    assert (wse3.usable_cores, wse3.physical_cores) == (900_000, 970_000)
    wse2 = WaferCore.from_profile(load_profile("cerebras-wse-2"))
    assert wse2.usable_cores == 837_250 == int(850_000 * (1 - 0.015))


def test_mlp_on_wse3():
    cg = costed(mlp())
    assert [s.name for s in stages_of(cg)] == ["fc1", "(top)", "fc2"]
    m = map_graph(cg, load_profile("cerebras-wse-3"))
    assert sum(m.cores_per_stage.values()) <= m.usable_cores == 900_000
    per_core = {s.name: s.work_s / s.cores for s in m.stages}
    assert m.bottleneck == max(per_core, key=per_core.get)


def test_node_timer_runs_each_node_on_its_region():
    cg, wse3 = costed(mlp()), load_profile("cerebras-wse-3")
    m = map_graph(cg, wse3)
    result = evaluate(cg, wse3, node_timer=wafer_node_timer(cg, wse3))
    core = WaferCore.from_profile(wse3)
    fc1 = cg["fc1"]
    expected = (
        max(fc1.cost.flops / core.core_flop_per_s, fc1.cost.bytes / core.core_sram_bytes_per_s)
        / m.cores_per_stage["fc1"]
    )
    assert result.node("fc1").time_s == pytest.approx(expected)


def test_weights_too_big_for_one_wafer_continue_on_the_next():
    # 10 cores of 1,000 B per wafer; stages need 6, 6 and 3 cores for their weights: a fills wafer 0
    # (6 of 10), b does not fit beside it (12 > 10) and starts wafer 1 with c (6 + 3 = 9 <= 10).
    stages = [StageWork("a", 1e9, 0, 6000), StageWork("b", 1e9, 0, 6000), StageWork("c", 1e9, 0, 3000)]
    core = WaferCore(10, 10, 1e9, 1000.0, 1e9, None)
    m = map_layers(stages, core, max_wafers=4)
    assert m.mode is WaferMode.LAYER_PIPELINED and m.wafers == 2
    assert {s.name: s.wafer for s in m.stages} == {"a": 0, "b": 1, "c": 1}
    # wafer 0: a takes all 10 cores (1 s / 10); wafer 1: b keeps its 6 weight cores, c gets the
    # other 4 (cycle 1 / 4 = 0.25 s; 5 and 5 would break b's floor)
    assert m.cores_per_stage == {"a": 10, "b": 6, "c": 4}
    with pytest.raises(DfxError, match="no off-chip level"):
        map_layers(stages, core, max_wafers=1)


def test_a_streamed_sample_pays_the_fill_once():
    stages = [StageWork("a", 1e9, 0, 0), StageWork("b", 1e9, 0, 0)]
    m = map_layers(stages, WaferCore(10, 10, 1e9, 1000.0, 1e9, None))
    # 5 cores each: 0.2 s per stage for the whole sample. One row: 0.4 s; 100 rows streaming:
    # cycle 0.2 + (0.4 - 0.2) / 100 = 0.202 s
    assert m.latency_s(1) == pytest.approx(0.4)
    assert m.latency_s(100) == pytest.approx(0.202)


def test_layers_are_spread_evenly_over_the_wafers_they_need():
    # 80 layers of 7 weight cores between an embedding and a head of 3 each, 180 cores a wafer.
    # Filling wafers in turn: 3 + 25 * 7 = 178 (a 26th layer would make 185), then 25, 25, and
    # 5 + the head: 4 wafers, the first three with 2-5 spare cores. Balanced over those 4 wafers
    # (566 weight cores, at least 142 on the fullest): a cap of 142 holds 3 + 19 * 7 = 136, then
    # 20, 20, 20, and a fifth wafer; 143 holds embed + 20 | 20 | 20 | 20 + head.
    layers = [StageWork(f"l{i}", 1e9, 0, 7000) for i in range(80)]
    stages = [StageWork("embed", 0, 0, 3000), *layers, StageWork("head", 1e9, 0, 3000)]
    m = map_layers(stages, WaferCore(180, 180, 1e9, 1000.0, 1e9, None), max_wafers=8)
    assert m.wafers == 4
    per_wafer = [sum(1 for s in m.stages if s.wafer == w and s.name.startswith("l")) for w in range(4)]
    assert per_wafer == [20, 20, 20, 20]
    assert {s.name: s.wafer for s in m.stages if s.name in ("embed", "head")} == {"embed": 0, "head": 3}
    # weight cores per wafer: 3 + 140, 140, 140, 140 + 3; at least 37 left on each for speed
    assert [sum(s.param_bytes for s in m.stages if s.wafer == w) // 1000 for w in range(4)] == [143, 140, 140, 143]


def test_a_decode_over_two_wafers_is_every_stage_in_turn_plus_one_hop(tmp_path):
    from dfx.analysis import analyze

    # a WSE-3 profile shrunk to 150 cores of 10,000 B (1.5 MB a wafer): the MLP's weights,
    # fc1 1,230,720 B (124 cores) and fc2 615,040 B (62 cores), need 2 wafers (124 + 1 + 62 > 150);
    # spread evenly, the fullest holds 124 weight cores: fc1 on wafer 0, the relu (1) and fc2 on 1
    text = (ROOT_PROFILES / "cerebras-wse-3.yaml").read_text()
    for old, new in (
        ("capacity_bytes: 44 GB", "capacity_bytes: 1.5 MB"),
        ("usable_cores: 900000", "usable_cores: 150"),  # before "cores: ", which it contains
        ("physical_cores: 970000", "physical_cores: 150"),
        ("instances: 900000", "instances: 150"),
        ("cores: 900000", "cores: 150"),
        ("id: cerebras-wse-3", "id: tiny-wafer"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "tiny-wafer.yaml"
    path.write_text(text)
    r = analyze(mlp(), hardware=[str(path)]).hardware[0]
    mapping, parallel = r.extras["mapping"], r.extras["parallel"]
    assert mapping["wafers"] == 2 and mapping["wafer_of_stage"] == {"fc1": 0, "(top)": 1, "fc2": 1}
    # the hop: one send/recv of a [4, n] bf16 activation (a few KB) over the CS-3 systems' links:
    # 10 us + under 7,680 B / 150 GB/s (51 ns), once between the two wafers
    hop_s = parallel["communication_s"]
    assert hop_s == pytest.approx(10e-6, rel=0.01)
    assert parallel["latency_s"] == pytest.approx(sum(mapping["stage_time_s"].values()) + hop_s)
