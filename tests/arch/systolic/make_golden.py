"""Regenerate ``golden_scalesim.json``: SCALE-Sim's numbers for layers too large to run live in the tests.

Run from the repo root (it makes or reuses SCALE-Sim's venv, see ``scalesim_env.py``)::

    .venv/bin/python tests/arch/systolic/make_golden.py

and review the diff. The file holds SCALE-Sim's own report fields, untouched; the test derives
dfx's counterparts (count = index + 1, and so on) in the open.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scalesim_env import SCALESIM_VERSION, run_scalesim  # noqa: E402

GOLDEN = Path(__file__).with_name("golden_scalesim.json")

# (M, K, N) GEMMs and conv layers (H, W, FH, FW, C, NF, S), each on an array, under all three dataflows
GEMMS = [((64, 64, 64), (8, 8)), ((100, 50, 70), (16, 8)), ((33, 17, 45), (4, 8)), ((256, 128, 64), (32, 32))]
CONVS = [
    ((14, 14, 3, 3, 16, 32, 1), (16, 16)),
    ((28, 28, 3, 3, 8, 16, 2), (8, 8)),
    ((7, 7, 1, 1, 64, 64, 1), (32, 32)),
    ((16, 16, 5, 5, 3, 24, 2), (8, 16)),
]
_CONV_FIELDS = ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride")


def cases() -> list[dict]:
    out = []
    for dataflow in ("os", "ws", "is"):
        for (m, k, n), (r, c) in GEMMS:
            out.append({"kind": "gemm", "m": m, "k": k, "n": n, "rows": r, "cols": c, "dataflow": dataflow})
        for layer, (r, c) in CONVS:
            out.append({"kind": "conv", **dict(zip(_CONV_FIELDS, layer)), "rows": r, "cols": c, "dataflow": dataflow})
    return out


def main() -> None:
    results = run_scalesim(cases())
    for r in results:
        r.pop("seconds")
    doc = {
        "generator": "tests/arch/systolic/make_golden.py",
        "scalesim": SCALESIM_VERSION,
        "mode": "CALC, large SRAM",
        "results": results,
    }
    GOLDEN.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {GOLDEN} ({len(results)} cases)")


if __name__ == "__main__":
    main()
