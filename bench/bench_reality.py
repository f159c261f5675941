"""Benchmark: dfx's predictions against published measurements (``../shared/reality/train.csv``).

Every row dfx can express is predicted the way the row was measured (the op and its shapes, the
runtime that timed it, the chips it ran on) and printed as predicted / measured. A row dfx cannot
express yet says why. Nothing here is fitted to a row: the runtimes' achieved fractions and fixed
costs come from the profiles (``runtimes:``), each with its own source (docs/validation.md,
"Published measurements").

Usage: python bench/bench_reality.py [--csv PATH] [--markdown] [--only ID_PREFIX]
``--markdown`` prints the table for docs/validation.md. This is a benchmark, not a test: it prints
numbers and asserts nothing (tests/test_reality_ops.py holds the op-level rows to 1.5x).
"""

from __future__ import annotations

import argparse
import csv
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = next(  # ../shared/reality/train.csv beside the checkout (or a worktree's parent's)
    (p / "shared" / "reality" / "train.csv" for p in ROOT.parents if (p / "shared" / "reality" / "train.csv").exists()),
    ROOT.parent / "shared" / "reality" / "train.csv",
)
CONFIGS = Path(__file__).resolve().parent / "configs"
# Published MoE measurements this project found (same columns as train.csv), read after it by default.
MOE_CSV = Path(__file__).resolve().parent / "reality_moe.csv"
# Published serving measurements this project found beyond train.csv's (same columns), read after them.
SERVING_CSV = Path(__file__).resolve().parent / "reality_serving.csv"
GOAL_RATIO = 1.5  # issue 15: every expressible row within 1.5x of the measured value


@dataclass(frozen=True)
class Prediction:
    """One row's prediction, in the row's own unit, and how dfx got it."""

    value: float
    how: str


# -- op-level rows: one op captured on meta tensors, timed as the runtime that measured it ----------
def _op_latency_s(module, shapes, dtype: str, hw: str, runtime: str) -> float:
    import torch

    from dfx.capture import capture
    from dfx.costs import annotate
    from dfx.roofline import evaluate

    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    args = tuple(torch.empty(s, dtype=torch_dtype, device="meta") for s in shapes)
    return evaluate(annotate(capture(module, args)), hw, runtime=runtime).latency_s


def _matmul():
    import torch

    class MatMul(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    return MatMul()


def _softmax():
    import torch

    class Softmax(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=-1)

    return Softmax()


def gemm_ms(m: int, k: int, n: int, hw: str, runtime: str, dtype: str = "fp16") -> float:
    """``[m, k] x [k, n]`` in milliseconds."""
    return 1e3 * _op_latency_s(_matmul(), [(m, k), (k, n)], dtype, hw, runtime)


def softmax_ms(rows: int, cols: int, hw: str, runtime: str, dtype: str = "fp16") -> float:
    return 1e3 * _op_latency_s(_softmax(), [(rows, cols)], dtype, hw, runtime)


# LLMCompass times one op from PyTorch with a synchronisation around it (ae/figure5/*/real_hardware).
_TIMED = "pytorch-eager-timed"
# mamf-finder.py times many matmuls queued back to back between two CUDA events.
_QUEUED = "back-to-back"


def _llmc_gemm_big(row) -> Prediction:
    return Prediction(gemm_ms(8192, 4096, 4096, row["hardware"], _TIMED), f"aten.mm on A100, runtime {_TIMED}")


def _llmc_gemm_tiny(row) -> Prediction:
    return Prediction(gemm_ms(8192, 64, 64, row["hardware"], _TIMED), f"aten.mm on A100, runtime {_TIMED}")


def _llmc_softmax(row) -> Prediction:
    return Prediction(softmax_ms(4096, 4096, row["hardware"], _TIMED), f"aten._softmax, runtime {_TIMED}")


def _llmc_w1(row) -> Prediction:
    # one TP-4 shard of GPT-3's W1 at batch 8 decode: [8 x 12288] x [12288 x 12288] (d_model x 4d / 4)
    return Prediction(
        gemm_ms(8, 12288, 12288, row["hardware"], _TIMED), f"aten.mm, weight-read bound, runtime {_TIMED}"
    )


def _mamf_h100(row) -> Prediction:
    m, n, k = 2048, 2048, 13312
    seconds = gemm_ms(m, k, n, row["hardware"], _QUEUED, dtype="bf16") / 1e3
    return Prediction(2 * m * n * k / seconds / 1e12, f"aten.mm bf16, runtime {_QUEUED}")


# -- deployment rows: chips or systems the weights need (dfx capacity) ------------------------------
def _chips_needed(model: str, hw: str) -> int:
    from dfx.arch.memory.api import model_capacity

    return model_capacity(model, hw, dtype="bf16", batch=1, seq=1).chips_needed


def _groq_chips(row) -> Prediction:
    return Prediction(_chips_needed("hf:llama-2-70b", "groq-lpu"), "dfx capacity: bf16 weights / 220 MiB SRAM per chip")


def _cs3_systems(row) -> Prediction:
    model = f"hf:{CONFIGS / 'llama-3.1-70b.json'}"
    return Prediction(_chips_needed(model, "cerebras-wse-3"), "dfx capacity: bf16 weights / 44 GB SRAM per wafer")


# -- model rows: a phase of a causal decoder (dfx.inference), eager kernels queued back to back -------
def _phase(model: str, hw: str, *, runtime: str | None = _QUEUED, execution_model: str | None = "eager", **kwargs):
    """A phase's metrics and result; ``execution_model=None`` for Groq and Cerebras, which have no eager
    runtime (dfx refuses 'eager' there: their architecture models time every operator in the compiler's
    schedule)."""
    from dfx.analysis import analyze

    a = analyze(model, hardware=[hw], execution_model=execution_model, runtime=runtime, **kwargs)
    return a.inference.metrics(a.hardware[0].profile.id), a.hardware[0]


def _ft_gpt67(row) -> Prediction:
    m, _ = _phase(
        f"hf:{CONFIGS / 'gpt-6.7b.json'}", row["hardware"], phase="generate", prompt_len=128, output_len=8, dtype="fp16"
    )
    return Prediction(1e3 * m.total_s, f"generate 128 + 8, fp16, eager, runtime {_QUEUED}")


def _trt_ttft(row) -> Prediction:
    m, _ = _phase("hf:llama-2-7b", row["hardware"], phase="prefill", prompt_len=128, dtype="fp16")
    return Prediction(1e3 * m.ttft_s, f"prefill 128, fp16, eager, runtime {_QUEUED}")


def _trt_b384(row) -> Prediction:
    m, _ = _phase(
        "hf:llama-2-7b", row["hardware"], phase="generate", prompt_len=128, output_len=128, batch=384, dtype="fp16"
    )
    return Prediction(m.tokens_per_s, f"generate 128 + 128 at batch 384, fp16, eager, runtime {_QUEUED}")


def _bert(row) -> Prediction:
    from dfx.analysis import analyze

    # TensorRT compiles the encoder into fused kernels: the compiled execution model, whose GPU tiling
    # pass times each small GEMM ([128 x 768] x [768 x 768]) by the waves of tiles it fills the SMs with
    a = analyze(
        "hf:bert-base-uncased",
        hardware=["nvidia-a100-sxm4-40gb"],
        seq=128,
        dtype="fp16",
        execution_model="compiled",
        runtime=_QUEUED,
    )
    return Prediction(
        1e3 * a.hardware[0].latency_s,
        f"encoder forward, seq 128, fp16, compiled (fused, tile waves), runtime {_QUEUED}",
    )


def _groq_l70b(row) -> Prediction:
    m, r = _phase(
        "hf:llama-2-70b", "groq-lpu", runtime=None, execution_model=None, phase="decode", kv_len=4096, dtype="bf16"
    )
    return Prediction(
        m.tokens_per_s_per_user,
        f"decode at 4,096 cached tokens, bf16, {r.extras.get('chips')} chips (the TSP schedule)",
    )


def _cs3_l8b(row) -> Prediction:
    m, r = _phase(
        "hf:llama-3-8b", "cerebras-wse-3", runtime=None, execution_model=None, phase="decode", kv_len=1024, dtype="bf16"
    )
    return Prediction(
        m.tokens_per_s_per_user, f"decode at 1,024 cached tokens (not stated), bf16, {r.extras.get('chips')} wafer(s)"
    )


# -- mixture-of-experts rows (bench/reality_moe.csv): Mixtral-8x7B, top-2 of 8, routing uniform ---------
def _groq_mixtral(row) -> Prediction:
    m, r = _phase(
        "hf:mixtral-8x7b", "groq-lpu", runtime=None, execution_model=None, phase="decode", kv_len=1024, dtype="bf16"
    )
    return Prediction(
        m.tokens_per_s_per_user,
        f"decode at 1,024 cached tokens (not stated), bf16, {r.extras.get('chips')} chips, 2 of 8 experts read a layer",
    )


def _baseten_mixtral(row) -> tuple[object, str]:
    # TensorRT-LLM int8 weight-only on one A100: fp16 activations, int8 weights; 512 in, 128 out, batch 1.
    # dfx builds MoE models in bf16 only (torch's grouped-GEMM shape rule): the A100's bf16 and fp16
    # peaks and widths are the same (312 TFLOP/s dense, 2 bytes), so the times are fp16's.
    m, _ = _phase(
        "hf:mixtral-8x7b",
        "nvidia-a100-sxm-80gb",
        phase="generate",
        prompt_len=512,
        output_len=128,
        dtype="bf16",
        weight_dtype="int8",
    )
    return m, f"generate 512 + 128, int8 weights, bf16 activations (fp16's peak), eager, runtime {_QUEUED}"


def _baseten_ttft(row) -> Prediction:
    m, how = _baseten_mixtral(row)
    return Prediction(1e3 * m.ttft_s, how)


def _baseten_rate(row) -> Prediction:
    m, how = _baseten_mixtral(row)
    return Prediction(m.tokens_per_s_per_user, how)


# -- training rows: one step of data-parallel training (dfx --train, dfx.parallel.data) ----------------
def _maxtext_l8b(row) -> Prediction:
    from dfx.analysis import analyze

    # The recipe the row's source links (AI-Hypercomputer/tpu-recipes training/trillium/
    # Llama3.1-8B-MaxText/v6e-256, MaxText tpu-recipes-v0.1.4 `llama3_1_8b_8192`) states
    # per_device_batch_size 4 and ici_fsdp_parallelism -1 (FSDP over all 256 chips); its log line
    # (4.546 s per step, 7,207 tokens/s/device) is 4 x 8192 tokens per chip per step. MaxText's
    # default optimizer is AdamW. hf:llama-3-8b has Llama 3.1 8B's shapes (3.1 changes the RoPE
    # scaling and context length only). The whole model is captured (about 1 min, 14 GB).
    batch, seq = 4, 8192
    a = analyze(
        "hf:llama-3-8b",
        train=True,
        optimizer="adamw",
        batch=batch,
        seq=seq,
        dtype="bf16",
        hardware=[row["hardware"]],
        parallel="fsdp=256",
    )
    r = a.hardware[0]
    dp = r.extras["parallel"]["data_parallel"]
    rec = r.extras.get("recompute")
    remat = (
        f"full activation recomputation ({rec['kept_bytes'] / 2**30:.1f} of {rec['saved_bytes'] / 2**30:.0f} GiB "
        f"kept, +{rec['recompute_s']:.3f} s); no host offload modelled"
        if rec
        else "no recomputation or host offload modelled"
    )
    return Prediction(
        batch * seq / r.latency_s,
        f"train step, batch 4 x seq 8192 per chip (the recipe's), bf16, AdamW, fsdp 256, compiled, ideal roofline: "
        f"{r.latency_s:.3f} s/step, collectives {dp['collective_s']:.3f} s ({dp['exposed_s']:.3f} s exposed); {remat}",
    )


# -- serving rows: dfx serve (docs/serving.md), run as a user would run it -----------------------------
# SGLang v0.3.0's table (sgl-project/sglang benchmark/benchmark_vllm_060/README.md): Llama 3.1 70B
# Instruct, TP 4 on 4 H100s, ShareGPT through sglang.bench_serving, radix cache disabled. What the
# run states is passed as it is: 4 chips, rate 4 with 1,200 prompts or 5,000 prompts at once,
# mem_frac 0.85 at TP 4 (0.88 set by hand for the offline run, the README's note). SGLang's own
# defaults of the time are passed as its user got them: chunked_prefill_size 8192
# (python/sglang/srt/server_args.py), max_running_requests = max_total_tokens // 2, i.e. no limit
# below the cache (4,096 here). Lengths: ShareGPT's mean prompt, 161 tokens (Kwon et al., SOSP 2023,
# section 6.1), and the run's own mean output, 3,856.01 / 19.84 = 194.4 tokens; the spread is not
# published: lognormal with sigma 1.0, an assumption. Kernels queued back to back (runtime
# back-to-back: the profile's H100 fractions, from MAMF, not from this row).
_SGL_SERVE = {
    "model": f"hf:{CONFIGS / 'llama-3.1-70b.json'}",
    "hardware": ("nvidia-h100-sxm",),
    "chips": 4,
    "input_len": "lognormal:161,1.0",
    "output_len": "lognormal:194,1.0",
    "max_batch_tokens": 8192,
    "max_seqs": 4096,
    "runtime": _QUEUED,
    # SGLang v0.3's scheduler runs a prefill batch as an iteration of its own, first, and the decode
    # batch only when no prefill can be formed: enable_mixed_chunk defaults to False
    # (python/sglang/srt/server_args.py of the time; dfx.serve.engine, "Separate prefill")
    "prefill": "separate",
}
# The same table's Llama 3.1 8B Instruct rows on one A100 80G (bench/reality_serving.csv): TP 1,
# mem_frac 0.88 (SGLang's default at TP 1, the README's note), the same ShareGPT sample (the offline
# run's 4,281.51 / 22.03 = 194.4 output tokens a request again). hf:llama-3-8b has Llama 3.1 8B's
# shapes (the 3.1 release changed the RoPE scaling for long contexts only). The run also passes
# --enable-torch-compile, which dfx's compiled programs already assume.
_SGL_8B = {
    **_SGL_SERVE,
    "model": "hf:llama-3-8b",
    "hardware": ("nvidia-a100-sxm-80gb",),
    "chips": 1,
}
_SGL_RUNS = {  # row id prefix -> (setting, rate or None for all at once, prompts, mem_fraction)
    "SGL-L31-70B-4xH100-rps4": (_SGL_SERVE, 4.0, 1200, 0.85),
    "SGL-L31-70B-4xH100-rps8": (_SGL_SERVE, 8.0, 2400, 0.85),
    "SGL-L31-70B-4xH100-offline": (_SGL_SERVE, None, 5000, 0.88),
    "SGL-L31-8B-A100-rps4": (_SGL_8B, 4.0, 1200, 0.88),
    "SGL-L31-8B-A100-rps8": (_SGL_8B, 8.0, 2400, 0.88),
    "SGL-L31-8B-A100-offline": (_SGL_8B, None, 5000, 0.88),
}
_PRICERS: dict = {}  # one StepPricer per model, machine and split: every run of it shares its steps


def _pricer_factory(setting: dict):
    from dfx.serve.steps import StepPricer

    def factory(profiles, split):
        key = (setting["model"], tuple(p.id for p in profiles), str(split))
        if key not in _PRICERS:
            _PRICERS[key] = StepPricer.from_model(setting["model"], profiles, split=split, runtime=setting["runtime"])
        return _PRICERS[key]

    return factory


@cache
def _sgl_run(prefix: str):
    from dfx.serve import Arrivals, ServeConfig, simulate

    setting, rate, prompts, mem_fraction = _SGL_RUNS[prefix]
    arrivals = Arrivals(rate=rate, requests=prompts) if rate else Arrivals(requests=prompts)
    config = ServeConfig(**setting, arrivals=arrivals, mem_fraction=mem_fraction)
    return simulate(config, pricer_factory=_pricer_factory(setting)).machines[0]


def _sgl_how(m) -> str:
    return (
        f"dfx serve, continuous batching, prefill separate, {m.chips} chip(s), ShareGPT-like lognormal 161/194 "
        f"tokens (sigma 1.0), {m.kv_capacity_tokens:,} KV tokens, mean batch {m.summary.mean_batch:.1f}, "
        f"runtime {_QUEUED}"
    )


def _sgl_prefix(row) -> str:
    return row["id"].rsplit("-", 1)[0]


def _sgl_ttft(row) -> Prediction:
    m = _sgl_run(_sgl_prefix(row))
    return Prediction(1e3 * m.summary.ttft_s.p50, _sgl_how(m))


def _sgl_tpot(row) -> Prediction:
    m = _sgl_run(_sgl_prefix(row))
    return Prediction(1e3 * m.summary.tpot_s.p50, _sgl_how(m))


def _sgl_offline(row) -> Prediction:
    m = _sgl_run(row["id"])
    return Prediction(m.summary.output_tokens_per_s, _sgl_how(m) + f", {m.summary.preemptions:,} preemptions")


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
            "| row | metric | unit | measured | predicted | predicted / measured | how |",
            "|---|---|---|---:|---:|---:|---|",
        ]
    for o in results:
        r = o.row
        if o.prediction is None:
            cells = [r["id"], r["metric"], r["unit"], _fmt(o.measured), "-", "-", o.reason]
        else:
            cells = [
                r["id"],
                r["metric"],
                r["unit"],
                _fmt(o.measured),
                _fmt(o.prediction.value),
                f"{o.ratio:.2f}",
                o.prediction.how,
            ]
        lines.append(
            "| " + " | ".join(cells) + " |"
            if markdown
            else "  ".join(f"{c:<14}" if i else f"{c:<32}" for i, c in enumerate(cells))
        )
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
        help="one CSV of rows (default: train.csv, reality_moe.csv, reality_serving.csv)",
    )
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", default="", help="predict only the rows whose id starts with this")
    ns = parser.parse_args()
    paths = [ns.csv] if ns.csv is not None else [DEFAULT_CSV, MOE_CSV, SERVING_CSV]
    rows = [r for path in paths for r in read_rows(path)]
    results = tuple(predict_row(r) for r in rows if r["id"].startswith(ns.only))
    print(render(results, ns.markdown))


if __name__ == "__main__":
    main()
