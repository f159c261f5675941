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
        for c, t in full.items():
            if c not in timed:  # skipped: slower than the best by more than the tie tolerance
                assert t > best * 1.01, (profile.id, m, k, n, c)
    assert pruned_any  # the bound does prune
