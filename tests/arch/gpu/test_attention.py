"""dfx triton --attention: the FlashAttention forward of Triton's fused-attention tutorial, by hand."""

import json
import subprocess
import sys

import pytest

from dfx.arch.gpu.attention import AttentionConfig, attention_kernel
from dfx.errors import DfxError
from dfx.hardware import load_profile

H100 = load_profile("nvidia-h100-sxm")


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


def test_b2_h16_s4096_block_m128_is_1024_programs():
    k = attention_kernel(2, 16, 4096, 64, H100, config=AttentionConfig(block_m=128, block_n=64))
    # grid = (cdiv(4096, 128), 2 * 16) = (32, 32): 32 * 32 = 1,024 programs
    assert k.grid == (32, 32, 1) and k.programs == 1024
    # each loops over the keys cdiv(4096, 64) = 64 times
    assert k.kv_iterations == 64
    # shared memory: Q block 128*64 + 3 stages x (K + V) 2 * 64*64 = 8,192 + 24,576 = 32,768 elements x 2 B
    assert k.shared_memory_bytes == 65_536
    # 2 matmuls x 2 FLOPs x B*H*S*S*D = 4 * 2 * 16 * 4096^2 * 64 FLOPs; Q, K, V, O once: 4 * 2*16*4096*64 * 2 B
    assert k.flops == 4 * 2 * 16 * 4096**2 * 64 and k.hbm_bytes == 4 * 2 * 16 * 4096 * 64 * 2


def test_occupancy_and_waves_by_hand():
    # D = 128, defaults 128 x 64, 8 warps, 3 stages: smem (128*128 + 3*2*64*128) * 2 B = 131,072 B;
    # + 1 KiB reserve = 132,096 B, 228 KiB // that = 1 program per SM; 1,024 programs on 132 SMs:
    # ceil(1024 / 132) = 8 waves, the last with 1024 - 7*132 = 100
    k = attention_kernel(2, 16, 4096, 128, H100)
    assert k.shared_memory_bytes == 131_072 and k.occupancy.blocks_per_sm == 1
    assert k.waves.count == 8 and k.waves.tail_programs == 100
    # registers: (128*128 + 128*64) / 256 threads = 96 + 32 = 128
    assert k.registers_per_thread == 128
    # each wave is compute-bound: 8 rounds of 4*128*4096*128 FLOPs at 989.4e12 / 132 per SM, + 1.5 us
    per_program = 4 * 128 * 4096 * 128 / (989.4e12 / 132)
    assert k.time_s == pytest.approx(8 * per_program + 1.5e-6)


def test_the_command_line():
    r = dfx("triton", "--attention", "2,16,4096,128", "--hw", "h100", "--block", "128,64", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == "attention" and doc["grid"] == [32, 32, 1] and doc["programs"] == 1024
    assert doc["program"]["kv_loop_iterations"] == 64 and doc["shared_memory_per_program_bytes"] == 131_072
    text = dfx("triton", "--attention", "2,16,4096,128").stdout
    assert "1024 programs" in text and "loops 64 times" in text


def test_a_program_too_big_for_shared_memory_is_refused():
    # (256*256 + 4 * 2 * 128*256) * 2 B = 655,360 B > 227 KiB a block may use
    with pytest.raises(DfxError, match="shared memory"):
        attention_kernel(1, 1, 1024, 256, H100, config=AttentionConfig(256, 128, 8, 4))


def test_mi300x_takes_the_tutorials_one_hip_stage_so_the_readme_command_runs():
    # The README's `dfx triton --attention 2,16,4096,128 --hw amd-mi300x` was refused: 3 stages need
    # (128*128 + 3*2*64*128) * 2 B = 131,072 B of LDS, over the 65,536 B a workgroup may use. Triton's
    # tutorial runs num_stages=1 under HIP: (128*128 + 1*2*64*128) * 2 B = 65,536 B, 1 program per CU.
    mi300x = load_profile("amd-mi300x")
    k = attention_kernel(2, 16, 4096, 128, mi300x)
    assert k.config.num_stages == 1 and k.shared_memory_bytes == 65_536 and k.occupancy.blocks_per_sm == 1
    # 8 wavefronts x 64 lanes = 512 threads: ceil((128*128 + 128*64) / 512) + 32 = 48 + 32 = 80 registers
    assert k.registers_per_thread == 80
    # 1,024 programs on 304 CUs: ceil(1024 / 304) = 4 waves, the last 1024 - 3*304 = 112
    assert k.waves.count == 4 and k.waves.tail_programs == 112
    r = dfx("triton", "--attention", "2,16,4096,128", "--hw", "amd-mi300x", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["config"]["num_stages"] == 1
    # asked for 3 stages, the LDS limit still refuses it, in one line
    r = dfx("triton", "--attention", "2,16,4096,128", "--hw", "amd-mi300x", "--stages", "3")
    assert r.returncode == 2 and "131072 B of shared memory per block exceed the 65536 B" in r.stderr
    # the H100 keeps the tutorial's CUDA default, 3 stages (131,072 B)
    assert attention_kernel(2, 16, 4096, 128, H100).config.num_stages == 3
