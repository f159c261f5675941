"""Weight, activation and KV-cache precision: bytes at each width, peaks at the activation dtype."""

import pytest

import dfx
from dfx.costs.precision import STORAGE_BITS, Precision, bytes_per_element
from dfx.errors import DfxError

# llama-layer (Llama-2-7B layer): matmul weights 4 * 4096^2 (q, k, v, o) + 3 * 4096 * 11008 (SwiGLU)
MATMUL_WEIGHTS = 4 * 4096 * 4096 + 3 * 4096 * 11008  # 202,375,168 elements (the params less 2 norms of 4096)


def _decode(**kw):
    return dfx.analyze(
        "llama-layer", hardware=["nvidia-h100-sxm", "nvidia-a100-sxm-80gb"], phase="decode", kv_len=16, **kw
    )


def test_widths_come_from_the_table():
    assert STORAGE_BITS["int4"] == 4 and bytes_per_element("int4") == 0.5
    assert bytes_per_element("fp8") == 1 and bytes_per_element("bf16") == 2 and bytes_per_element("fp32") == 4
    p = Precision.of("bf16", "int4", "fp8")
    assert (p.activation, p.weight, p.kv, p.capture) == ("bfloat16", "int4", "float8_e4m3fn", "bfloat16")
    assert Precision.of("fp8").capture == "bfloat16"  # fp8 activations are re-priced from a bf16 capture


def test_int4_weights_read_a_quarter_of_bf16():
    bf16 = _decode(dtype="bf16")
    int4 = _decode(dtype="bf16", weight_dtype="int4")
    # each weight is read once per step: 2 bytes at bf16, 0.5 at int4 -> 1.5 bytes saved per element
    saved = bf16.costed.total.bytes_read - int4.costed.total.bytes_read
    assert saved == MATMUL_WEIGHTS * 3 // 2  # 303,562,752
    assert int4.costed.total.flops == bf16.costed.total.flops
    # weight-only quantization computes at the activation dtype: bf16 peaks, no fallback
    assert int4.hardware[0].dtype_fallbacks == {}
    assert int4.model["precision"]["weight_bytes"] == int4.costed.unique_parameter_count() // 2


def test_fp8_kv_cache_halves_the_cache_reads():
    bf16 = _decode(dtype="bf16")
    fp8 = _decode(dtype="bf16", kv_dtype="fp8")
    cache = 2 * 32 * 16 * 128 * 2  # K and V x 32 heads x 16 tokens x 128 x 2 bytes = 262,144
    assert bf16.inference.kv_cache_bytes == cache and fp8.inference.kv_cache_bytes == cache // 2
    assert bf16.costed.total.bytes_read - fp8.costed.total.bytes_read == cache // 2


def test_fp8_activations_use_the_fp8_peak_or_say_it_is_missing():
    fp8 = _decode(dtype="fp8")
    h100, a100 = fp8.hardware
    linear = next(n.name for n in fp8.costed.nodes if n.category.value == "matmul" and n.node.params)
    assert h100.node(linear).peak_dtype == "float8_e4m3fn"  # Hopper has FP8 tensor cores
    assert a100.node(linear).peak_dtype == "bfloat16"  # Ampere has none: the fallback is reported
    assert a100.dtype_fallbacks.get("float8_e4m3fn") == "bfloat16"
    # every activation byte is 1 instead of 2; weights too (weight dtype defaults to the activation's)
    bf16 = _decode(dtype="bf16")
    assert fp8.costed.total.bytes_read < bf16.costed.total.bytes_read * 0.51


def test_weight_dtype_without_a_phase():
    # the PB-05 MLP: every parameter (784*512 + 512 + 512*512 + 512 + 512*10 + 10 = 669,706) belongs
    # to a linear layer, read once: int8 stores 1 byte per element where bf16 stores 2
    bf16 = dfx.analyze("mlp", hardware=["h100"], dtype="bf16")
    int8 = dfx.analyze("mlp", hardware=["h100"], dtype="bf16", weight_dtype="int8")
    assert bf16.costed.total.bytes_read - int8.costed.total.bytes_read == 669_706
    assert int8.model["precision"]["weight_bytes"] == 669_706
    assert "inference" not in int8.to_dict()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dtype": "int4"}, "int4 is a weight format"),
        ({"dtype": "bf16", "weight_dtype": "int3"}, "unknown --weight-dtype 'int3'"),
    ],
)
def test_bad_precisions_are_one_line(kwargs, message):
    with pytest.raises(DfxError, match=message):
        dfx.analyze("mlp", hardware=[], **kwargs)


def test_a_matmul_records_the_stored_width_of_its_weight_or_cache_operand():
    a = _decode(dtype="bf16", weight_dtype="int4", kv_dtype="fp8")
    by_name = {n.name: n for n in a.costed.nodes}
    assert by_name["linear"].b_operand_bits == 4  # q_proj reads its weight as int4
    assert by_name["matmul"].b_operand_bits == 8  # q @ K_cache^T reads the cache as fp8
    assert all(n.b_operand_bits is None for n in a.costed.nodes if n.category.value != "matmul")


def _kernel_time_s(analysis, node: str) -> float:
    (kern,) = [k for k in analysis.hardware[0].program.kernels if node in k.nodes]
    return kern.time_s


@pytest.mark.parametrize("execution_model", ["compiled", "eager"])
def test_gpu_decode_gemm_time_falls_with_the_weight_bytes(execution_model):
    # q_proj of llama-layer at batch 8 on an H100 under its default runtime (back-to-back: HBM's 3.35 TB/s
    # at 84%, 2.814 TB/s; 1.5 us per kernel): a memory-bound GEMV.
    # Its bytes: x [8, 4096] and out [8, 4096] in bf16 (65,536 B each) + the weight 4096 x 4096:
    #   bf16: 33,554,432 B -> 33,685,504 B / 2.814e12 = 11.970 us
    #   int4:  8,388,608 B ->  8,519,680 B / 2.814e12 =  3.028 us
    # time - overhead is these within the split-K partial sums (<= 2 * 2 * 8 * 4096 * 4 B = 0.16 us).
    kw = dict(hardware=["nvidia-h100-sxm"], phase="decode", kv_len=16, batch=8, dtype="bf16")
    kw["execution_model"] = execution_model
    bf16 = dfx.analyze("llama-layer", **kw)
    int4 = dfx.analyze("llama-layer", weight_dtype="int4", **kw)
    bf16_s = _kernel_time_s(bf16, "linear") - 1.5e-6
    int4_s = _kernel_time_s(int4, "linear") - 1.5e-6
    hbm = 3.35e12 * 0.84  # the profile's runtimes.back-to-back.bandwidth_fraction
    assert bf16_s == pytest.approx(33_685_504 / hbm, rel=0.02)
    assert int4_s == pytest.approx(8_519_680 / hbm, rel=0.04)
    # the step saves 3/4 of every weight's bytes: q, k, v, o 4 x 4096 x 4096 + MLP 3 x 4096 x 11008
    # = 202,375,168 weights x (2 - 0.5) B = 303,562,752 B / 2.814e12 = 107.9 us (each GEMM memory-bound)
    saved_s = bf16.hardware[0].makespan_s - int4.hardware[0].makespan_s
    assert saved_s == pytest.approx(303_562_752 / hbm, rel=0.1)


def test_gpu_decode_attention_time_falls_with_the_kv_cache_bytes():
    # q @ K_cache^T at batch 8, kv_len 4096 on an H100: K_cache is 8 x 32 heads x 4096 x 128 elements
    # (134,217,728): 268,435,456 B in bf16 (80.1 us at 3.35 TB/s), 134,217,728 B in fp8 (40.1 us).
    kw = dict(hardware=["nvidia-h100-sxm"], phase="decode", kv_len=4096, batch=8, dtype="bf16")
    bf16 = _kernel_time_s(dfx.analyze("llama-layer", **kw), "matmul")
    fp8 = _kernel_time_s(dfx.analyze("llama-layer", kv_dtype="fp8", **kw), "matmul")
    assert bf16 >= 268_435_456 / 3.35e12 and fp8 >= 134_217_728 / 3.35e12
    assert fp8 - 1.5e-6 == pytest.approx((bf16 - 1.5e-6) / 2, rel=0.05)
