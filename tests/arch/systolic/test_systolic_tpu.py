"""TPU profiles: matmul and conv nodes timed on the MXUs, from the profile's units, array and clock."""

from __future__ import annotations

import pytest

from dfx.analysis import evaluate_on
from dfx.arch.systolic import TPU_SYSTOLIC, Gemm, MxuSpec, chip_gemm, mxu_spec, node_gemms
from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.targets import target_for
from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec
from dfx.roofline.bound import Bound

BF16 = "bfloat16"


def _spec(*shape: int) -> TensorSpec:
    return TensorSpec(shape, BF16)


def _graph(call: AtenCall) -> Graph:
    """Placeholders for the call's tensor inputs, then one node dispatching to ``call``."""
    inputs = [Node(f"in{i}", "placeholder", f"in{i}", outputs=(t,)) for i, t in enumerate(call.inputs)]
    op = Node(
        "op",
        "call_function",
        call.op,
        inputs=tuple(Edge(n.name) for n in inputs),
        outputs=call.outputs,
        aten_calls=(call,),
    )
    return Graph((*inputs, op))


def test_gemms_read_from_aten_calls():
    mm = AtenCall("aten.mm.default", (_spec(256, 100), _spec(100, 64)), outputs=(_spec(256, 64),))
    addmm = AtenCall("aten.addmm.default", (_spec(64), _spec(8, 32), _spec(32, 64)), outputs=(_spec(8, 64),))
    bmm = AtenCall("aten.bmm.default", (_spec(12, 16, 8), _spec(12, 8, 16)), outputs=(_spec(12, 16, 16),))
    linear = AtenCall("aten.linear.default", (_spec(2, 5, 32), _spec(48, 32)), outputs=(_spec(2, 5, 48),))
    # conv: x[2, 8, 10, 10], w[16, 8, 3, 3], out[2, 16, 8, 8]: M = 2*8*8, K = 8*3*3, N = 16
    conv = AtenCall(
        "aten.convolution.default",
        (_spec(2, 8, 10, 10), _spec(16, 8, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
        outputs=(_spec(2, 16, 8, 8),),
    )
    sdpa = AtenCall(
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
        (_spec(1, 12, 128, 64), _spec(1, 12, 128, 64), _spec(1, 12, 128, 64)),
        outputs=(_spec(1, 12, 128, 64),),
    )
    assert node_gemms((mm, addmm, bmm, linear, conv)) == [
        Gemm(256, 100, 64),
        Gemm(8, 32, 64),
        Gemm(16, 8, 16, 12),
        Gemm(10, 32, 48),
        Gemm(128, 72, 16),
    ]
    assert node_gemms((sdpa,)) == [Gemm(128, 64, 128, 12), Gemm(128, 128, 64, 12)]  # QK^T, then PV


def test_profiles_give_units_array_and_clock():
    v4, v5e, v6e = (mxu_spec(load_profile(h)) for h in ("google-tpu-v4", "google-tpu-v5e", "google-tpu-v6e"))
    assert (v4.units, v4.rows, v4.cols, v4.clock_hz) == (8, 128, 128, 1.05e9)
    assert (v5e.units, v5e.rows, v5e.clock_hz) == (4, 128, 1.5e9)
    # v6e publishes no clock: 918e12 / (2 * 2 * 256 * 256) = 3.5 GHz, and says it was derived
    assert v6e.clock_hz == pytest.approx(3.5017e9, rel=1e-4) and v6e.clock_source.startswith("derived")
    tpu, h100 = load_profile("google-tpu-v4"), load_profile("h100")
    assert target_for(tpu).arch_model(tpu) is TPU_SYSTOLIC
    assert target_for(h100).arch_model(h100) is None


def test_chip_gemm_deals_folds_to_units():
    spec = MxuSpec(units=4, rows=128, cols=128, clock_hz=1e9, clock_source="test")
    # WS 256 x 512 x 512: 4 x 4 = 16 folds over 4 MXUs -> 4 each; per fold 2*128 + 128 + 256 - 2 = 638,
    # pipelined: 638 + 3 * max(256, 128) = 1406
    g = chip_gemm(256, 512, 512, spec)
    assert (g.folds, g.folds_per_unit, g.cycles) == (16, 4, 1406)
    assert g.utilization == pytest.approx(256 * 512 * 512 / (4 * 128 * 128 * 1406))
    assert chip_gemm(256, 512, 512, spec, pipelined=False).cycles == 4 * 638
    # 1 fold on 4 MXUs: M = 256 split 4 ways, T' = 64: 2*128 + 128 + 64 - 2
    assert (chip_gemm(256, 128, 128, spec).t_split, chip_gemm(256, 128, 128, spec).cycles) == (4, 446)


def test_mm_node_on_v5e_is_timed_by_the_mxus():
    # [256, 128] @ [128, 256] bf16 on v5e: WS, Sr = K = 128 (1 fold), Sc = N = 256 (2 folds), T = M = 256;
    # 2 folds on 4 MXUs: each fold's M split over 2 of them, T' = 128: 2*128 + 128 + 128 - 2 = 510 cycles
    call = AtenCall("aten.mm.default", (_spec(256, 128), _spec(128, 256)), outputs=(_spec(256, 256),))
    result = evaluate_on(annotate(_graph(call)), load_profile("google-tpu-v5e"))
    timing = result.node("op")
    assert result.arch_model == "systolic"
    assert timing.compute_time_s == pytest.approx(510 / 1.5e9)
    assert timing.time_s == pytest.approx(max(510 / 1.5e9, timing.memory_time_s) + timing.overhead_s)
    assert timing.bound == (Bound.COMPUTE if 510 / 1.5e9 >= timing.memory_time_s else Bound.MEMORY)
    node = result.to_dict()["systolic"]["nodes"]["op"]
    assert (node["cycles"], node["folds"], node["mapping_efficiency"]) == (510, 2, 1.0)
    assert result.node("in0").time_s == 0.0  # other nodes keep the roofline


def test_padding_to_the_array_shows_as_lost_utilization():
    # K = N = 100 on a 128 x 128 MXU: 100*100 / 128^2 of the cells hold weights
    call = AtenCall("aten.mm.default", (_spec(4096, 100), _spec(100, 100)), outputs=(_spec(4096, 100),))
    result = evaluate_on(annotate(_graph(call)), load_profile("google-tpu-v4"))
    node = result.to_dict()["systolic"]["nodes"]["op"]
    assert node["mapping_efficiency"] == pytest.approx(100 * 100 / 128**2)
    # 1 fold, its M = 4096 rows split over the 8 MXUs: 2*128 + 128 + 512 - 2 = 894 cycles
    assert node["cycles"] == 894
    assert node["utilization"] == pytest.approx(4096 * 100 * 100 / (8 * 128 * 128 * 894))
    assert node["utilization"] < node["mapping_efficiency"]
    assert result.node("op").compute_time_s > result.node("op").flops / 275e12
