"""TensorRT-LLM's first-token rows (``bench/reality_latency.csv``) are asked as a user would ask them.

Each row of TensorRT-LLM's "Low Latency" tables (docs/source/performance.md, v0.5 and v0.9.0 data) is a
batch-1 prefill of the row's input length at the row's precision, tensor-parallel over the row's GPUs;
``bench/bench_reality.py`` builds that ``dfx analyze`` command from the row's own fields. The expected
commands below are written out by hand from the rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_reality as reality  # noqa: E402


def _row(rid: str) -> dict:
    return next(r for r in reality.read_rows(reality.LATENCY_CSV) if r["id"] == rid)


def test_every_row_is_a_sourced_batch1_first_token_row_with_a_predictor():
    rows = reality.read_rows(reality.LATENCY_CSV)
    assert len(rows) == 43  # v0.5: 5 A100 + 6 H100; v0.8.0 and v0.9.0: 8 A100 + 8 H100 each
    for r in rows:
        assert reality.PREDICTORS[r["id"]] is reality._trt_latency
        assert (r["batch"], r["output_tokens"], r["unit"]) == ("1", "1", "ms")
        assert "TensorRT-LLM docs/source/performance.md" in r["source"]
        assert r["model"] in reality._TRT_MODELS and r["precision"] in reality._TRT_PRECISION


def test_the_70b_fp8_row_is_asked_with_its_precision_and_tp():
    # TRT09-H100FP8-L70B-tp4-TTFT-128: LLaMA 70B, batch 1, TP 4, input 128, H100 FP8 (FP8 KV cache)
    argv = reality.trt_latency_argv(_row("TRT09-H100FP8-L70B-tp4-TTFT-128"))
    assert argv == (
        "analyze", "hf:llama-2-70b", "--phase", "prefill", "--prompt-len", "128",
        "--dtype", "fp8", "--kv-dtype", "fp8", "--parallel", "tp=4", "--hw", "nvidia-h100-sxm",
    )  # fmt: skip


def test_the_a100_row_is_asked_as_the_train_csv_row_is():
    # the same command as TRT-L7B-A100-TTFT-128 (bench_reality._trt_ttft), at 2048 tokens
    argv = reality.trt_latency_argv(_row("TRT09-A100-L7B-TTFT-2048"))
    assert argv == (
        "analyze", "hf:llama-2-7b", "--phase", "prefill", "--prompt-len", "2048",
        "--dtype", "fp16", "--hw", "nvidia-a100-sxm-80gb",
    )  # fmt: skip


def test_gpt_j_stand_in_has_gpt_j_6b_shapes():
    # EleutherAI/gpt-j-6b config.json: n_layer 28, n_head 16, n_embd 4096 (head 256), vocab 50400
    cfg = json.loads((ROOT / "bench" / "configs" / "gpt-j-6b.json").read_text())
    assert (cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["vocab_size"]) == (28, 16, 4096, 50400)
    assert cfg["n_embd"] // cfg["n_head"] == 256
