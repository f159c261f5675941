"""Benchmark: decode per user on machines that keep weights on chip, over pipelines of wafers or chips.

Each row is a published per-user decode rate (``../shared/reality/train.csv`` and
``bench/reality_pipelines.csv``, sources there) asked through the command line a user would type,
``dfx analyze MODEL --phase decode --kv-len N --hw ID``; the script prints the command, dfx's
tokens/s per user (the number that command prints) and the ratio to the published rate.
Not a test: it asserts nothing (docs/spatial.md, "A pipeline over several wafers", keeps the table).

Usage: python bench/bench_pipelines.py [--only ID_PREFIX]
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN_CSV = next(
    (p / "shared" / "reality" / "train.csv" for p in ROOT.parents if (p / "shared" / "reality" / "train.csv").exists()),
    ROOT.parent / "shared" / "reality" / "train.csv",
)
PIPELINES_CSV = Path(__file__).resolve().parent / "reality_pipelines.csv"

# row id -> (model, cached tokens): the model with the row's shapes and the context the row states
# (1,024 where it states none; hf:llama-3-8b has Llama 3.1 8B's shapes, 3.1 changes only RoPE scaling)
ROWS = {
    "CS3-L3.1-8B-tok/s": ("hf:llama-3-8b", 1024),
    "CS3-L3.1-70B-tok/s": ("hf:llama-3.1-70b", 1024),
    "Groq-L2-7B-tok/s": ("hf:llama-2-7b", 2048),
    "Groq-L70B-tok/s": ("hf:llama-2-70b", 4096),
}
_RATE = re.compile(r"tokens/s per user ([0-9.,]+)")


def _published() -> dict[str, dict[str, str]]:
    rows = {}
    for path in (TRAIN_CSV, PIPELINES_CSV):
        if path.exists():
            with path.open(newline="") as f:
                rows.update({r["id"]: r for r in csv.DictReader(f)})
    return rows


def _command(model: str, kv_len: int, hw: str) -> list[str]:
    return ["dfx", "analyze", model, "--phase", "decode", "--kv-len", str(kv_len), "--hw", hw]


def _run(cmd: list[str]) -> float | None:
    out = subprocess.run([sys.executable, "-m", "dfx.cli", *cmd[1:]], capture_output=True, text=True, timeout=900)
    found = _RATE.findall(out.stdout)
    return float(found[-1].replace(",", "")) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="Rows whose id starts with this.")
    args = parser.parse_args()
    published = _published()
    print("| row | command | published | dfx | dfx / published |")
    print("|---|---|---|---|---|")
    for row_id, (model, kv_len) in ROWS.items():
        if not row_id.startswith(args.only) or row_id not in published:
            continue
        row = published[row_id]
        cmd = _command(model, kv_len, row["hardware"])
        rate = _run(cmd)
        measured = float(row["measured"])
        shown = f"{rate:,.1f} | {rate / measured:.2f}" if rate else "no rate printed | -"
        print(f"| {row_id} | `{' '.join(cmd)}` | {measured:,.0f} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
