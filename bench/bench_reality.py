"""Benchmark: dfx's predictions against published measurements (``../shared/reality/train.csv``).

Every row dfx can express is asked as a user asks it: the ``dfx`` command line (``dfx analyze``,
``dfx capacity``, ``dfx serve``) with the defaults a user gets and only the flags the row's source
states (its model, shapes, precision, chips, engine settings), run in-process through the CLI itself
with ``--json``; the row's number is read from that document and printed as predicted / measured,
beside the command that reproduces it. Where a row needs a flag whose default the source contradicts
(a runtime other than the profile's default, an execution model), its note says which and why. A
row dfx cannot express yet says why. Nothing here is fitted to a row: the runtimes' achieved
fractions and fixed costs come from the profiles (``runtimes:``, ``default_runtime``), each with its
own source (docs/validation.md, "Published measurements").

Usage: python bench/bench_reality.py [--csv PATH] [--markdown] [--only ID_PREFIX]
``--markdown`` prints the table for docs/validation.md. This is a benchmark, not a test: it prints
numbers and asserts nothing (tests/roofline/test_reality_ops.py holds the op-level rows to 1.5x).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = next(  # ../shared/reality/train.csv beside the checkout (or a worktree's parent's)
    (p / "shared" / "reality" / "train.csv" for p in ROOT.parents if (p / "shared" / "reality" / "train.csv").exists()),
    ROOT.parent / "shared" / "reality" / "train.csv",
)
CONFIGS = "bench/configs"  # model configs and single-op models, relative to the checkout (commands run there)
# Published MoE measurements this project found (same columns as train.csv), read after it by default.
MOE_CSV = Path(__file__).resolve().parent / "reality_moe.csv"
# Published serving measurements this project found beyond train.csv's (same columns), read after them.
SERVING_CSV = Path(__file__).resolve().parent / "reality_serving.csv"
# TensorRT-LLM's first-token latency tables (v0.5, v0.8.0 and v0.9.0 data; same columns), read after them.
LATENCY_CSV = Path(__file__).resolve().parent / "reality_latency.csv"
GOAL_RATIO = 1.5  # issue 15: every expressible row within 1.5x of the measured value


@dataclass(frozen=True)
class Prediction:
    """One row's prediction, in the row's own unit, how dfx got it, and the command that reproduces it."""

    value: float
    how: str
    command: str = ""


# -- asking dfx as a user does: the CLI in-process, its --json document back ----------------------------
@contextlib.contextmanager
def _in_checkout():
    """Run in the checkout, where the commands' relative paths (bench/configs/...) resolve."""
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


@cache
def run_dfx(argv: tuple[str, ...]) -> dict:
    """``dfx *argv --json`` run in-process through the CLI (typer's command, as ``dfx`` runs it), its
    document parsed; the same arguments are asked once per bench run."""
    import typer

    from dfx.cli import app

    out = io.StringIO()
    with _in_checkout(), contextlib.redirect_stdout(out):
        typer.main.get_command(app)([*argv, "--json"], standalone_mode=False, prog_name="dfx")
    return json.loads(out.getvalue())


def command_line(argv: tuple[str, ...]) -> str:
    """The shell command a user types (from the checkout) for ``argv``."""
    return "dfx " + shlex.join(argv)


def ask(argv: tuple[str, ...], read: Callable[[dict], float], how: str) -> Prediction:
    """The row's number as ``read`` finds it in ``dfx *argv --json``; ``how`` may use ``{doc}`` fields
    through a callable."""
    doc = run_dfx(argv)
    return Prediction(read(doc), how(doc) if callable(how) else how, command_line(argv))


def _makespan_s(doc: dict, hw: str) -> float:
    return doc["hardware"][hw]["makespan_s"]


def _metric(doc: dict, hw: str, key: str) -> float:
    return doc["inference"]["profiles"][hw][key]


# -- op-level rows: one op as a file model (bench/configs/ops.py) -----------------------------------
A100 = "nvidia-a100-sxm-80gb"
H100 = "nvidia-h100-sxm"
# LLMCompass times one op from PyTorch eager with a synchronisation around it (ae/figure5/*/real_hardware):
# not the profile's default runtime (kernels queued back to back), so the row names both.
_TIMED = ("--execution-model", "eager", "--runtime", "pytorch-eager-timed")
_TIMED_NOTE = (
    "non-default --execution-model eager --runtime pytorch-eager-timed: LLMCompass times one op from "
    "PyTorch eager with a device synchronisation around it (its real_hardware scripts)"
)


def gemm_argv(m: int, k: int, n: int, hw: str, dtype: str = "fp16", flags: tuple[str, ...] = _TIMED) -> tuple:
    """``dfx analyze`` of ``[m, k] x [k, n]`` (one ``aten.mm``) on ``hw``."""
    shapes = ("--input-shape", f"{m},{k}", "--input-shape", f"{k},{n}")
    return ("analyze", f"{CONFIGS}/ops.py:MatMul", *shapes, "--dtype", dtype, "--hw", hw, *flags)


def softmax_argv(rows: int, cols: int, hw: str, dtype: str = "fp16", flags: tuple[str, ...] = _TIMED) -> tuple:
    """``dfx analyze`` of a softmax over the rows of ``[rows, cols]`` (one ``aten._softmax``) on ``hw``."""
    shape = ("--input-shape", f"{rows},{cols}")
    return ("analyze", f"{CONFIGS}/ops.py:Softmax", *shape, "--dtype", dtype, "--hw", hw, *flags)


def _hw_id(hw: str) -> str:
    from dfx.hardware import load_profile

    return load_profile(hw).id


def gemm_ms(m: int, k: int, n: int, hw: str, runtime: str | None = None, dtype: str = "fp16") -> float:
    """``[m, k] x [k, n]`` in milliseconds, as ``dfx analyze`` prints it (eager under ``runtime``; ``None``:
    the command's defaults)."""
    flags = () if runtime is None else ("--execution-model", "eager", "--runtime", runtime)
    return 1e3 * _makespan_s(run_dfx(gemm_argv(m, k, n, hw, dtype, flags)), _hw_id(hw))


def softmax_ms(rows: int, cols: int, hw: str, runtime: str | None = None, dtype: str = "fp16") -> float:
    flags = () if runtime is None else ("--execution-model", "eager", "--runtime", runtime)
    return 1e3 * _makespan_s(run_dfx(softmax_argv(rows, cols, hw, dtype, flags)), _hw_id(hw))


def _op_ms(argv: tuple, hw: str, how: str) -> Prediction:
    return ask(argv, lambda d: 1e3 * _makespan_s(d, hw), how)


def _llmc_gemm_big(row) -> Prediction:
    return _op_ms(gemm_argv(8192, 4096, 4096, A100), A100, f"aten.mm fp16; {_TIMED_NOTE}")


def _llmc_gemm_tiny(row) -> Prediction:
    return _op_ms(gemm_argv(8192, 64, 64, A100), A100, f"aten.mm fp16, launch-bound; {_TIMED_NOTE}")


def _llmc_softmax(row) -> Prediction:
    return _op_ms(softmax_argv(4096, 4096, A100), A100, f"aten._softmax fp16; {_TIMED_NOTE}")


def _llmc_w1(row) -> Prediction:
    # one TP-4 shard of GPT-3's W1 at batch 8 decode: [8 x 12288] x [12288 x 12288] (d_model x 4d / 4)
    return _op_ms(gemm_argv(8, 12288, 12288, A100), A100, f"aten.mm fp16, weight-read bound; {_TIMED_NOTE}")


def _mamf_h100(row) -> Prediction:
    # mamf-finder.py queues the matmuls back to back between two CUDA events: the H100's default runtime
    m, n, k = 2048, 2048, 13312
    return ask(
        gemm_argv(m, k, n, H100, dtype="bf16", flags=()),
        lambda d: 2 * m * n * k / _makespan_s(d, H100) / 1e12,
        "aten.mm bf16; defaults (compiled, runtime back-to-back: mamf-finder queues its matmuls back to back)",
    )


# -- deployment rows: chips or systems the weights need (dfx capacity) ------------------------------
def _groq_chips(row) -> Prediction:
    argv = ("capacity", "hf:llama-2-70b", "--hw", "groq-lpu", "--dtype", "bf16")
    return ask(argv, lambda d: d["chips_needed"], "dfx capacity: bf16 weights, KV cache and activations / 220 MiB")


def _cs3_systems(row) -> Prediction:
    argv = ("capacity", f"hf:{CONFIGS}/llama-3.1-70b.json", "--hw", "cerebras-wse-3", "--dtype", "bf16")
    return ask(
        argv,
        lambda d: d["chips_needed"],
        "dfx capacity: bf16 weights, KV cache and activations at the config's 131,072 tokens / 44 GB SRAM per wafer",
    )


# -- model rows: a phase of a causal decoder (dfx analyze --phase), the defaults otherwise -----------
def _phase_row(argv: tuple, hw: str, key: str, scale: float, how: str | Callable[[dict], str]) -> Prediction:
    return ask(argv, lambda d: scale * _metric(d, hw, key), how)


def _chips(doc: dict, hw: str) -> Any:
    return doc["hardware"][hw].get("chips")


def _ft_gpt67(row) -> Prediction:
    argv = ("analyze", f"hf:{CONFIGS}/gpt-6.7b.json", "--phase", "generate", "--prompt-len", "128")
    argv += ("--output-len", "8", "--dtype", "fp16", "--hw", A100)
    return _phase_row(argv, A100, "total_s", 1e3, "generate 128 + 8, fp16; defaults (compiled, back-to-back)")


def _trt_ttft(row) -> Prediction:
    argv = ("analyze", "hf:llama-2-7b", "--phase", "prefill", "--prompt-len", "128", "--dtype", "fp16", "--hw", A100)
    return _phase_row(argv, A100, "ttft_s", 1e3, "prefill 128, fp16; defaults (compiled, back-to-back)")


def _trt_b384(row) -> Prediction:
    argv = ("analyze", "hf:llama-2-7b", "--phase", "generate", "--prompt-len", "128", "--output-len", "128")
    argv += ("--batch", "384", "--dtype", "fp16", "--hw", A100)
    return _phase_row(
        argv,
        A100,
        "tokens_per_s",
        1.0,
        lambda d: (
            f"generate 128 + 128 at batch 384, fp16, {_chips(d, A100)} chip(s); defaults (compiled, back-to-back)"
        ),
    )


# TensorRT-LLM's "Low Latency" tables (bench/reality_latency.csv): batch 1, one output token, asked as
# TRT-L7B-A100-TTFT-128 is (a prefill of the row's input, its precision, TP over its chips), each row's
# own fields read. GPT-J 6B is written as a GPT-2-architecture config (bench/configs/gpt-j-6b.json: the
# same weights and GEMM FLOPs; dfx's phases build GPT-2 and Llama-family decoders). The FP8 rows are
# TensorRT-LLM's FP8 engines: FP8 weights, activations (quantized before each GEMM) and KV cache.
_TRT_MODELS = {
    "GPT-J-6B": f"hf:{CONFIGS}/gpt-j-6b.json",
    "Llama-2-7B": "hf:llama-2-7b",
    "Llama-2-70B": "hf:llama-2-70b",
    "Mistral-7B": "hf:mistral-7b",
}
_TRT_PRECISION = {"fp16": ("--dtype", "fp16"), "fp8": ("--dtype", "fp8", "--kv-dtype", "fp8")}


def trt_latency_argv(row: dict) -> tuple:
    """``dfx analyze`` of a first-token row of TensorRT-LLM's tables: a prefill of ``input_tokens`` at batch 1."""
    chips = int(row["chips"])
    argv = ("analyze", _TRT_MODELS[row["model"]], "--phase", "prefill", "--prompt-len", row["input_tokens"])
    argv += _TRT_PRECISION[row["precision"]]
    if chips > 1:
        argv += ("--parallel", f"tp={chips}")
    return (*argv, "--hw", row["hardware"])


def _trt_latency(row) -> Prediction:
    hw, chips = row["hardware"], int(row["chips"])
    tp = f", tp {chips}" if chips > 1 else ""
    how = f"prefill {row['input_tokens']}, {row['precision']}{tp}; defaults (compiled, back-to-back)"
    return _phase_row(trt_latency_argv(row), _hw_id(hw), "ttft_s", 1e3, how)


def _bert(row) -> Prediction:
    # TensorRT compiles the encoder into fused kernels: the default compiled execution model, whose GPU
    # tiling pass times each small GEMM ([128 x 768] x [768 x 768]) by the waves of tiles it fills the SMs with
    hw = "nvidia-a100-sxm4-40gb"
    argv = ("analyze", "hf:bert-base-uncased", "--seq", "128", "--dtype", "fp16", "--hw", hw)
    return _op_ms(argv, hw, "encoder forward, seq 128, fp16; defaults (compiled: fused, tile waves; back-to-back)")


def _decode_row(model: str, hw: str, kv_len: int, how: Callable[[dict], str]) -> Prediction:
    argv = ("analyze", model, "--phase", "decode", "--kv-len", str(kv_len), "--dtype", "bf16", "--hw", hw)
    return _phase_row(argv, hw, "tokens_per_s_per_user", 1.0, how)


def _groq_l70b(row) -> Prediction:
    return _decode_row(
        "hf:llama-2-70b",
        "groq-lpu",
        4096,
        lambda d: f"decode at 4,096 cached tokens, bf16, {_chips(d, 'groq-lpu')} chips (the TSP schedule); defaults",
    )


def _cs3_l8b(row) -> Prediction:
    return _decode_row(
        "hf:llama-3-8b",
        "cerebras-wse-3",
        1024,
        lambda d: f"decode at 1,024 cached tokens (not stated), bf16, {_chips(d, 'cerebras-wse-3')} wafer(s); defaults",
    )


# -- mixture-of-experts rows (bench/reality_moe.csv): Mixtral-8x7B, top-2 of 8, routing uniform ---------
def _groq_mixtral(row) -> Prediction:
    return _decode_row(
        "hf:mixtral-8x7b",
        "groq-lpu",
        1024,
        lambda d: (
            f"decode at 1,024 cached tokens (not stated), bf16, {_chips(d, 'groq-lpu')} chips, 2 of 8 experts "
            "read a layer; defaults"
        ),
    )


# TensorRT-LLM int8 weight-only on one A100: fp16 activations, int8 weights; 512 in, 128 out, batch 1.
# dfx builds MoE models in bf16 only (torch's grouped-GEMM shape rule): the A100's bf16 and fp16 peaks and
# widths are the same (312 TFLOP/s dense, 2 bytes), so --dtype bf16 times them as fp16.
_BASETEN = ("analyze", "hf:mixtral-8x7b", "--phase", "generate", "--prompt-len", "512", "--output-len", "128")
_BASETEN += ("--dtype", "bf16", "--weight-dtype", "int8", "--hw", A100)
_BASETEN_HOW = (
    "generate 512 + 128, int8 weights; --dtype bf16 for the row's fp16 (dfx builds MoE models in bf16; the "
    "A100's peaks and widths are the same); defaults (compiled, back-to-back)"
)


def _baseten_ttft(row) -> Prediction:
    return _phase_row(_BASETEN, A100, "ttft_s", 1e3, _BASETEN_HOW)


def _baseten_rate(row) -> Prediction:
    return _phase_row(_BASETEN, A100, "tokens_per_s_per_user", 1.0, _BASETEN_HOW)


# -- training rows: one step of data-parallel training (dfx analyze --train) ----------------------------
# The recipe the row's source links (AI-Hypercomputer/tpu-recipes training/trillium/Llama3.1-8B-MaxText/
# v6e-256, MaxText tpu-recipes-v0.1.4 `llama3_1_8b_8192`) states per_device_batch_size 4 and
# ici_fsdp_parallelism -1 (FSDP over all 256 chips); its log line (4.546 s per step, 7,207 tokens/s/device)
# is 4 x 8192 tokens per chip per step. MaxText's default optimizer is AdamW. hf:llama-3-8b has Llama 3.1
# 8B's shapes (3.1 changes the RoPE scaling and context length only). The whole model is captured (about
# 1 min, 14 GB).
_MAXTEXT = ("analyze", "hf:llama-3-8b", "--train", "--optimizer", "adamw", "--batch", "4", "--seq", "8192")
_MAXTEXT += ("--dtype", "bf16", "--hw", "google-tpu-v6e", "--parallel", "fsdp=256")


def _maxtext_how(doc: dict) -> str:
    r = doc["hardware"]["google-tpu-v6e"]
    dp, rec = r["parallel"]["data_parallel"], r.get("recompute")
    remat = (
        f"full activation recomputation ({rec['kept_bytes'] / 2**30:.1f} of {rec['saved_bytes'] / 2**30:.0f} GiB "
        f"kept, +{rec['recompute_s']:.3f} s); no host offload modelled"
        if rec
        else "no recomputation or host offload modelled"
    )
    return (
        f"train step, batch 4 x seq 8192 per chip (the recipe's), bf16, AdamW, fsdp 256, compiled, ideal roofline "
        f"(no v6e runtime): {r['makespan_s']:.3f} s/step, collectives {dp['collective_s']:.3f} s "
        f"({dp['exposed_s']:.3f} s exposed); {remat}"
    )


def _maxtext_l8b(row) -> Prediction:
    return ask(_MAXTEXT, lambda d: 4 * 8192 / _makespan_s(d, "google-tpu-v6e"), _maxtext_how)


# -- serving rows: dfx serve (docs/serving.md), run as a user would run it -----------------------------
# SGLang v0.3.0's table (sgl-project/sglang benchmark/benchmark_vllm_060/README.md): Llama 3.1 70B
# Instruct, TP 4 on 4 H100s, ShareGPT through sglang.bench_serving, radix cache disabled. What the
# run states is passed as it is: 4 chips, rate 4 with 1,200 prompts or 5,000 prompts at once,
# mem_frac 0.85 at TP 4 (0.88 set by hand for the offline run, the README's note). SGLang's own
# defaults of the time are passed as its user got them: chunked_prefill_size 8192
# (python/sglang/srt/server_args.py), max_running_requests = max_total_tokens // 2, i.e. no limit
# below the cache (4,096 here). Lengths: ShareGPT's mean prompt, 161 tokens (Kwon et al., SOSP 2023,
# section 6.1), and the run's own mean output, 3,856.01 / 19.84 = 194.4 tokens; the spread is not
# published: lognormal with sigma 1.0, an assumption. Kernels queued back to back: the machines' default
# runtime (back-to-back, the profile's fractions from MAMF, not from these rows). SGLang v0.3's scheduler
# runs a prefill batch as an iteration of its own, first, and the decode batch only when no prefill can
# be formed (enable_mixed_chunk defaults to False, python/sglang/srt/server_args.py of the time): the
# rows pass --prefill separate, the order their source states (dfx.serve.engine, "Separate prefill").
_SGL_COMMON = ("--input-len", "lognormal:161,1.0", "--output-len", "lognormal:194,1.0")
_SGL_COMMON += ("--max-batch-tokens", "8192", "--max-seqs", "4096", "--prefill", "separate")
_SGL = ("serve", f"hf:{CONFIGS}/llama-3.1-70b.json", "--hw", H100, "--chips", "4", *_SGL_COMMON)
# The same table's Llama 3.1 8B Instruct rows on one A100 80G (bench/reality_serving.csv): TP 1,
# mem_frac 0.88 (SGLang's default at TP 1, the README's note), the same ShareGPT sample. hf:llama-3-8b
# has Llama 3.1 8B's shapes (the 3.1 release changed the RoPE scaling for long contexts only). The run
# also passes --enable-torch-compile, which dfx's compiled programs already assume.
_SGL_8B = ("serve", "hf:llama-3-8b", "--hw", A100, "--chips", "1", *_SGL_COMMON)
_SGL_RUNS = {  # row id prefix -> the dfx serve command line (rate and prompts as the README's runs)
    "SGL-L31-70B-4xH100-rps4": (*_SGL, "--rate", "4", "--requests", "1200", "--mem-fraction", "0.85"),
    "SGL-L31-70B-4xH100-rps8": (*_SGL, "--rate", "8", "--requests", "2400", "--mem-fraction", "0.85"),
    "SGL-L31-70B-4xH100-offline": (*_SGL, "--requests", "5000", "--mem-fraction", "0.88"),
    "SGL-L31-8B-A100-rps4": (*_SGL_8B, "--rate", "4", "--requests", "1200", "--mem-fraction", "0.88"),
    "SGL-L31-8B-A100-rps8": (*_SGL_8B, "--rate", "8", "--requests", "2400", "--mem-fraction", "0.88"),
    "SGL-L31-8B-A100-offline": (*_SGL_8B, "--requests", "5000", "--mem-fraction", "0.88"),
}


def _sgl_how(doc: dict) -> str:
    m = doc["machines"][0]
    return (
        f"dfx serve, continuous batching, prefill separate, {m['chips']} chip(s), ShareGPT-like lognormal "
        f"161/194 tokens (sigma 1.0), {m['kv_capacity_tokens']:,} KV tokens, mean batch "
        f"{m['summary']['mean_batch']:.1f}, {m['summary']['preemptions']:,} preemptions; defaults otherwise "
        "(back-to-back)"
    )


def _sgl_prefix(row) -> str:
    return row["id"].rsplit("-", 1)[0]


def _sgl_ttft(row) -> Prediction:
    return ask(_SGL_RUNS[_sgl_prefix(row)], lambda d: 1e3 * d["machines"][0]["summary"]["ttft_s"]["p50"], _sgl_how)


def _sgl_tpot(row) -> Prediction:
    return ask(_SGL_RUNS[_sgl_prefix(row)], lambda d: 1e3 * d["machines"][0]["summary"]["tpot_s"]["p50"], _sgl_how)


def _sgl_offline(row) -> Prediction:
    return ask(_SGL_RUNS[row["id"]], lambda d: d["machines"][0]["summary"]["output_tokens_per_s"], _sgl_how)


# -- TensorRT-LLM v0.6.1 peak throughput (docs/source/performance.md, "H100 GPUs (FP8)") -----------------
# gptSessionBenchmark, static batch, ISL/OSL 2048/2048; the table's number is output tokens/s per GPU.
# Its build commands pass --enable_fp8 --fp8_kv_cache (fp8 GEMMs and an fp8 KV cache: --dtype fp8, whose
# KV width defaults to it); TP 1 for the 7B, TP 2 for the 70B (the table's TP column; the 70B build
# command's --tp_size 4 is left from v0.5's table).
def _trt061_h100(argv: tuple, chips: int, how: str) -> Prediction:
    return _phase_row(argv, H100, "tokens_per_s", 1.0 / chips, how)


def _trt061_l7b(row) -> Prediction:
    argv = ("analyze", "hf:llama-2-7b", "--phase", "generate", "--prompt-len", "2048", "--output-len", "2048")
    argv += ("--batch", "48", "--dtype", "fp8", "--hw", H100)
    return _trt061_h100(argv, 1, "generate 2048 + 2048 at batch 48, fp8 (KV cache fp8), 1 GPU; defaults")


def _trt061_l70b(row) -> Prediction:
    # Llama-2-70B is GQA (64 query / 8 KV heads). v0.6.1's generation attention is the masked MHA kernel,
    # one thread block per (sequence, query head) reading its KV head's cache (hi_kv = hi / qhead_per_kv,
    # decoderMaskedMultiheadAttentionTemplate.h); TensorRT-LLM's CHANGELOG lists "MMHA optimization for
    # MQA and GQA" and "FP8 KV cache support for XQA kernel" (XQA: the grouped kernel) as new in 0.7.0,
    # so v0.6.1 ran this fp8 cache through MMHA (the XQA blog, docs/source/blogs/XQA-kernel.md, reports
    # 2.4x Llama-70B throughput with XQA on v0.8a). Hence the non-default --gqa-kv-reads per-query-head:
    # the cache read 8 times a step.
    argv = ("analyze", "hf:llama-2-70b", "--phase", "generate", "--prompt-len", "2048", "--output-len", "2048")
    argv += ("--batch", "64", "--dtype", "fp8", "--hw", H100, "--parallel", "tp=2")
    argv += ("--gqa-kv-reads", "per-query-head")
    return _trt061_h100(
        argv,
        2,
        "generate 2048 + 2048 at batch 64, fp8 (KV cache fp8), tp 2, per GPU; non-default --gqa-kv-reads "
        "per-query-head: v0.6.1's masked MHA kernel reads a KV head's cache once per query head (XQA, which "
        "shares it, took an fp8 cache from 0.7.0: TensorRT-LLM CHANGELOG; blogs/XQA-kernel.md)",
    )


PREDICTORS: dict[str, Callable[[dict], Prediction]] = {
    "LLMC-A100-gemm-8192x4096x4096": _llmc_gemm_big,
    "LLMC-A100-gemm-8192x64x64": _llmc_gemm_tiny,
    "LLMC-A100-softmax-4096x4096": _llmc_softmax,
    "LLMC-A100-GPT3-decode-W1": _llmc_w1,
    "MAMF-H100-bf16": _mamf_h100,
    "FT-6.7B-b1-128-8": _ft_gpt67,
    "TRT-L7B-A100-TTFT-128": _trt_ttft,
    "TRT-L7B-A100-b384-128-128": _trt_b384,
    "TRT-BERTbase-A100-s128-b1": _bert,
    "Groq-L70B-tok/s": _groq_l70b,
    "CS3-L3.1-8B-tok/s": _cs3_l8b,
    "Groq-Mixtral-8x7B-tok/s": _groq_mixtral,
    "Baseten-Mixtral-int8-A100-TTFT": _baseten_ttft,
    "Baseten-Mixtral-int8-A100-tok/s": _baseten_rate,
    "Groq-L70B-chips": _groq_chips,
    "CS3-L3.1-70B-systems": _cs3_systems,
    "MaxText-v6e-L3.1-8B-train": _maxtext_l8b,
    "SGL-L31-70B-4xH100-rps4-TTFT": _sgl_ttft,
    "SGL-L31-70B-4xH100-rps4-TPOT": _sgl_tpot,
    "SGL-L31-70B-4xH100-offline": _sgl_offline,
    "SGL-L31-70B-4xH100-rps8-TTFT": _sgl_ttft,
    "SGL-L31-70B-4xH100-rps8-TPOT": _sgl_tpot,
    "SGL-L31-8B-A100-rps4-TTFT": _sgl_ttft,
    "SGL-L31-8B-A100-rps4-TPOT": _sgl_tpot,
    "SGL-L31-8B-A100-rps8-TTFT": _sgl_ttft,
    "SGL-L31-8B-A100-rps8-TPOT": _sgl_tpot,
    "SGL-L31-8B-A100-offline": _sgl_offline,
    "TRT061-H100FP8-L7B-b48-2048-2048": _trt061_l7b,
    "TRT061-H100FP8-L70B-tp2-b64-2048-2048": _trt061_l70b,
}

NOT_EXPRESSED: dict[str, str] = {
    "MLPerf4-L70B-8xH100-offline": (
        "dfx serve runs offline in-flight batching, but the row gives no input lengths (OpenOrca's), no "
        "precision ('not in the log') and no split of the 8 GPUs (replicas or TP): each would be a guess"
    ),
}


@dataclass(frozen=True)
class Outcome:
    row: dict
    prediction: Prediction | None
    reason: str = ""

    @property
    def measured(self) -> float:
        return float(self.row["measured"])

    @property
    def ratio(self) -> float | None:
        return None if self.prediction is None else self.prediction.value / self.measured

    @property
    def within_goal(self) -> bool:
        r = self.ratio
        return r is not None and 1 / GOAL_RATIO <= r <= GOAL_RATIO


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# every row of bench/reality_latency.csv is asked by _trt_latency (its own model, input, precision and chips)
PREDICTORS.update({r["id"]: _trt_latency for r in read_rows(LATENCY_CSV)})


def predict_row(row: dict) -> Outcome:
    rid = row["id"]
    if rid in PREDICTORS:
        return Outcome(row, PREDICTORS[rid](row))
    return Outcome(row, None, NOT_EXPRESSED.get(rid, "not expressed yet"))


@cache
def outcomes(path: str) -> tuple[Outcome, ...]:
    return tuple(predict_row(r) for r in read_rows(Path(path)))


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def render(results: tuple[Outcome, ...], markdown: bool) -> str:
    lines = []
    if markdown:
        lines += [
            "| row | metric | unit | measured | predicted | predicted / measured | how (the `dfx` command that gives it) |",
            "|---|---|---|---:|---:|---:|---|",
        ]
    for o in results:
        r = o.row
        if o.prediction is None:
            cells = [r["id"], r["metric"], r["unit"], _fmt(o.measured), "-", "-", o.reason]
        else:
            p = o.prediction
            how = f"`{p.command}`: {p.how}" if markdown else p.how
            cells = [r["id"], r["metric"], r["unit"], _fmt(o.measured), _fmt(p.value), f"{o.ratio:.2f}", how]
        if markdown:
            lines.append("| " + " | ".join(cells) + " |")
        else:
            lines.append("  ".join(f"{c:<14}" if i else f"{c:<32}" for i, c in enumerate(cells)))
            if o.prediction is not None:
                lines.append(f"{'':<34}{o.prediction.command}")
    expressed = [o for o in results if o.prediction is not None]
    good = sum(o.within_goal for o in expressed)
    worst = max((max(o.ratio, 1 / o.ratio) for o in expressed), default=math.nan)
    lines.append("")
    lines.append(
        f"{len(expressed)} of {len(results)} rows expressed; {good} within {GOAL_RATIO}x; worst factor {worst:.2f}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--csv",
        type=Path,
        default=None,
        help="one CSV of rows (default: train.csv, reality_moe.csv, reality_serving.csv, reality_latency.csv)",
    )
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", default="", help="predict only the rows whose id starts with this")
    ns = parser.parse_args()
    paths = [ns.csv] if ns.csv is not None else [DEFAULT_CSV, MOE_CSV, SERVING_CSV, LATENCY_CSV]
    rows = [r for path in paths for r in read_rows(path)]
    results = tuple(predict_row(r) for r in rows if r["id"].startswith(ns.only))
    print(render(results, ns.markdown))


if __name__ == "__main__":
    main()
