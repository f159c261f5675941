"""The analytical model: hand-derived cycle counts (PB-18 first), folds, traffic, stalls and errors."""

from __future__ import annotations

import pytest

from dfx.arch.systolic import ConvLayer, Dataflow, SramKB, conv, gemm, parse_conv, parse_dataflow
from dfx.errors import DfxError


def test_pb18_conv_case_os_10_cycles_14_with_drain():
    # ifmap 1x4, filter 1x1, 4 channels, 4 filters, stride 1 on a 4x4 OS array:
    # Sr = 4 output pixels, Sc = 4 filters, T = 1*1*4 = 4; R + C + T - 2 = 10; + R drain = 14
    r = conv(ConvLayer(1, 4, 1, 1, 4, 4, 1), rows=4, cols=4, dataflow="os")
    assert (r.compute_cycles, r.compute_cycles_with_drain, r.drain_cycles) == (10, 14, 4)
    assert r.last_cycle_index == 9  # what SCALE-Sim prints (PB-18's "reported 9")


def test_pb18_gemm_2x2x2_os_4_cycles_6_with_drain():
    r = gemm(2, 2, 2, rows=2, cols=2, dataflow=Dataflow.OS)  # 2 + 2 + 2 - 2 = 4; + 2 = 6
    assert (r.compute_cycles, r.compute_cycles_with_drain, r.last_cycle_index) == (4, 6, 3)


def test_ws_single_fold_counts_weight_load():
    r = gemm(4, 3, 3, rows=4, cols=4, dataflow="ws")  # Sr = K = 3, Sc = N = 3, T = M = 4: 2*4 + 4 + 4 - 2
    assert (r.compute_cycles, r.folds, r.drain_cycles) == (14, 1, 0)
    assert r.mapping_efficiency == pytest.approx(9 / 16)  # a 3x3 weight tile in a 4x4 array
    assert r.utilization == pytest.approx(4 * 3 * 3 / (16 * 14))


def test_is_multi_fold_cycles_and_sram_traffic():
    # IS: Sr = K = 7 -> 2 row folds, Sc = M = 10 -> 3 col folds, T = N = 5; per fold 2*4 + 4 + 5 - 2 = 15
    r = gemm(10, 7, 5, rows=4, cols=4, dataflow="is")
    assert (r.row_folds, r.col_folds, r.cycles_per_fold, r.compute_cycles) == (2, 3, 15, 90)
    assert r.ifmap_sram_reads == 10 * 7  # X is stationary: each word once
    assert r.filter_sram_reads == 3 * 7 * 5  # W streams once per column fold
    assert r.sram_writes == 2 * 10 * 5  # partial sums written once per K (row) fold
    assert r.mapping_efficiency == pytest.approx(7 * 10 / (6 * 16))


def test_os_multi_fold():
    # OS: Sr = M = 5 -> 3 row folds on 2 rows, Sc = N = 6 -> 2 col folds on 3 cols, T = K = 7
    r = gemm(5, 7, 6, rows=2, cols=3, dataflow="os")  # 6 folds * (2 + 3 + 7 - 2)
    assert (r.folds, r.compute_cycles, r.drain_cycles) == (6, 60, 12)
    assert (r.ifmap_sram_reads, r.filter_sram_reads, r.sram_writes) == (2 * 35, 3 * 42, 30)


def test_pipelined_folds_overlap_the_tile_load():
    # WS 300x128x256 on 128x128: 1 x 2 folds, per fold 2*128 + 128 + 300 - 2 = 682
    back_to_back = gemm(300, 128, 256, rows=128, cols=128, dataflow="ws")
    pipelined = gemm(300, 128, 256, rows=128, cols=128, dataflow="ws", pipelined=True)
    assert back_to_back.compute_cycles == 2 * 682
    assert pipelined.compute_cycles == 682 + max(300, 128)


def test_stalls_when_bandwidth_is_low():
    # WS 4x4x4 on 4x4: 2*4 + 4 + 4 - 2 = 14 compute cycles; DRAM 16 + 16 + 16 = 48 words at 1 word/cycle
    r = gemm(4, 4, 4, rows=4, cols=4, dataflow="ws", bandwidth=1)
    assert (r.compute_cycles, r.stall_cycles, r.total_cycles, r.dram_bytes) == (14, 34, 48, 48)
    assert gemm(4, 4, 4, rows=4, cols=4, dataflow="ws", bandwidth=100).stall_cycles == 0


def test_small_sram_refetches_from_dram():
    # WS 8x8x8 on 4x4: 2 K folds x 2 N folds. Fits: 64 + 64 + 64 words. Too small: X re-read per
    # column fold (2 * 64), W once (64), partial sums written per K fold (2 * 64) and read back (64)
    fits = gemm(8, 8, 8, rows=4, cols=4, dataflow="ws", sram_kb=SramKB(1, 1, 1))
    tiny = gemm(8, 8, 8, rows=4, cols=4, dataflow="ws", sram_kb=(0.01, 0.01, 0.01))
    assert fits.dram_bytes == 192
    assert tiny.dram_bytes == 128 + 64 + 128 + 64
    assert tiny.compute_cycles == fits.compute_cycles


def test_word_bytes_scale_dram_bytes():
    assert gemm(4, 4, 4, rows=4, cols=4, word_bytes=2).dram_bytes == 2 * 48


def test_conv_im2col_dims():
    layer = ConvLayer(28, 28, 3, 3, 8, 16, 2)  # SCALE-Sim: ceil((28 - 3 + 2) / 2) = 14 (PyTorch: 13)
    assert layer.ofmap_hw == (14, 14)
    assert layer.gemm_mkn == (196, 72, 16)
    assert ConvLayer(7, 7, 3, 3, 1, 1, 2).ofmap_hw == (3, 3)  # stride divides 7 - 3: both agree
    assert parse_conv("28,28,3,3,8,16,2") == layer
    assert parse_conv("5,5,3,3,2,4").stride == 1


def test_to_dict_has_the_stable_export_names():
    d = gemm(4, 3, 3, rows=4, cols=4).to_dict()
    for key in (
        "compute_cycles",
        "stall_cycles",
        "total_cycles",
        "utilization",
        "mapping_efficiency",
        "folds",
        "sram_reads",
        "sram_writes",
        "dram_bytes",
    ):
        assert key in d
    assert d["dataflow"] == "ws"


def test_dataflow_is_an_enum_with_scalesim_mappings():
    assert parse_dataflow("WS") is Dataflow.WS
    assert (Dataflow.OS.mapping.rows, Dataflow.OS.mapping.cols, Dataflow.OS.mapping.time) == ("m", "n", "k")
    assert (Dataflow.WS.mapping.rows, Dataflow.WS.mapping.cols, Dataflow.WS.mapping.time) == ("k", "n", "m")
    assert (Dataflow.IS.mapping.rows, Dataflow.IS.mapping.cols, Dataflow.IS.mapping.time) == ("k", "m", "n")


@pytest.mark.parametrize(
    "call",
    [
        lambda: gemm(0, 3, 3, rows=4, cols=4),
        lambda: gemm(4, 3, 3, rows=4, cols=0),
        lambda: gemm(4, 3, 3, rows=4, cols=4, dataflow="xs"),
        lambda: gemm(4, 3, 3, rows=4, cols=4, bandwidth=-1),
        lambda: gemm(4, 3, 3, rows=4, cols=4, sram_kb=(1, 0, 1)),
        lambda: ConvLayer(2, 2, 3, 3, 1, 1),
        lambda: parse_conv("1,2,3"),
    ],
)
def test_bad_values_are_one_line_errors(call):
    with pytest.raises(DfxError) as info:
        call()
    assert "\n" not in str(info.value)
