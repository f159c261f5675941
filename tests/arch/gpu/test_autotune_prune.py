"""The pruned GEMM autotune (branch and bound, ``autotune_gemm``) keeps exactly the full search's winner.

Reference: ``_autotuned_gemm_full`` times every fitting config (``gemm_kernels`` then
``autotune_pick``), as the autotune did before pruning. Random GEMMs (decode-skinny to large,
batched, fp32/bf16/fp8-ish widths) on every GPU profile; the plans must be equal field by field,
floats included; and every config the pruned search skips is slower than the best by more than
the tie tolerance (so it could neither win nor tie).
"""

from __future__ import annotations

import random

import pytest

from dfx.arch.gpu import kernel as K
from dfx.arch.gpu.plan import _autotuned_gemm, _autotuned_gemm_full, _split_k, split_k_factor
from dfx.hardware import list_profiles

GPUS = [p for p in list_profiles() if p.simt is not None]
DTYPES = ["bfloat16", "float16", "float32"]


def _size(rng: random.Random) -> int:
    return rng.choice(
        [1, 2, 3, 7, 8, 16, 31, 64, 100, 128, 768, 1000, 2304, 3072, 4096, 11008, 14336, rng.randint(1, 20000)]
    )


@pytest.mark.skipif(not GPUS, reason="no GPU profile with a simt section")
def test_pruned_autotune_picks_the_full_searchs_plan() -> None:
    rng = random.Random(17)
    cases = 0
    for _ in range(1500):
        profile = rng.choice(GPUS)
        m, k, n = _size(rng), _size(rng), _size(rng)
        batch = rng.choice([1, 1, 1, 2, 12, 32])
        dtype = rng.choice(DTYPES)
        try:
            full = _autotuned_gemm_full(m, k, n, dtype, profile, batch)
        except Exception as exc:  # the pruned search must fail the same way
            with pytest.raises(type(exc)):
                _autotuned_gemm(m, k, n, dtype, profile, batch)
            continue
        assert _autotuned_gemm(m, k, n, dtype, profile, batch) == full, (profile.id, m, k, n, batch, dtype)
        cases += 1
    assert cases > 1000


@pytest.mark.skipif(not GPUS, reason="no GPU profile with a simt section")
def test_skipped_configs_are_slower_than_the_tie_tolerance(monkeypatch) -> None:
    # The configs whose waves the pruned search builds are recorded; the full search times all of them.
    rng = random.Random(5)
    built: list = []
    rows = K._gemm_wave_rows
    monkeypatch.setattr(K, "_gemm_wave_rows", lambda *a: built.append(a[5]) or rows(*a))
    pruned_any = False
    for _ in range(300):
        profile = rng.choice(GPUS)
        m, k, n, batch = _size(rng), _size(rng), _size(rng), rng.choice([1, 4])
        configs = K.fitting_gemm_configs(m, k, n, "bfloat16", profile)
        if not configs:
            continue
        built.clear()
        K.autotune_gemm(
            m,
            k,
            n,
            profile,
            configs,
            dtype="bfloat16",
            batch=batch,
            split_of=lambda programs, block_k, sms, k=k: split_k_factor(programs, k, block_k, sms),
            partial_sum_bytes_per_element=4,
        )
        timed = set(built)
        pruned_any |= len(timed) < len(configs)
        kernels = K.gemm_kernels(m, k, n, profile, configs, dtype="bfloat16", batch=batch)
        full = {c: _split_k(kern, profile)[1] for c, kern in zip(configs, kernels)}
        best = min(full.values())
        winner = configs[K.autotune_pick([(full[c], c) for c in configs])]

        def tie_break(c):  # autotune_pick's: largest output tile, then largest BLOCK_K, then the order given
            return (-c.block_m * c.block_n, -c.block_k, configs.index(c))

        for c, t in full.items():
            if c not in timed:  # skipped: slower than the best by more than the tie tolerance, or tied
                # with it but after the winner in the tie-break order (so it could not be picked)
                assert t > best * 1.01 or tie_break(c) > tie_break(winner), (profile.id, m, k, n, c)
    assert pruned_any  # the bound does prune


@pytest.mark.skipif(not GPUS, reason="no GPU profile with a simt section")
def test_one_wave_gemm_times_at_most_two_configs(monkeypatch) -> None:
    # M = 8, K = N = 768 (a GPT-2 projection at 8 tokens), bf16 on an H100: every fitting config's grid
    # (at most ceil(8/16) * ceil(768/32) = 24 programs) runs in one wave on 132 SMs, so each floor is
    # that wave's time (less the 1e-6 margin); the least floor is the best time, and the search walks
    # the tie-break order from there: the least floor's config is timed, then the first config of
    # that order whose floor ties with it (its time ties too: it is the pick), if it is another.
    h100 = next(p for p in GPUS if p.id == "nvidia-h100-sxm")
    built: list = []
    rows = K._gemm_wave_rows
    monkeypatch.setattr(K, "_gemm_wave_rows", lambda *a: built.append(a[5]) or rows(*a))
    configs = K.fitting_gemm_configs(8, 768, 768, "bfloat16", h100)
    kern, _ = K.autotune_gemm(
        8,
        768,
        768,
        h100,
        configs,
        dtype="bfloat16",
        split_of=lambda programs, block_k, sms: split_k_factor(programs, 768, block_k, sms),
        partial_sum_bytes_per_element=4,
    )
    timed = len(built)
    kernels = K.gemm_kernels(8, 768, 768, h100, configs, dtype="bfloat16")
    assert all(kern_.waves.count == 1 for kern_ in kernels)
    assert kern.config == configs[K.autotune_pick([(_split_k(k_, h100)[1], c) for k_, c in zip(kernels, configs)])]
    assert timed <= 2 < len(configs)


@pytest.mark.skipif(not GPUS, reason="no GPU profile with a simt section")
def test_pruned_autotune_picks_the_full_searchs_plan_with_b_stored_narrower_or_wider() -> None:
    # weight-only quantisation (int4 0.5, fp8 1 byte) and a wider B (fp32 4 bytes) under bf16 compute:
    # the floors still bound every config's time from below, so the pick is the full search's
    rng = random.Random(23)
    cases = 0
    for _ in range(300):
        profile = rng.choice(GPUS)
        m, k, n = _size(rng), _size(rng), _size(rng)
        batch = rng.choice([1, 1, 2, 32])
        b_bytes = rng.choice([0.5, 1, 4])
        try:
            full = _autotuned_gemm_full(m, k, n, "bfloat16", profile, batch, b_bytes)
        except Exception as exc:
            with pytest.raises(type(exc)):
                _autotuned_gemm(m, k, n, "bfloat16", profile, batch, b_bytes)
            continue
        assert _autotuned_gemm(m, k, n, "bfloat16", profile, batch, b_bytes) == full, (profile.id, m, k, n, b_bytes)
        cases += 1
    assert cases > 200
