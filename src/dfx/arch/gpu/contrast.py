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
            "gpu": {
                "hardware": self.gpu.profile_id,
                "programs": self.gpu.programs,
                "waves": self.gpu.waves.count,
                "time_s": self.gpu.time_s,
            },
            "tpu": {
                "hardware": self.tpu_profile,
                "units": self.tpu_array[0],
                "array": list(self.tpu_array[1:]),
                **self.tpu.to_dict(),
            },
            "spyre": {"hardware": self.spyre_profile, "cores": self.spyre_cores, **self.spyre.to_dict()},
        }


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


def _draw_program(ax, g: GemmKernel) -> None:
    """One Triton program, schematically: its K loop over A and B tiles, the shared-memory ring of
    ``num_stages`` tiles in flight, and the accumulator tile held in the warps' registers."""
    from matplotlib.patches import Rectangle

    cfg = g.config
    steps = min(g.k_iterations, 8)  # draw at most 8 K steps
    w = 1.0
    ax.set_xlim(-0.5, steps + 4.2)
    ax.set_ylim(-1.6, steps + 4.2)
    ax.set_aspect("equal")
    ax.axis("off")
    for i in range(steps):  # A tiles along K (left to right), B tiles along K (top to bottom)
        colour = "tab:orange" if i < cfg.num_stages else "0.9"
        ax.add_patch(Rectangle((i * w, 0), w * 0.9, 2.4, color=colour))
        ax.add_patch(Rectangle((steps + 0.6, steps + 3.0 - (i + 1) * w), 2.4, w * 0.9, color=colour))
    ax.add_patch(Rectangle((steps + 0.6, 0), 2.4, 2.4, color="tab:blue"))
    for j in range(1, min(cfg.num_warps, 8)):  # the accumulator split among the warps
        ax.plot([steps + 0.6, steps + 3.0], [j * 2.4 / min(cfg.num_warps, 8)] * 2, color="white", lw=0.8)
    more = " ..." if g.k_iterations > steps else ""
    ax.text(0, 2.6, f"A[{cfg.block_m}, {cfg.block_k}] x {g.k_iterations} K steps{more}", fontsize=8)
    ax.text(steps + 0.6, steps + 3.2, f"B[{cfg.block_k}, {cfg.block_n}]", fontsize=8)
    ax.text(steps + 0.6, -1.3, f"acc[{cfg.block_m}, {cfg.block_n}] fp32\n{cfg.num_warps} warps' registers", fontsize=8)
    ax.set_title(
        f"one Triton program: loop over K, {cfg.num_stages} stages in flight\n"
        f"(orange: the shared-memory ring, {g.shared_memory_bytes // 1024} KiB)",
        fontsize=9,
    )


def draw_contrast(c: Contrast) -> bytes:
    """Four panels: one Triton program; the GPU's output tiles coloured by wave; the TPU's weight
    folds by MXU; Spyre's output tiles by core. Returns the PNG's bytes."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g, cfg = c.gpu, c.gpu.config
    fig, axes = plt.subplots(1, 4, figsize=(19, 5.2), gridspec_kw={"width_ratios": [0.8, 1, 1, 1]})
    _draw_program(axes[0], g)
    axes = axes[1:]
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
    ax.set_title(
        f"GPU ({g.profile_id}): Triton programs, {cfg.block_m}x{cfg.block_n} tiles\n"
        f"{g.programs} programs, {g.occupancy.blocks_per_sm}/SM on {g.sms} SMs: {g.waves.count} waves "
        f"(last {g.waves.tail_programs}/{g.waves.per_wave})\n{g.time_s * 1e6:.1f} us, colour = wave",
        fontsize=9,
    )
    ax.set_xlabel(f"pid_n (N / {cfg.block_n})")
    ax.set_ylabel(f"pid_m (M / {cfg.block_m})")
    # TPU: weight-stationary folds (K/R x N/C) dealt to the MXUs
    units, r_, c_ = c.tpu_array
    kf, nf = math.ceil(g.k / r_), math.ceil(g.n / c_)
    rows, cols, step = _shrink(kf, nf)
    ax = axes[1]
    ax.imshow(_grid_image(rows, cols, lambda r, q: ((r * step) * nf + q * step) % units), cmap="tab10", aspect="auto")
    ax.set_title(
        f"TPU ({c.tpu_profile}): {units} MXUs of {r_}x{c_}, weights stationary\n"
        f"{c.tpu.folds} folds, {c.tpu.folds_per_unit} per MXU, M={g.m} rows streamed through each\n"
        f"{c.tpu.time_s * 1e6:.1f} us, colour = MXU",
        fontsize=9,
    )
    ax.set_xlabel(f"N fold (N / {c_})")
    ax.set_ylabel(f"K fold (K / {r_})")
    # Spyre: output tiles dealt to the cores
    t = c.spyre
    tm_, tn_ = math.ceil(g.m / t.tm), math.ceil(g.n / t.tn)
    rows, cols, step = _shrink(tm_, tn_)
    ax = axes[2]
    ax.imshow(
        _grid_image(rows, cols, lambda r, q: ((r * step) * tn_ + q * step) % c.spyre_cores), cmap="turbo", aspect="auto"
    )
    ax.set_title(
        f"Spyre ({c.spyre_profile}): {c.spyre_cores} cores, scratchpad tiles {t.tm}x{t.tn}x{t.tk}\n"
        f"{tm_ * tn_} output tiles, working set {t.working_set_bytes / 2**20:.2f} MiB per core\n"
        f"{t.time_s * 1e6:.1f} us ({t.bound.value}-bound), colour = core",
        fontsize=9,
    )
    ax.set_xlabel(f"N tile (N / {t.tn})")
    ax.set_ylabel(f"M tile (M / {t.tm})")
    fig.suptitle(
        f"GEMM [{g.m}x{g.k}] @ [{g.k}x{g.n}] ({g.dtype}): tile programs vs a systolic array vs scratchpad cores"
    )
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
