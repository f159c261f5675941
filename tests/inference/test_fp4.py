"""FP4 (E2M1) weights and activations: block scales priced as their bytes, the B200's fp4 peak."""

import math

import dfx
from dfx.costs.precision import STORAGE_BITS, Precision, bytes_per_element

# llama-layer (Llama-2-7B layer): matmul weights 4 * 4096^2 (q, k, v, o) + 3 * 4096 * 11008 (SwiGLU)
MATMUL_WEIGHTS = 4 * 4096 * 4096 + 3 * 4096 * 11008  # 202,375,168 elements


def _decode(hw, **kw):
    return dfx.analyze("llama-layer", hardware=hw, phase="decode", kv_len=16, **kw)


def test_fp4_widths_include_their_scales():
    # NVFP4: 4-bit E2M1 + one 8-bit E4M3 scale per 16 elements = 4.5 bits
    # MXFP4 (OCP MX v1.0): 4-bit E2M1 + one 8-bit E8M0 scale per 32 elements = 4.25 bits
    assert STORAGE_BITS["nvfp4"] == 4 + 8 / 16 and STORAGE_BITS["mxfp4"] == 4 + 8 / 32
    assert Precision.of("bf16", "fp4").weight == "nvfp4"  # "fp4" is the B200's NVFP4
    assert bytes_per_element("fp4") == 0.5625 and bytes_per_element("mxfp4") == 0.53125


def test_fp4_weights_read_their_bytes_and_scales():
    bf16 = _decode(["nvidia-b200"], dtype="bf16")
    nv = _decode(["nvidia-b200"], dtype="bf16", weight_dtype="fp4")
    mx = _decode(["nvidia-b200"], dtype="bf16", weight_dtype="mxfp4")
    # each weight read once per step: 2 bytes at bf16, 4.5/8 = 0.5625 at NVFP4, 4.25/8 = 0.53125 at MXFP4
    assert bf16.costed.total.bytes_read - nv.costed.total.bytes_read == MATMUL_WEIGHTS * (2 - 0.5625)
    assert bf16.costed.total.bytes_read - mx.costed.total.bytes_read == MATMUL_WEIGHTS * (2 - 0.53125)
    assert nv.model["precision"]["weight_bytes"] == math.ceil(nv.costed.unique_parameter_count() * 4.5 / 8)
    # weight-only: the matmuls compute in bf16, at the bf16 peak
    assert nv.hardware[0].dtype_fallbacks == {}


def test_fp4_activations_use_the_b200_fp4_peak_or_say_it_is_missing():
    r = _decode(["nvidia-b200", "nvidia-h100-sxm"], dtype="fp4")
    b200, h100 = r.hardware
    linear = next(n.name for n in r.costed.nodes if n.category.value == "matmul" and n.node.params)
    assert b200.node(linear).peak_dtype == "float4_e2m1fn_x2"  # 9 PFLOP/s dense on the B200
    assert h100.node(linear).peak_dtype == "float8_e4m3fn"  # Hopper has no fp4 tensor cores: fp8, reported
    assert h100.dtype_fallbacks.get("float4_e2m1fn_x2") == "float8_e4m3fn"
