"""Tiling: hand traffic, the chosen tile fits, and its traffic is minimal against brute force."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfx.arch.memory.api import machine_for, tile_gemms
from dfx.arch.memory.gemms import gemms
from dfx.arch.memory.tiling import Gemm, Machine, choose_tile, evaluate_tile, offchip_elements, working_set_bytes
from dfx.errors import DfxError
from dfx.hardware import load_profile


def test_traffic_and_working_set_by_hand():
    # M=4, K=3, N=4 with 2x2 tiles: A read ceil(4/2)=2 times (4*3*2 = 24), B twice (3*4*2 = 24), C once (16)
    assert offchip_elements(4, 3, 4, 2, 2) == 64
    # one tile covering everything: each matrix once, 12 + 12 + 16
    assert offchip_elements(4, 3, 4, 4, 4) == 40
    # double-buffered: 2 B * (2 * (2*3 + 3*2) + 2*2) = 56 B; single: 2 * (12 + 4) = 32 B
    assert working_set_bytes(2, 2, 3, 2) == 56
    assert working_set_bytes(2, 2, 3, 2, double_buffer=False) == 32


def _brute_force(g: Gemm, m: Machine, double_buffer: bool) -> int | None:
    """Least traffic over every (tm, tn, tk) that respects the granules and fits, preferring tiles
    that give each of the ``cores`` an output tile when any does."""

    def sides(dim, granule):
        return [s for s in range(1, dim + 1) if s % granule == 0 or s == dim]

    fits, busy = [], []
    for tm, tn, tk in itertools.product(sides(g.m, m.granule_m), sides(g.n, m.granule_n), sides(g.k, m.granule_k)):
        if working_set_bytes(tm, tn, tk, g.elem_bytes, double_buffer) <= m.scratchpad_bytes:
            traffic = g.elem_bytes * offchip_elements(g.m, g.k, g.n, tm, tn)
            fits.append(traffic)
            if g.batch * math.ceil(g.m / tm) * math.ceil(g.n / tn) >= m.cores:
                busy.append(traffic)
    return min(busy or fits, default=None)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.integers(1, 12),
    st.sampled_from([1, 2]),
    st.integers(8, 600),
    st.sampled_from([1, 2, 4]),
    st.booleans(),
    st.integers(1, 5),
)
def test_chosen_tile_fits_and_is_minimal_against_brute_force(m, k, n, elem, scratchpad, granule, double_buffer, cores):
    machine = Machine(
        scratchpad,
        cores=cores,
        peak_flop_per_s=1e12,
        offchip_bytes_per_s=1e11,
        granule_m=granule,
        granule_n=granule,
        granule_k=granule,
    )
    g = Gemm(m, k, n, elem)
    best = _brute_force(g, machine, double_buffer)
    if best is None:
        with pytest.raises(DfxError):
            choose_tile(g, machine, double_buffer)
        return
    t = choose_tile(g, machine, double_buffer)
    assert t.working_set_bytes <= scratchpad
    assert t.offchip_bytes == best


def test_good_tile_is_compute_bound_small_tile_memory_bound():
    # TPU v4: ridge 275e12 / 1.2e12 = 229 FLOP/B; 128x128 MXU tiles give 2*4096^3 / (2 * (2*4096^2*32 + 4096^2))
    # = 63 FLOP/B (memory-bound); the whole 128 MiB CMEM as one tile gives > 1,000 FLOP/B (compute-bound).
    report = tile_gemms([Gemm(4096, 4096, 4096, 2)], "google-tpu-v4")
    chosen, small = report.chosen[0], report.small[0]
    assert (small.tm, small.tn, small.tk) == (128, 128, 128)
    assert small.offchip_bytes == 2 * (2 * 4096**2 * 32 + 4096**2)
    assert small.intensity == pytest.approx(2 * 4096**3 / (2 * (2 * 4096**2 * 32 + 4096**2)))
    assert small.bound == "memory" and chosen.bound == "compute"
    assert chosen.intensity > 275e12 / 1.2e12 > small.intensity


def test_spyre_scratchpad_caps_intensity():
    # Spyre: 2 MB per core, 150 GB/s, 8x8 arrays. 8x8 tiles re-read A and B 512 times: ~4 FLOP/B.
    # A square t x t output tile reaches ~t/2 FLOP/B at 2 B per element, and t^2 * 2 B <= 2 MB caps t
    # near 1,000: a core's own tiles cannot pass the 500 FLOP/B ridge without sharing over the ring.
    # Keeping all 32 cores busy (>= 32 output tiles) gives 512 x 1024: 2*4096^3 / (2 * 13 * 4096^2) = 315 FLOP/B.
    report = tile_gemms([Gemm(4096, 4096, 4096, 2)], "ibm-spyre", dtype="fp16")
    chosen, small = report.chosen[0], report.small[0]
    assert small.offchip_bytes == 2 * (2 * 4096**2 * 512 + 4096**2)
    assert small.bound == "memory"
    assert chosen.working_set_bytes <= 2e6
    assert 50 * small.intensity < chosen.intensity < 75e12 / 150e9
    assert chosen.time_s < small.time_s / 50


def test_double_buffering_costs_capacity():
    g = Gemm(2048, 2048, 2048, 2)
    db = tile_gemms([g], "ibm-spyre", double_buffer=True).chosen[0]
    sb = tile_gemms([g], "ibm-spyre", double_buffer=False).chosen[0]
    assert sb.offchip_bytes <= db.offchip_bytes


def test_time_divides_work_across_cores():
    machine = Machine(1e9, cores=4, peak_flop_per_s=4e12, offchip_bytes_per_s=1e30)
    t = evaluate_tile(Gemm(8, 10, 8, 2), machine, 4, 4, 10)
    # 4 output tiles on 4 cores: one wave of 2*4*4*10 = 320 FLOPs at 1e12 FLOP/s per core
    assert t.compute_time_s == pytest.approx(320 / 1e12)
    assert t.time_s == pytest.approx(2 * 8 * 10 * 8 / 4e12)


def test_machine_for_spyre():
    m = machine_for(load_profile("ibm-spyre"), "float16")
    assert (m.scratchpad_bytes, m.cores, m.granule_m) == (2e6, 32, 8)
    assert m.offchip_bytes_per_s == 150e9 and m.peak_flop_per_s == 75e12


def test_gemms_of_a_model(gpt2_small):
    found = gemms(gpt2_small)
    # GPT-2 block at seq 64: c_attn 64x768x2304, attention QK^T and PV as 12 bmm each, c_proj, fc, proj
    shapes = [(g.m, g.k, g.n, g.batch) for g in found]
    assert (64, 768, 2304, 1) in shapes and (64, 64, 64, 12) in shapes and (64, 3072, 768, 1) in shapes
    assert sum(g.flops for g in found) == gpt2_small.flops_by_category()["matmul"]
    report = tile_gemms(found, "ibm-spyre")
    assert all(c.working_set_bytes <= c.scratchpad_bytes for c in report.chosen)
    assert all(c.offchip_bytes <= s.offchip_bytes for c, s in zip(report.chosen, report.small))
    assert math.isfinite(sum(c.time_s for c in report.chosen))


def _choose_by_records(gemm: Gemm, machine: Machine) -> tuple[int, int, int]:
    """The reference ranking: each candidate tile as an evaluate_tile record, the least (offchip bytes,
    time, |tm - tn|) among those giving every core work (all candidates if none does)."""
    from dfx.arch.memory.tiling import _candidates, _sides

    tk = min(gemm.k, machine.granule_k)
    every = [
        (tm, tn, tk)
        for tm in _sides(gemm.m, machine.granule_m)
        for tn in _sides(gemm.n, machine.granule_n)
        if working_set_bytes(tm, tn, tk, gemm.elem_bytes) <= machine.scratchpad_bytes
    ]
    assert list(_candidates(gemm, machine, True)) == every  # the search stops early, never skips a fitting tile
    fitting = [evaluate_tile(gemm, machine, tm, tn, tk) for tm, tn, tk in every]
    busy = [c for c in fitting if gemm.batch * math.ceil(gemm.m / c.tm) * math.ceil(gemm.n / c.tn) >= machine.cores]
    best = min(busy or fitting, key=lambda c: (c.offchip_bytes, c.time_s, abs(c.tm - c.tn)))
    return best.tm, best.tn, best.tk


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 300),
    k=st.integers(1, 300),
    n=st.integers(1, 300),
    batch=st.integers(1, 3),
    cores=st.integers(1, 40),
    granule=st.sampled_from([1, 8, 16]),
    scratch_kib=st.integers(4, 512),
)
def test_chosen_tile_is_the_least_of_every_fitting_record(m, k, n, batch, cores, granule, scratch_kib):
    """choose_tile ranks the candidates by arithmetic (no record per tile): it must pick the tile the
    records rank first (min keeps the first of equal keys, as the search does)."""
    gemm, machine = (
        Gemm(m, k, n, batch=batch),
        Machine(scratch_kib * 1024, cores, 1e12, 1e11, granule, granule, granule),
    )
    try:
        chosen = choose_tile(gemm, machine)
    except DfxError:
        return  # not even one granule fits: nothing to compare
    assert (chosen.tm, chosen.tn) == _choose_by_records(gemm, machine)[:2]


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 300),
    k=st.integers(1, 300),
    n=st.integers(1, 300),
    cores=st.integers(1, 40),
    granule=st.sampled_from([1, 8, 16]),
    scratch=st.integers(64, 300_000),
    fraction=st.sampled_from([0.25, 0.5, 0.999]),
)
def test_a_fractional_scratchpad_fits_what_its_whole_bytes_fit(m, k, n, cores, granule, scratch, fraction):
    """A working set is a whole number of bytes, so it fits ``scratch + fraction`` exactly when it fits
    ``scratch``: the search (which takes the fitting prefix of a row in closed form, to the floor of
    the scratchpad) picks the same tile on both."""
    gemm = Gemm(m, k, n)

    def pick(capacity):
        try:
            t = choose_tile(gemm, Machine(capacity, cores, 1e12, 1e11, granule, granule, granule))
        except DfxError:
            return None
        return t.tm, t.tn, t.tk

    assert pick(scratch + fraction) == pick(scratch)


def test_largest_square_bf16_tile_with_an_fp32_accumulator_in_1_mib():
    # 1 MiB = 1,048,576 B. Double-buffered bf16 input tiles t x 8 and 8 x t, an fp32 t x t accumulator:
    #   2 B * 2 buffers * (8t + 8t) + 4 B * t^2 = 64t + 4t^2 <= 1,048,576
    #   t^2 + 16t <= 262,144  ->  (t + 8)^2 <= 262,208  ->  t <= 512.06 - 8 = 504.06  ->  t = 504 (a multiple of 8)
    # (504: 64*504 + 4*504^2 = 1,048,320 fits; 512: 32,768 + 1,048,576 does not.) Held at bf16 instead:
    #   64t + 2t^2 <= 1,048,576  ->  (t + 16)^2 <= 524,544  ->  t <= 708.2  ->  704 (a multiple of 8)
    from dfx.arch.memory.tiling import largest_square_tile

    mib = 1 << 20
    assert largest_square_tile(mib, 2, 4, 8, 8) == 504
    assert largest_square_tile(mib, 2, 2, 8, 8) == 704
    assert working_set_bytes(504, 504, 8, 2, acc_bytes=4) == 1_048_320 <= mib
    assert working_set_bytes(512, 512, 8, 2, acc_bytes=4) > mib
    # choose_tile's pick fits with the fp32 accumulator counted
    machine = Machine(mib, 1, 1e12, 1e11, 8, 8, 8)
    t = choose_tile(Gemm(4096, 4096, 4096, 2, acc_bytes=4), machine)
    assert t.working_set_bytes == working_set_bytes(t.tm, t.tn, t.tk, 2, acc_bytes=4) <= mib
    assert t.tm * t.tn * 4 <= mib - 2 * 2 * 8 * (t.tm + t.tn)


def test_the_accumulator_width_is_the_closed_form_search():
    # the closed-form search equals a brute force over every fitting tile with a 4-byte accumulator
    # (one core: every tile gives it work)
    machine = Machine(64 * 1024, 1, 1e12, 1e11, 8, 8, 8)
    g = Gemm(200, 96, 136, 2, acc_bytes=4)
    fits = [
        evaluate_tile(g, machine, tm, tn, 8)
        for tm in range(8, 201, 8)
        for tn in range(8, 137, 8)
        if working_set_bytes(tm, tn, 8, 2, acc_bytes=4) <= machine.scratchpad_bytes
    ]
    best = min(c.offchip_bytes for c in fits)
    chosen = choose_tile(g, machine)
    assert chosen.offchip_bytes == best and chosen.working_set_bytes <= machine.scratchpad_bytes


def test_dfx_tile_defaults_to_an_fp32_accumulator_for_bf16():
    from dfx.arch.memory.api import tile_gemms

    g = Gemm(4096, 4096, 4096, 2)
    fp32 = tile_gemms([g], "ibm-spyre", dtype="bf16")
    bf16 = tile_gemms([g], "ibm-spyre", dtype="bf16", acc_dtype="bf16")
    assert fp32.acc_dtype == "float32" and fp32.chosen[0].gemm.accumulator_bytes == 4
    c = fp32.chosen[0]
    assert c.working_set_bytes == working_set_bytes(c.tm, c.tn, c.tk, 2, acc_bytes=4) <= 2e6
    assert bf16.chosen[0].gemm.accumulator_bytes == 2
    assert tile_gemms([g], "ibm-spyre", dtype="fp32").acc_dtype == "float32"
