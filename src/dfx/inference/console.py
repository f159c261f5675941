"""The console lines of an inference phase, read from the export document's ``inference`` section."""

from __future__ import annotations

from typing import Any

__all__ = ["inference_lines", "print_inference"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:,.3f} ms"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def inference_lines(doc: dict[str, Any]) -> list[str]:
    """One header line, then one line per profile: TTFT, TPOT, tokens/s per user and per system."""
    inf = doc["inference"]
    lengths = {
        "prefill": f"prompt {inf['prompt_len']}",
        "decode": f"kv_len {inf['kv_len']}",
        "generate": f"prompt {inf['prompt_len']}, output {inf['output_len']}",
    }[inf["phase"]]
    prec = inf["precision"]  # always written (empty: the model's own dtype throughout)
    widths = ", ".join(f"{k} {prec[k]}" for k in ("activation", "weight", "kv_cache") if k in prec)
    lines = [
        f"{inf['phase']}: batch {inf['batch']}, {lengths}; {inf['n_layers']} layer{'s' if inf['n_layers'] != 1 else ''} x {inf['n_kv_heads']} KV heads x "
        f"{inf['head_dim']}; KV cache {inf['kv_cache_bytes'] / 1e9:,.3f} GB for {inf['kv_cache_tokens']} tokens "
        f"({inf['kv_dtype']}){'; ' + widths if widths else ''}"
    ]
    for pid, m in inf["profiles"].items():
        lines.append(
            f"  {pid}: TTFT {_ms(m['ttft_s'])}, TPOT {_ms(m['tpot_s'])}, total {_ms(m['total_s'])}, "
            f"tokens/s per user {_rate(m['tokens_per_s_per_user'])}, tokens/s system {_rate(m['tokens_per_s'])}"
        )
    return lines


def print_inference(doc: dict[str, Any], console) -> None:
    for line in inference_lines(doc):
        console.print(line, highlight=False, markup=False)
