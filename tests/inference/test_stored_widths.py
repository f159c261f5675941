"""Weights, KV cache and activations at their stored width in the footprint: unique_parameter_bytes,
dfx capacity and the fewest-chips choice (one test per storage width)."""

import math

import pytest

import dfx
from dfx.arch.memory.api import model_capacity
from dfx.parallel.plan import fewest_chips, model_footprint

# the PB-05 MLP: 784*512 + 512 + 512*512 + 512 + 512*10 + 10 = 669,706 parameters, no buffers
MLP_PARAMS = 669_706
# bits per stored weight: fp4 = NVFP4 (4 + 8/16), mxfp4 = MXFP4 (4 + 8/32)
WIDTHS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "fp4": 4.5, "mxfp4": 4.25}


@pytest.mark.parametrize(("weight", "bits"), sorted(WIDTHS.items()))
def test_unique_parameter_bytes_and_fewest_chips_read_the_stored_weights(weight, bits):
    r = dfx.analyze("mlp", hardware=["h100"], dtype="bf16", weight_dtype=weight)
    stored = math.ceil(MLP_PARAMS * bits / 8)  # e.g. int4: 334,853; fp4: ceil(376,709.6) = 376,710
    assert r.costed.unique_parameter_bytes() == stored
    assert model_footprint(r.costed)[:2] == (MLP_PARAMS, stored)


@pytest.mark.parametrize(("weight", "bits"), sorted(WIDTHS.items()))
def test_dfx_capacity_reads_the_stored_weights(weight, bits):
    r = model_capacity("mlp", "h100", dtype="bf16", weight_dtype=weight)
    assert r.parameter_count == MLP_PARAMS and r.parameter_bytes == math.ceil(MLP_PARAMS * bits / 8)


def test_fp8_llama_2_7b_decode_at_batch_112_fits_one_h100():
    # weights 6,738,415,616 x 1 B = 6.74 GB; KV cache 2 x 32 layers x 112 x 2,048 x 32 heads x 128 x 1 B
    # = 60.13 GB (56 GiB); 66.9 GB and a few MB of activations fit one 80 GB H100. In bf16 the same is
    # 13.48 + 120.26 = 133.7 GB: 2 chips. (The KV cache was counted twice, and the weights at bf16: 4 chips.)
    h100 = dfx.load_profile("h100")
    fp8 = dfx.analyze("hf:llama-2-7b", hardware=[], phase="decode", kv_len=2048, batch=112, dtype="fp8")
    assert fp8.costed.unique_parameter_bytes() == 6_738_415_616 + 2_097_152  # + the rotary buffers at bf16
    params, weights, activations, inputs = model_footprint(fp8.costed)
    assert inputs == 2 * 32 * 112 * 2048 * 32 * 128 + 112 * 8  # the cache at 1 B, + the int64 token ids
    assert activations < 1e9
    assert fewest_chips(fp8.costed, h100) == 1
    bf16 = dfx.analyze("hf:llama-2-7b", hardware=[], phase="decode", kv_len=2048, batch=112, dtype="bf16")
    assert fewest_chips(bf16.costed, h100) == 2


def test_dfx_capacity_fp8_llama_2_7b():
    # closed form from the config: 6,738,415,616 x 1 B; KV 2 x 32 x 112 x 2,048 x 32 x 128 x 1 B
    r = model_capacity("hf:llama-2-7b", "h100", dtype="fp8", batch=112, seq=2048)
    assert r.parameter_bytes == 6_738_415_616 and r.kv_cache_bytes == 2 * 32 * 112 * 2048 * 32 * 128
    assert r.dtype == "float8_e4m3fn"
