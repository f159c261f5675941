"""Regenerate docs/gpu.md's pictures: the wave-quantization sawtooth and the GPU/TPU/Spyre contrast.

    .venv/bin/python scripts/make_gpu_images.py [--reality ../shared/reality/train.csv]

The sawtooth: predicted TFLOP/s of ``[4096, 4096] @ [4096, N]`` in bf16 on the H100 against N, for
one fixed Triton config (128x128x64, 5 stages, 8 warps: one program per SM) and for the config
Inductor's autotuning keeps (dfx's chooser), with the dense peak and the published large-GEMM
measurement (row ``MAMF-H100-bf16`` of the reality table) marked. Review the images in the diff.
"""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
MEASURED_ROW = "MAMF-H100-bf16"


def _measured(path: Path) -> tuple[float, str] | None:
    if not path.exists():
        return None
    for row in csv.DictReader(path.open()):
        if row["id"] == MEASURED_ROW:
            return float(row["measured"]), f"{row['model']}, measured ({row['source'].split(',')[0]})"
    return None


def sawtooth_png(reality: Path) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dfx.arch.gpu import GemmConfig, gemm_kernel
    from dfx.hardware import load_profile

    h100 = load_profile("nvidia-h100-sxm")
    fixed = GemmConfig(128, 128, 64, 5, 8)
    ns = list(range(128, 8192 + 1, 64))
    fixed_tf = [gemm_kernel(4096, 4096, n, h100, config=fixed).flop_per_s / 1e12 for n in ns]
    tuned_tf = [gemm_kernel(4096, 4096, n, h100).flop_per_s / 1e12 for n in ns]
    fig, ax = plt.subplots(figsize=(10, 5))
    ax.plot(ns, fixed_tf, lw=1.2, label="Triton 128x128x64, 5 stages, 8 warps (1 program/SM)")
    ax.plot(ns, tuned_tf, lw=1.2, alpha=0.8, label="the config Inductor's autotuning keeps (dfx's chooser)")
    peak = h100.peak("bfloat16").flop_per_s / 1e12
    ax.axhline(peak, color="k", ls=":", lw=1, label=f"dense bf16 peak {peak:.0f} TFLOP/s")
    measured = _measured(reality)
    if measured:
        ax.axhline(measured[0], color="tab:red", ls="--", lw=1, label=f"{measured[0]:.0f} TFLOP/s: {measured[1]}")
    for waves in range(1, 17):  # N at which the fixed config's grid fills `waves` waves: 32 * N/128 = 132 * waves
        n = 132 * waves * 128 / 32
        if n <= ns[-1]:
            ax.axvline(n, color="0.85", lw=0.8, zorder=0)
    ax.set_xlabel("N  (M = K = 4096, bf16)")
    ax.set_ylabel("predicted TFLOP/s")
    ax.set_title("Wave quantization on an H100 (132 SMs): one tile past a wave boundary costs a whole wave")
    ax.set_ylim(0, peak * 1.08)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def contrast_png() -> bytes:
    from dfx.arch.gpu import GemmConfig, gemm_kernel
    from dfx.arch.gpu.contrast import contrast, draw_contrast
    from dfx.hardware import load_profile

    kern = gemm_kernel(4096, 4096, 4096, load_profile("nvidia-h100-sxm"), config=GemmConfig(128, 128, 64, 5, 8))
    return draw_contrast(contrast(kern))


def main() -> None:
    from dfx.report.files import write_outputs

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--reality",
        type=Path,
        default=ROOT.parent / "shared" / "reality" / "train.csv",
        help="the published measurements table (default: ../shared/reality/train.csv)",
    )
    args = parser.parse_args()
    files = {"gpu-sawtooth.png": sawtooth_png(args.reality), "gpu-contrast.png": contrast_png()}
    for path in write_outputs(IMAGES, files, force=True):
        print(path)


if __name__ == "__main__":
    main()
