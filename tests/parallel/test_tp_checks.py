"""--parallel tp=N for inference: Megatron-LM's even split of heads and FFN width, the fit and domain warnings."""

import json
import subprocess
import sys
import warnings

import pytest

import dfx
from dfx.analysis import _placed, evaluate_one_chip
from dfx.errors import DfxError
from dfx.hardware import load_profile
from dfx.parallel import ParallelPlan

# 12 query heads (4 KV heads) of 8, FFN width 100 = 2^2 x 5^2: gcd(12, 100) = 4, so tp in 1, 2, 4
ODD = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 96,
    "intermediate_size": 100,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
    "vocab_size": 100,
    "tie_word_embeddings": False,
}


@pytest.fixture(scope="module")
def odd(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("odd") / "config.json"
    path.write_text(json.dumps(ODD))
    return f"hf:{path}"


def _decode(model: str, tp: int):
    return dfx.analyze(model, hardware=["h100"], dtype="bf16", phase="decode", kv_len=16, parallel=f"tp={tp}")


@pytest.mark.parametrize(
    ("tp", "message"),
    [
        (5, "tp=5 does not divide the model's 12 attention heads; use tp in 1, 2, 4"),  # 12 % 5 = 2
        # more than the heads (the graph's attention is matmuls, not SDPA: the heads are read from q's view)
        (24, "tp=24: the model has 12 attention heads, which tensor parallelism splits over the chips; use tp <= 12"),
        (3, "tp=3 does not divide the model's FFN width of 100; use tp in 1, 2, 4"),  # 12 % 3 = 0, 100 % 3 = 1
        (6, "tp=6 does not divide the model's FFN width of 100; use tp in 1, 2, 4"),  # 12 % 6 = 0, 100 % 6 = 4
    ],
)
def test_a_tp_that_does_not_split_heads_and_ffn_evenly_is_refused(odd, tp, message):
    with pytest.raises(DfxError) as err:
        _decode(odd, tp)
    assert str(err.value) == message


def test_a_tp_above_the_kv_heads_that_divides_both_is_taken(odd):
    # tp=4 = the KV heads; tp=2 below them: both divide 12 and 100, so both run on tp chips
    for tp in (2, 4):
        assert _decode(odd, tp).hardware[0].extras["chips"] == tp


def test_cli_refuses_tp_5_in_one_line(odd):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "dfx.cli",
            "analyze",
            odd,
            "--phase",
            "decode",
            "--kv-len",
            "16",
            "--hw",
            "h100",
            "--parallel",
            "tp=5",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == "error: tp=5 does not divide the model's 12 attention heads; use tp in 1, 2, 4"


@pytest.fixture(scope="module")
def llama70b():
    # Llama-2-70B decode (80 layers, hidden 8192, FFN 28672, 64 / 8 heads, vocab 32000), evaluated once
    a = dfx.analyze("hf:llama-2-70b", hardware=[], dtype="bf16", phase="decode", kv_len=2048)
    h100 = load_profile("h100")
    return a.costed, h100, evaluate_one_chip(a.costed, h100)


def _warnings(llama70b, tp: int) -> list[str]:
    costed, h100, one = llama70b
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        _placed(one, costed, h100, ParallelPlan(tp=tp, source="--parallel"))
    return [str(w.message) for w in caught]


def test_llama_70b_on_one_h100_warns_that_it_does_not_fit(llama70b):
    # weights: per layer 2 x 8192^2 (q, o) + 2 x 1024 x 8192 (k, v) + 3 x 8192 x 28672 (MLP) + 2 x 8192 (norms)
    # = 855,654,400; x 80 = 68,452,352,000; + 2 x 32000 x 8192 (embedding, LM head) + 8192 (final norm)
    # = 68,976,648,192 parameters x 2 B = 137,953,296,384 B = 128.48 GiB; an H100 holds 80e9 B = 74.51 GiB,
    # so with the 0.67 GB KV cache it needs ceil(138.6e9 / 80e9) = 2 chips
    assert _warnings(llama70b, 1) == [
        "nvidia-h100-sxm: the model (128.48 GiB of weights, plus its KV cache and activations) does not fit 1 chip "
        "of 74.51 GiB; it needs at least 2 chips (drop --parallel/--chips for the fewest that fit)"
    ]
    assert _warnings(llama70b, 8) == []  # 8 x 74.51 GiB hold it, and 8 chips are one NVSwitch board


def test_tp_16_on_h100_warns_that_it_leaves_the_nvswitch_domain(llama70b):
    (w,) = _warnings(llama70b, 16)  # the H100 profile: domain_chips 8 (one HGX board), 450 GB/s NVLink 4
    assert w.startswith("nvidia-h100-sxm: tp=16 spans more chips than one interconnect domain of 8 (NVLink 4")
    assert "at the domain's 450 GB/s" in w and w.endswith("keep tp <= 8 and add pp across domains")
