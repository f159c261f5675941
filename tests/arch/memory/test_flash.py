"""FlashAttention IO: Theta(N^2 d^2 / M) in M, hand counts, and the case study's tiling per machine."""

from __future__ import annotations

import pytest

from dfx.arch.memory.casestudy import AttentionBlock, attention_on_chip, render_case_study
from dfx.arch.memory.flash import flash_accesses, flash_blocks, standard_accesses
from dfx.hardware import load_profile


@pytest.mark.parametrize("m_elems", [8192, 16384, 32768, 65536])
def test_doubling_m_halves_flash_accesses(m_elems):
    n, d = 8192, 64  # N^2 d^2 / M >= 2.7e8 >> N d = 5.2e5 over this range
    ratio = flash_accesses(n, d, m_elems) / flash_accesses(n, d, 2 * m_elems)
    assert ratio == pytest.approx(2.0, rel=0.05)


def test_flash_accesses_track_n2d2_over_m():
    n, d = 8192, 64
    for m in (8192, 32768, 131072):
        # ~ 12 N^2 d^2 / M (T_c = 4Nd/M outer steps, each moving 3Nd elements)
        assert flash_accesses(n, d, m) == pytest.approx(12 * n * n * d * d / m, rel=0.1)


def test_counts_by_hand():
    assert standard_accesses(1024, 64) == 4 * 1024 * 64 + 4 * 1024**2
    assert flash_blocks(1024, 64, 16384) == (64, 64)  # B_c = 16384 / 256 = 64, B_r = min(64, 64)
    # T_c = 1024 / 64 = 16: 2*1024*64 + 16 * (3*1024*64 + 4*1024)
    assert flash_accesses(1024, 64, 16384) == 131072 + 16 * (196608 + 4096)
    assert flash_accesses(1024, 64, 16384) < standard_accesses(1024, 64)


def test_case_study_spyre_vs_tpu():
    block = AttentionBlock(seq=4096, heads=16, head_dim=64, batch=1, dtype="bfloat16")
    spyre = attention_on_chip(block, load_profile("ibm-spyre"))
    tpu = attention_on_chip(block, load_profile("google-tpu-v4"))
    # Spyre: M = 2 MB / 2 B = 1e6 elements; B_c = ceil(1e6 / 256) = 3907 -> 3904 (multiple of 8); T_c = 2
    assert (spyre.block_rows, spyre.block_cols, spyre.outer_steps) == (64, 3904, 2)
    assert spyre.working_set_bytes <= spyre.m_bytes and spyre.utilisation == 1.0
    # TPU v4: 128 MiB CMEM / 2 cores; B_c covers N; d = 64 fills half of the MXU's 128 rows
    assert (tpu.block_cols, tpu.outer_steps, tpu.utilisation) == (4096, 1, 0.5)
    # traffic: 16 heads * (2Nd + T_c (3Nd + 4N)) * 2 B
    assert spyre.flash_offchip_bytes == 16 * (2 * 4096 * 64 + 2 * (3 * 4096 * 64 + 4 * 4096)) * 2
    assert spyre.flash_offchip_bytes < spyre.standard_offchip_bytes
    text = render_case_study([spyre, tpu])
    assert "## ibm-spyre" in text and "## google-tpu-v4" in text and "Why they differ" in text
