"""The GPU model as the compile stage calls it: tiles and times of compiled kernels."""

import pytest

from dfx.arch.gpu.plan import gemm_plan, kernel_plan, pointwise_plan, reduction_plan
from dfx.hardware import load_profile

H100 = load_profile("nvidia-h100-sxm")


def test_plans_by_hand():
    # 4096^3 bf16: Inductor's (128, 256, 64, 4, 8) is the chooser's pick (ties broken to the largest
    # output tile): 32 x 16 = 512 programs, 1 per SM, ceil(512 / 132) = 4 waves.
    p = gemm_plan(4096, 4096, 4096, "bf16", H100)
    assert (p.tiles, p.tile_shape, p.blocks_per_sm, p.waves) == (512, (128, 256, 64), 1, 4)
    # a fused pointwise kernel over 2**20 elements moving 8 MiB (say 3 inputs and 1 output in bf16):
    # XBLOCK 1024 -> 1,024 programs; 8 MiB / 3.35 TB/s = 2.504 us + 1.5 us
    p = pointwise_plan(1 << 20, 8 * 2**20, 1 << 20, "bf16", H100)
    assert (p.tiles, p.tile_shape) == (1024, (1024,))
    assert p.time_s == pytest.approx(8 * 2**20 / 3.35e12 + 1.5e-6)
    # softmax-like reduction of 8192 rows of 1000: persistent (<= 1024), R0_BLOCK 1024, XBLOCK
    # min(1024 // 1024, 8) = 1 on one warp -> 8,192 programs
    p = reduction_plan(8192, 1000, 2 * 8192 * 1000 * 2, 5 * 8192 * 1000, "bf16", H100)
    assert (p.tiles, p.tile_shape, p.num_warps) == (8192, (1, 1024), 1)


def test_kernel_plan_on_a_compiled_graph():
    from dfx.analysis import analyze
    from dfx.compile import lower_eager

    costed = analyze("mlp", hardware=[]).costed
    program = lower_eager(costed, H100)
    by_name = {n.name: n for n in costed.nodes}
    plans = {
        k.kind.value: kernel_plan(k.kind.value, [by_name[n] for n in k.nodes], k.offchip_bytes, k.flops, k.dtype, H100)
        for k in program.kernels
    }
    assert plans["gemm"] is not None and plans["gemm"].tiles >= 1
    tpu = load_profile("google-tpu-v4")  # no simt section: the model does not apply
    k = program.kernels[0]
    assert kernel_plan(k.kind.value, [by_name[n] for n in k.nodes], k.offchip_bytes, k.flops, k.dtype, tpu) is None
    assert kernel_plan("attention", [by_name[n] for n in k.nodes], k.offchip_bytes, k.flops, k.dtype, H100) is None


def test_a_decode_gemm_is_split_over_k_to_fill_the_sms_and_streams_its_weights_at_hbm_speed():
    # Llama decode projection on an A100: [1, 4096] @ [4096, 4096] bf16. Its weights are
    # 4096 * 4096 * 2 B = 33,554,432 B; at 2.039 TB/s that is 16.46 us of HBM time, whatever the tiles.
    from dfx.arch.gpu.plan import gemm_plan
    from dfx.hardware import load_profile

    a100 = load_profile("nvidia-a100-sxm-80gb")
    plan = gemm_plan(1, 4096, 4096, "bf16", a100)
    assert plan.config["split_k"] > 1
    assert plan.tiles >= 108  # split-K fills the A100's 108 SMs instead of leaving most idle
    weights_s = 4096 * 4096 * 2 / 2.039e12
    assert weights_s <= plan.time_s - a100.op_overhead_s <= 1.5 * weights_s


def test_more_rows_never_make_a_skinny_gemm_faster():
    # M = 1, 4, 16, 32 rows (decode batches) of the same [4096, 14336] weight: the work only grows, so
    # must the time. Without split-K, M = 1 ran on a few SMs and came out slower than M = 32.
    from dfx.arch.gpu.plan import gemm_plan
    from dfx.hardware import load_profile

    h100 = load_profile("nvidia-h100-sxm")
    times = [gemm_plan(m, 4096, 14336, "bf16", h100).time_s for m in (1, 4, 16, 32)]
    assert times == sorted(times)


def test_a_decode_gemv_whose_weight_bytes_halve_takes_half_the_memory_time():
    # [8, 4096] @ [4096, 4096] on an H100 (HBM 3.35 TB/s, op overhead 1.5 us), A and C in bf16, B (the
    # weight) stored at b bytes per element and dequantised after the load (weight-only quantisation).
    # One wave, panels within L2 (50 MB): the wave reads A, B and writes C once, so
    #   time - overhead - split-K partial sums = (8*4096*2 + 4096*4096*b + 8*4096*2) / 3.35e12
    #   b = 2 (bf16): 65,536 + 33,554,432 + 65,536 = 33,685,504 B -> 10.055 us
    #   b = 1 (fp8):  65,536 + 16,777,216 + 65,536 = 16,908,288 B ->  5.047 us
    #   b = 0.5 (int4): 65,536 + 8,388,608 + 65,536 = 8,519,680 B ->  2.543 us
    # partial sums: 2 * (split - 1) * 8 * 4096 * 4 B (fp32), the split the plan chose.
    bw = 3.35e12
    memory_s = {}
    for b, nbytes in ((2, 33_685_504), (1, 16_908_288), (0.5, 8_519_680)):
        plan = gemm_plan(8, 4096, 4096, "bf16", H100, b_bytes=b)
        partial_s = 2 * (plan.config["split_k"] - 1) * 8 * 4096 * 4 / bw
        memory_s[b] = plan.time_s - 1.5e-6 - partial_s
        assert memory_s[b] == pytest.approx(nbytes / bw, rel=1e-9)
    assert memory_s[1] / memory_s[2] == pytest.approx(16_908_288 / 33_685_504)  # 0.502: halves with B
    assert memory_s[0.5] / memory_s[1] == pytest.approx(8_519_680 / 16_908_288)  # 0.504
    # no b_bytes: B at the operand dtype's width, the same plan as b = 2, bit for bit
    assert gemm_plan(8, 4096, 4096, "bf16", H100) == gemm_plan(8, 4096, 4096, "bf16", H100, b_bytes=2)


def test_a_compute_bound_gemm_does_not_speed_up_with_narrower_weights():
    # 4096^3 in bf16 is compute-bound on an H100 (2 * 4096^3 = 137.4 GFLOP / 989.4 TFLOP/s = 138.9 us,
    # its bytes 3 * 4096^2 * 2 = 100.7 MB / 3.35 TB/s = 30 us): int4 weights save bytes, not FLOPs.
    bf16 = gemm_plan(4096, 4096, 4096, "bf16", H100)
    int4 = gemm_plan(4096, 4096, 4096, "bf16", H100, b_bytes=0.5)
    assert int4.time_s >= 2 * 4096**3 / 989.4e12
    assert int4.time_s == pytest.approx(bf16.time_s, rel=0.02)
