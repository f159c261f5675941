"""LLM inference phases: prefill, decode steps over a KV cache, and generate (TTFT, TPOT, tokens/s).

See ``docs/inference.md``. :func:`analyze_phase` is what ``dfx.analyze(..., phase=...)`` calls.
"""

from dfx.inference.phases import InferenceResult, Phase, PhaseRequest, ProfileMetrics, run_phase, sum_over_steps

__all__ = ["InferenceResult", "Phase", "PhaseRequest", "ProfileMetrics", "run_phase", "sum_over_steps"]
