"""Groq TSP: cycles per node, chips for the weights, the pipeline across chips, the fixed schedule.

Figures of the shipped groq-lpu profile used below (reference/hardware.md section 8):
clock 900 MHz; 20 superlanes; 4 MXM planes of 320 x 320; 5,120 VXM ALUs; 88 MEM slices;
SRAM 220 MiB = 230,686,720 B at 80 TB/s; C2C 480 GB/s; chip link latency 3 us.
fill = 20 superlanes + 88 / 2 MEM slices = 64 cycles.
"""

from __future__ import annotations

import copy
from importlib import resources

import pytest
import yaml

from dfx.arch.spatial.groq_model import groq_node_timer
from dfx.arch.spatial.groq import (
    chip_assignment,
    chips_needed,
    decoder_throughput,
    input_crossings,
    split_ways,
    tsp_cycles,
    working_set,
)
from dfx.arch.spatial.groq_schedule import compile_schedule
from dfx.arch.spatial.tsp import Slice, TspOrganisation, contraction_cycles, node_cycles
from dfx.errors import DfxError
from dfx.hardware import load_profile, parse_profile
from dfx.roofline import evaluate

from ._graphs import costed, fork, mlp

CLOCK = 0.9e9
SRAM = 220 * 2**20  # 230,686,720 B


@pytest.fixture(scope="module")
def groq():
    return load_profile("groq-lpu")


def _groq_with_sram(capacity: str):
    text = (resources.files("dfx.hardware") / "profiles" / "groq-lpu.yaml").read_text(encoding="utf-8")
    data = copy.deepcopy(yaml.safe_load(text))
    data["memory"][0]["capacity_bytes"] = capacity
    return parse_profile(data, "groq-small")


def test_organisation_read_from_the_profile(groq):
    org = TspOrganisation.from_profile(groq)
    assert org.macs_per_cycle == 4 * 320 * 320 == 409_600
    assert org.fill_cycles == 20 + 88 // 2 == 64
    assert org.sram_bytes == SRAM


def test_a_profile_without_the_tsp_figures_is_refused_in_one_line():
    with pytest.raises(DfxError, match=r"lacks .*compute.vector_units.*Groq TSP model"):
        TspOrganisation.from_profile(load_profile("h100"))


@pytest.mark.parametrize(
    "a, b, cycles",
    [
        ((4, 640), (640, 960), 2 * 4),  # ceil(640/320) * ceil(960/320) = 6 tiles; ceil(6/4) = 2 rounds x 4 rows
        ((4, 960), (960, 320), 1 * 4),  # 3 tiles: 1 round x 4 rows
        ((2, 8, 320), (320, 320), 1 * 16),  # shared weights: 1 tile, 2 * 8 = 16 rows stream through it
        ((3, 8, 320), (3, 320, 640), 2 * 8),  # batched weights: 3 * 1 * 2 = 6 tiles, 2 rounds x 8 rows
        ((1, 321), (321, 1), 1 * 1),  # padding: 2 x 1 tiles of a 1 x 321 x 1 product
    ],
)
def test_contraction_cycles_tile_the_mxm(groq, a, b, cycles):
    assert contraction_cycles(a, b, TspOrganisation.from_profile(groq)) == cycles


def test_node_cycles_of_the_mlp(groq):
    org = TspOrganisation.from_profile(groq)
    cg = costed(mlp())
    fc1 = node_cycles(cg["fc1"], org, cg["fc1"].cost.bytes)
    # MXM 8 cycles at the int8 rate; the fp32 node uses the fp16 peak (188 TFLOP/s), a quarter of it:
    # passes = 2 * 409,600 * 0.9e9 / 188e12 = 3.92, ceil(8 * 3.92) = 32
    # VXM ceil(3,840 bias adds / 5,120) = 1; MEM ceil(1,243,520 B * 0.9e9 / 80e12) = ceil(13.99) = 14
    assert (fc1.slice, fc1.mxm, fc1.vxm, fc1.mem, fc1.fill, fc1.total) == (Slice.MXM, 32, 1, 14, 64, 32 + 64)
    relu = node_cycles(cg["relu"], org, cg["relu"].cost.bytes)
    # VXM ceil(3,840 / 5,120) = 1; MEM ceil(15,360 * 0.9e9 / 80e12) = 1
    assert (relu.slice, relu.total) == (Slice.VXM, 1 + 64)
    fc2 = node_cycles(cg["fc2"], org, cg["fc2"].cost.bytes)
    # MXM ceil(4 * 3.92) = 16; MEM ceil(625,280 * 0.9e9 / 80e12) = ceil(7.03) = 8
    assert (fc2.mxm, fc2.mem, fc2.total) == (16, 8, 16 + 64)
    assert node_cycles(cg["x"], org, 0).total == 0 and node_cycles(cg["x"], org, 0).slice is None


def test_node_timer_gives_cycles_over_the_clock(groq):
    cg = costed(mlp())
    result = evaluate(cg, groq, node_timer=groq_node_timer(cg, groq))
    assert result.node("fc1").time_s == pytest.approx(96 / CLOCK)
    assert result.node("fc1").bound.value == "compute"  # MXM 32 cycles (fp16 rate) > MEM 14
    assert result.node("relu").time_s == pytest.approx(65 / CLOCK)
    assert result.node("fc2").time_s == pytest.approx(80 / CLOCK)
    assert result.node("x").time_s == 0.0


@pytest.mark.parametrize(
    "weight_bytes, chips",
    [
        (2 * 70e9, 607),  # 70B bf16: 140e9 / 230,686,720 = 606.88 -> 607
        (2 * 8e9, 70),  # 8B bf16: 16e9 / 230,686,720 = 69.36 -> 70
        (SRAM, 1),  # exactly one chip's SRAM
        (SRAM + 1, 2),  # one byte more
        (0, 1),  # no weights still runs on a chip
    ],
)
def test_chips_needed_for_the_weights(groq, weight_bytes, chips):
    assert chips_needed(weight_bytes, TspOrganisation.from_profile(groq).sram_bytes) == chips


def test_chips_needed_rejects_nonsense():
    with pytest.raises(DfxError):
        chips_needed(-1, SRAM)


def test_chip_assignment_fills_chips_in_graph_order():
    small = _groq_with_sram("1.3 MB")
    cg = costed(mlp())
    # fc1 weights 960*640*2 + 960*2 = 1,230,720 B -> ceil(1,230,720 / 1.3e6) - 1 = chip 0
    # fc2 adds 320*960*2 + 320*2 = 615,040 B -> 1,845,760 B -> ceil(1.42) - 1 = chip 1
    assert chip_assignment(cg, 1.3e6) == {"x": 0, "fc1": 0, "relu": 0, "fc2": 1, "output": 1}
    assert chips_needed(cg.unique_parameter_bytes(), 1.3e6) == 2
    assert small.on_chip_level().capacity_bytes == 1.3e6


def test_schedule_is_fixed_at_compile_time(groq):
    cg = costed(mlp())
    schedule = compile_schedule(cg, groq)
    spans = {n.name: (n.slice, n.start_cycle, n.end_cycle) for n in schedule.nodes}
    # fc1 96, relu 65, fc2 80 cycles (test_node_cycles_of_the_mlp), one after the other
    assert spans["fc1"] == (Slice.MXM, 0, 96)
    assert spans["relu"] == (Slice.VXM, 96, 96 + 65)
    assert spans["fc2"] == (Slice.MXM, 161, 161 + 80)
    assert schedule.makespan_cycles == 241
    assert schedule.makespan_s == pytest.approx(241 / CLOCK)
    # deterministic: the same graph gives the same schedule, and no run-time variation
    assert compile_schedule(cg, groq) == schedule
    doc = schedule.to_dict()
    assert doc["deterministic"] is True and doc["run_time_variation_cv"] == 0.0


def test_schedule_overlaps_slices_but_not_one_slice(groq):
    spans = {n.name: (n.start_cycle, n.end_cycle) for n in compile_schedule(costed(fork()), groq).nodes}
    # relu over [4, 640]: VXM ceil(2,560 / 5,120) = 1; MEM ceil(10,240 B * 0.9e9 / 80e12) = 1 -> 65 cycles
    assert spans["fc1"] == (0, 96)  # the MXM
    assert spans["relu_a"] == (0, 65)  # the VXM, alongside fc1
    assert spans["relu_b"] == (65, 130)  # waits for the VXM


def test_schedule_charges_the_chip_to_chip_crossing():
    small = _groq_with_sram("1.3 MB")
    schedule = compile_schedule(costed(mlp()), small)
    fc2 = next(n for n in schedule.nodes if n.name == "fc2")
    # relu's output 4 * 960 * 2 = 7,680 B crosses one link: 3e-6 + 7,680 / 480e9 = 3.016e-6 s
    # = ceil(3.016e-6 * 0.9e9) = ceil(2714.4) = 2715 cycles after relu ends at 161
    assert (fc2.chip, fc2.start_cycle, fc2.end_cycle) == (1, 161 + 2715, 161 + 2715 + 80)
    assert schedule.chips == 2


def test_decoder_tokens_per_second_70b(groq):
    r = decoder_throughput(groq, 70e9, 8192, batch=1)
    # per chip: 70e9 / 607 = 115,321,252 weights = 230,642,504 B
    # MEM ceil(230,642,504 * 0.9e9 / 80e12) = ceil(2594.73) = 2595; MXM ceil(115,321,252 / 409,600) = 282
    stage = (2595 + 64) / CLOCK  # 2.9544 us
    hop = 3e-6 + 8192 * 2 / 480e9  # 3.0341 us
    latency = 607 * stage + 606 * hop  # 3.632 ms
    assert r.chips == 607
    assert r.stage_s == pytest.approx(stage) and r.hop_s == pytest.approx(hop)
    assert r.latency_s == pytest.approx(latency)
    assert r.tokens_per_s == pytest.approx(1 / latency)  # 275.3 tokens/s
    two = decoder_throughput(groq, 70e9, 8192, batch=1, in_flight=2)
    assert two.tokens_per_s == pytest.approx(2 / latency)  # the pipeline is far from full
    full = decoder_throughput(groq, 70e9, 8192, batch=1, in_flight=607)  # one batch per chip
    # 607 * (stage + hop) > latency = 607 * stage + 606 * hop: the slowest stage sets the rate
    assert full.tokens_per_s == pytest.approx(1 / (stage + hop))


def test_more_batches_in_flight_than_chips_is_refused(groq):
    # 607 chips hold 607 batches, one per stage; a 608th has no stage to be in
    with pytest.raises(DfxError, match="608 is more batches than the 607-chip pipeline holds"):
        decoder_throughput(groq, 70e9, 8192, batch=1, in_flight=608)


def test_decoder_throughput_rejects_a_zero_batch(groq):
    with pytest.raises(DfxError, match="must be positive"):
        decoder_throughput(groq, 70e9, 8192, batch=0)


def test_a_node_too_big_for_one_chip_is_split_over_the_chips_holding_it():
    small = _groq_with_sram("0.5 MB")
    org = TspOrganisation.from_profile(small)
    cg = costed(mlp())
    # fc1's working set: x 5,120 B + out 7,680 B + weights 1,230,720 B = 1,243,520 B -> ceil(2.49) = 3 chips
    assert split_ways(cg["fc1"], cg, org) == 3
    cycles, gather = tsp_cycles(cg["fc1"], cg, org)
    # each chip: MXM ceil(32 / 3) = 11 (fp16 rate); MEM ceil(14 / 3) = 5 (all bytes in some chip's SRAM)
    assert (cycles.mxm, cycles.mem, cycles.c2c, cycles.total) == (11, 5, 0, 11 + 64)
    # gather 2/3 of the 7,680 B output over C2C after one crossing
    assert gather == pytest.approx(3e-6 + 7680 * 2 / 3 / 480e9)
    assert split_ways(cg["relu"], cg, org) == 1


@pytest.mark.parametrize("sram", ["0.5 MB", "1.3 MB", "220 MiB"])
def test_the_schedule_takes_each_nodes_tsp_cycles(sram):
    # the schedule works out each node's working set, split and cycles in its own loop: the same as
    # tsp_cycles node by node, with nodes split over chips (0.5 MB), layers on two chips (1.3 MB), one chip
    from dfx.arch.spatial.groq_schedule import tsp_plan

    profile = _groq_with_sram(sram)
    org = TspOrganisation.from_profile(profile)
    for cg in (costed(mlp()), costed(mlp(weight_edges=True)), costed(fork())):
        plan = tsp_plan(cg, profile)
        for node in cg.nodes:
            cycles, gather = tsp_cycles(node, cg, org)
            assert plan.cycles[node.name] == cycles and plan.gather_s[node.name] == gather


def test_weights_never_cross_between_chips():
    small = _groq_with_sram("1.3 MB")
    org = TspOrganisation.from_profile(small)
    plain, edged = costed(mlp()), costed(mlp(weight_edges=True))
    chips = chip_assignment(edged, org.sram_bytes)
    assert (chips["fc1"], chips["fc2"]) == (0, 1)
    # fc2 (chip 1) receives relu's 7,680 B from chip 0; its weight placeholder (chip 0) does not cross
    assert input_crossings(edged["fc2"], chips, edged, org) == pytest.approx({"relu": 3e-6 + 7680 / 480e9})
    # the weight arriving as an edge is counted once: 5,120 + 7,680 + 1,230,720 B
    assert working_set(edged["fc1"], edged) == working_set(plain["fc1"], plain) == 1_243_520
    assert compile_schedule(edged, small).makespan_cycles == compile_schedule(plain, small).makespan_cycles


def test_the_plan_prices_each_distinct_node_once_and_equals_pricing_every_node():
    # GPT-2's 12 identical layers: the plan shares node_cycles between equal nodes (same category,
    # costs, aten calls, dtype, split); each node's cycles must still be exactly its own node_cycles
    import dfx
    from dfx.arch.spatial.groq_schedule import tsp_plan

    profile = load_profile("groq-lpu")
    org = TspOrganisation.from_profile(profile)
    costed = dfx.analyze("hf:gpt2", hardware=[], seq=8).costed
    plan = tsp_plan(costed, profile)
    for cn in costed.nodes:
        assert plan.cycles[cn.name] == node_cycles(cn, org, cn.cost.bytes, ways=split_ways(cn, costed, org)), cn.name


def test_a_weight_bigger_than_a_chip_is_never_gathered():
    # fc1's weight, 1,228,800 B, spans 3 chips of 0.5 MB; as a placeholder it does no work and
    # stays where it is: no split, no gather, and the schedule does not wait for it
    from dfx.arch.spatial.groq_schedule import tsp_plan

    small = _groq_with_sram("0.5 MB")
    org = TspOrganisation.from_profile(small)
    cg = costed(mlp(weight_edges=True))
    assert split_ways(cg["p_fc1_weight"], cg, org) == 1
    assert tsp_cycles(cg["p_fc1_weight"], cg, org)[1] == 0.0
    plan = tsp_plan(cg, small)
    scheduled = {n.name: n for n in plan.schedule.nodes}
    assert scheduled["p_fc1_weight"].end_cycle == 0 and plan.gather_s["p_fc1_weight"] == 0.0
