"""The GPU tiling pass: compiled GPU kernels become Triton programs, and their waves time them."""

import math

import pytest

from dfx.arch.gpu import GemmConfig, choose_gemm_config, gemm_kernel
from dfx.targets import compile_for
from dfx.compile.program import Kernel, KernelKind
from dfx.hardware import load_profile
from dfx.roofline.program import kernel_timing

H100 = load_profile("nvidia-h100-sxm")


def test_gpu_kernels_get_inductors_triton_programs():
    from dfx.analysis import analyze

    costed = analyze("gpt2-block", hardware=[]).costed
    program = compile_for(costed, H100)
    tiling = next(s for s in program.stages if s.name == "tiling")
    assert tiling.modified
    qkv = next(k for k in program.kernels if k.nodes == ("linear",))
    # GPT-2's c_attn: [1024, 768] @ [768, 2304] (batch 1, seq 1024), float32 (the block's dtype)
    cfg = choose_gemm_config(1024, 768, 2304, qkv.dtype, H100)
    assert qkv.tile_shape == (cfg.block_m, cfg.block_n, cfg.block_k)
    assert qkv.tiles == math.ceil(1024 / cfg.block_m) * math.ceil(2304 / cfg.block_n)
    assert qkv.tile_time_s == pytest.approx(gemm_kernel(1024, 768, 2304, H100, dtype=qkv.dtype).time_s)
    attention = next(k for k in program.kernels if k.kind is KernelKind.ATTENTION)
    assert attention.tile_time_s is None and attention.tile_shape == ()  # not modelled: stays one tile


def test_a_wave_tail_adds_time_to_the_compiled_kernel():
    # 1536 x 4096 x 1536 bf16 in 128x128 tiles, one per SM: 144 programs -> a second wave of 12
    # costs a whole tile time: 2 x 134,217,728 / (989.4e12 / 132) + 1.5 us = 37.31 us, where the
    # roofline on all 132 SMs gives 2 * 1536 * 4096 * 1536 / 989.4e12 = 19.53 us + 1.5 us.
    kern = gemm_kernel(1536, 4096, 1536, H100, config=GemmConfig(128, 128, 64, 5, 8))
    k = Kernel(
        "k0",
        (),
        KernelKind.GEMM,
        flops=kern.flops,
        offchip_bytes=3 * 1536 * 4096 * 2,
        tiles=144,
        tile_shape=(128, 128, 64),
        cores=132,
        tile_time_s=kern.time_s,
    )
    timing = kernel_timing(k, {}, H100)
    assert timing.time_s == pytest.approx(2 * 134_217_728 * 132 / 989.4e12 + 1.5e-6)
    untiled = kernel_timing(k.with_(tile_time_s=None), {}, H100)
    assert untiled.time_s < timing.time_s
