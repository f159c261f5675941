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
