"""The same GEMM three ways: Triton's tile programs on a GPU, the TPU's systolic array, Spyre's cores.

The GPU side is :func:`dfx.arch.gpu.kernel.gemm_kernel`; the TPU side is
:func:`dfx.arch.systolic.chip.chip_gemm` (weight-stationary, pipelined, as ``dfx analyze`` times a
TPU); the Spyre side is :func:`dfx.arch.memory.tiling.choose_tile` on the profile's cores
(:func:`dfx.arch.memory.api.machine_for`). This module only gathers them; it models nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfx.arch.gpu.kernel import GemmKernel

__all__ = ["Contrast", "contrast", "draw_contrast"]

TPU_PROFILE = "google-tpu-v5e"
SPYRE_PROFILE = "ibm-spyre"


@dataclass(frozen=True)
class Contrast:
    gpu: GemmKernel
    tpu: Any  # ChipGemm
    tpu_profile: str
    tpu_array: tuple[int, int, int]  # units, rows, cols
    spyre: Any  # TileChoice
    spyre_profile: str
    spyre_cores: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": {"hardware": self.gpu.profile_id, "programs": self.gpu.programs, "waves": self.gpu.waves.count,
                    "time_s": self.gpu.time_s},
            "tpu": {"hardware": self.tpu_profile, "units": self.tpu_array[0], "array": list(self.tpu_array[1:]),
                    **self.tpu.to_dict()},
            "spyre": {"hardware": self.spyre_profile, "cores": self.spyre_cores, **self.spyre.to_dict()},
        }  # fmt: skip


def contrast(gpu: GemmKernel) -> Contrast:
    """The TPU and Spyre sides of ``gpu``'s GEMM, from dfx's systolic and tiling models."""
    from dfx.arch.memory.api import machine_for
    from dfx.arch.memory.tiling import Gemm, choose_tile
    from dfx.arch.systolic.chip import chip_gemm, mxu_spec
    from dfx.hardware import load_profile

    tpu_profile, spyre_profile = load_profile(TPU_PROFILE), load_profile(SPYRE_PROFILE)
    spec = mxu_spec(tpu_profile)
    tpu = chip_gemm(gpu.m, gpu.k, gpu.n, spec, batch=gpu.batch, dataflow="ws", pipelined=True)
    machine = machine_for(spyre_profile, "float16")
    tile = choose_tile(Gemm(gpu.m, gpu.k, gpu.n, elem_bytes=2, batch=gpu.batch), machine)
    return Contrast(gpu, tpu, tpu_profile.id, (spec.units, spec.rows, spec.cols), tile, spyre_profile.id, machine.cores)


def _grid_image(rows: int, cols: int, owner) -> list[list[float]]:
    return [[owner(r, c) for c in range(cols)] for r in range(rows)]


def _shrink(rows: int, cols: int, cap: int = 96) -> tuple[int, int, int]:
    """Draw at most ``cap`` cells a side: every ``step``-th cell."""
    step = max(1, math.ceil(max(rows, cols) / cap))
    return math.ceil(rows / step), math.ceil(cols / step), step


def draw_contrast(c: Contrast) -> bytes:
    """Three panels: the GPU's output tiles coloured by wave, the TPU's weight folds by MXU, Spyre's
    output tiles by core. Returns the PNG's bytes."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g, cfg = c.gpu, c.gpu.config
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2))
    # GPU: program (pid_m, pid_n) in grouped order -> its wave
    pm, pn = g.grid[0], g.grid[1]
    per_wave, group = g.waves.per_wave, cfg.group_m
    order = {}
    for pid in range(pm * pn):
        gid, off = divmod(pid, group * pn)
        gs = min(pm - gid * group, group)
        order[(gid * group + off % gs, off // gs)] = pid // per_wave
    rows, cols, step = _shrink(pm, pn)
    ax = axes[0]
    ax.imshow(_grid_image(rows, cols, lambda r, q: order[(r * step, q * step)]), cmap="viridis", aspect="auto")
    ax.set_title(f"GPU ({g.profile_id}): Triton programs, {cfg.block_m}x{cfg.block_n} tiles\n"
                 f"{g.programs} programs, {g.occupancy.blocks_per_sm}/SM on {g.sms} SMs: {g.waves.count} waves "
                 f"(last {g.waves.tail_programs}/{g.waves.per_wave})\n{g.time_s * 1e6:.1f} us, colour = wave", fontsize=9)
    ax.set_xlabel(f"pid_n (N / {cfg.block_n})")
    ax.set_ylabel(f"pid_m (M / {cfg.block_m})")
    # TPU: weight-stationary folds (K/R x N/C) dealt to the MXUs
    units, r_, c_ = c.tpu_array
    kf, nf = math.ceil(g.k / r_), math.ceil(g.n / c_)
    rows, cols, step = _shrink(kf, nf)
    ax = axes[1]
    ax.imshow(_grid_image(rows, cols, lambda r, q: ((r * step) * nf + q * step) % units), cmap="tab10", aspect="auto")
    ax.set_title(f"TPU ({c.tpu_profile}): {units} MXUs of {r_}x{c_}, weights stationary\n"
                 f"{c.tpu.folds} folds, {c.tpu.folds_per_unit} per MXU, M={g.m} rows streamed through each\n"
                 f"{c.tpu.time_s * 1e6:.1f} us, colour = MXU", fontsize=9)
    ax.set_xlabel(f"N fold (N / {c_})")
    ax.set_ylabel(f"K fold (K / {r_})")
    # Spyre: output tiles dealt to the cores
    t = c.spyre
    tm_, tn_ = math.ceil(g.m / t.tm), math.ceil(g.n / t.tn)
    rows, cols, step = _shrink(tm_, tn_)
    ax = axes[2]
    ax.imshow(_grid_image(rows, cols, lambda r, q: ((r * step) * tn_ + q * step) % c.spyre_cores), cmap="turbo", aspect="auto")
    ax.set_title(f"Spyre ({c.spyre_profile}): {c.spyre_cores} cores, scratchpad tiles {t.tm}x{t.tn}x{t.tk}\n"
                 f"{tm_ * tn_} output tiles, working set {t.working_set_bytes / 2**20:.2f} MiB per core\n"
                 f"{t.time_s * 1e6:.1f} us ({t.bound.value}-bound), colour = core", fontsize=9)
    ax.set_xlabel(f"N tile (N / {t.tn})")
    ax.set_ylabel(f"M tile (M / {t.tm})")
    fig.suptitle(f"GEMM [{g.m}x{g.k}] @ [{g.k}x{g.n}] ({g.dtype}): tile programs vs a systolic array vs scratchpad cores")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
