"""What ``dfx triton`` calls: profile lookup, configs from flags, the text summary and the output files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dfx.arch.gpu.attention import AttentionConfig, attention_kernel, default_config
from dfx.arch.gpu.configs import GemmConfig, PointwiseConfig, ReductionConfig, gemm_candidates, next_power_of_2
from dfx.arch.gpu.kernel import GemmKernel, SimtKernel, gemm_kernel, pointwise_kernel, reduction_kernel
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile, load_profile

__all__ = [
    "attention_config_from",
    "attention_kernel",
    "block_document",
    "describe",
    "describe_block",
    "gemm_config_from",
    "gemm_kernel",
    "gpu_profile",
    "pointwise_config_from",
    "pointwise_kernel",
    "reduction_config_from",
    "reduction_kernel",
    "write_outputs",
]

# triton.Config's defaults (python/triton/runtime/autotuner.py): num_warps=4, num_stages=3
_TRITON_DEFAULT_WARPS = 4
_TRITON_DEFAULT_STAGES = 3


def gpu_profile(hw: str) -> HardwareProfile:
    """The profile ``hw``; a one-line error if it has no ``simt`` section."""
    profile = load_profile(hw)
    if profile.simt is None:
        raise DfxError(
            f"--hw {hw}: profile {profile.id!r} has no simt section; use nvidia-h100-sxm, nvidia-b200, amd-mi300x or another GPU profile"
        )
    return profile


def gemm_config_from(
    block: tuple[int, ...] | None,
    stages: int | None,
    warps: int | None,
    m: int,
    k: int,
    n: int,
    dtype: str,
    profile: HardwareProfile,
) -> GemmConfig | None:
    """``--block`` with optional ``--stages``/``--warps``: missing ones from Inductor's matching
    candidate (the predicted fastest), else Triton's defaults; ``None`` without ``--block``."""
    if block is None:
        if stages is not None or warps is not None:
            raise DfxError("--stages and --warps need --block BLOCK_M,BLOCK_N,BLOCK_K")
        return None
    bm, bn, bk = block
    same = [
        c
        for c in gemm_candidates(m, k, n)
        if (c.block_m, c.block_n, c.block_k) == (bm, bn, bk)
        and (stages is None or c.num_stages == stages)
        and (warps is None or c.num_warps == warps)
    ]
    if same and (stages is None or warps is None):
        best = min(same, key=lambda c: gemm_kernel(m, k, n, profile, dtype=dtype, config=c).time_s)
        return best
    return GemmConfig(bm, bn, bk, stages or _TRITON_DEFAULT_STAGES, warps or _TRITON_DEFAULT_WARPS)


def attention_config_from(
    block: tuple[int, ...] | None, stages: int | None, warps: int | None, profile: HardwareProfile | None = None
) -> AttentionConfig:
    """``--block BLOCK_M,BLOCK_N`` with ``--stages``/``--warps``; the tutorial's 128, 64, 3 stages, 8 warps
    otherwise (1 stage on ``profile`` with 64-lane wavefronts: :func:`dfx.arch.gpu.attention.default_config`)."""
    d = AttentionConfig() if profile is None else default_config(profile)
    bm, bn = block if block else (d.block_m, d.block_n)
    return AttentionConfig(bm, bn, warps or d.num_warps, stages or d.num_stages)


def pointwise_config_from(block: tuple[int, ...] | None, warps: int | None) -> PointwiseConfig | None:
    if block is None:
        return None
    return PointwiseConfig(block[0], warps or _TRITON_DEFAULT_WARPS)


def reduction_config_from(block: tuple[int, ...] | None, warps: int | None, cols: int) -> ReductionConfig | None:
    if block is None:
        return None
    x, r = block
    return ReductionConfig(x, r, warps or _TRITON_DEFAULT_WARPS, persistent=r >= next_power_of_2(cols))


def write_outputs(kern: GemmKernel | SimtKernel, doc: dict[str, Any], out: Path, *, force: bool = False) -> list[str]:
    """Write ``triton.json`` and, for a GEMM, ``contrast.png`` (GPU vs TPU vs Spyre) under ``out``.

    Adds ``contrast`` (for a GEMM) and ``files`` to ``doc``. Refuses to overwrite unless ``force``.
    """
    from dfx.report.files import check_targets, write_outputs as write_files

    names = ["triton.json"] + (["contrast.png"] if isinstance(kern, GemmKernel) else [])
    check_targets(out, names, force=force)
    files: dict[str, str | bytes] = {}
    if isinstance(kern, GemmKernel):
        from dfx.arch.gpu.contrast import contrast, draw_contrast

        c = contrast(kern)
        doc["contrast"] = c.to_dict()
        files["contrast.png"] = draw_contrast(c)
    doc["files"] = [str(out / name) for name in names]
    files = {"triton.json": json.dumps(doc, indent=1) + "\n", **files}
    write_files(out, files, force=force)
    return doc["files"]


_BLOCK_REGS = 32  # registers per thread of a --threads block when --regs is not given (as a pointwise program's)


def block_document(
    threads: int, profile: HardwareProfile, *, registers_per_thread: int | None = None
) -> dict[str, Any]:
    """``dfx triton --threads N``: a block of ``threads`` cut into the profile's warps (wavefronts
    on AMD), its masked lanes, and its occupancy with no shared memory.

    Examples
    --------
    >>> doc = block_document(90, load_profile("amd-mi300x"))
    >>> doc["warp_size_threads"], doc["warps"], doc["masked_lanes"]   # 2 * 64 - 90
    (64, 2, 38)
    """
    from dfx.arch.gpu.simt import block_warps, occupancy, simt_spec

    spec = simt_spec(profile)
    block = block_warps(threads, spec.warp_size)
    regs = _BLOCK_REGS if registers_per_thread is None else registers_per_thread
    occ = occupancy(spec, threads_per_block=threads, registers_per_thread=regs, shared_memory_bytes=0)
    return {
        "kind": "block",
        "hardware": profile.id,
        **block.to_dict(),
        "registers_per_thread": regs,
        "occupancy_blocks_per_sm": occ.blocks_per_sm,
        "occupancy_limited_by": [b.value for b in occ.binding],
        "occupancy": occ.to_dict(),
        "sms": spec.sms,
    }


def describe_block(doc: dict[str, Any]) -> str:
    """The text summary of a ``dfx triton --threads`` document."""
    occ = doc["occupancy"]
    unit = "wavefront" if doc["warp_size_threads"] == 64 else "warp"
    return "\n".join(
        [
            f"block       {doc['threads']} threads on {doc['hardware']}",
            f"warps       {doc['warps']} {unit}s of {doc['warp_size_threads']} lanes = {doc['lanes']} lanes",
            f"masked      {doc['masked_lanes']} lanes ({doc['masked_fraction']:.1%}) idle in the last {unit}",
            f"occupancy   {doc['occupancy_blocks_per_sm']} blocks/SM ({occ['warps_per_sm']} {unit}s, {occ['fraction']:.0%}) at {doc['registers_per_thread']} registers/thread, limited by {', '.join(doc['occupancy_limited_by'])}",
        ]
    )


def describe(doc: dict[str, Any]) -> str:
    """The text summary of a ``dfx.triton/1`` document."""
    cfg = ", ".join(f"{k}={v}" for k, v in doc["config"].items())
    occ = doc["occupancy"]
    wave = doc["wave"]
    lines = []
    if doc["kind"] == "attention":
        p = doc["program"]
        lines += [
            f"attention [{doc['b']}, {doc['h']}, {doc['s']}, {doc['d']}] {doc['dtype']} on {doc['hardware']} (Triton fused-attention tutorial)",
            f"config      {cfg}",
            f"grid        cdiv({doc['s']}, {doc['config']['BLOCK_M']}) x {doc['b']}*{doc['h']} = {doc['grid'][0]} x {doc['grid'][1]} = {doc['programs']} programs, one {p['q_block'][0]}x{p['q_block'][1]} Q block each",
            f"program     loops {p['kv_loop_iterations']} times over the keys in steps of {p['kv_step']}: loads K{p['loads_per_iteration']['k']} and V{p['loads_per_iteration']['v']}, "
            f"S = Q K^T {p['scores']}, online softmax (m_i, l_i), acc{p['accumulator']} += P V in float32",
        ]
    elif doc["kind"] == "gemm":
        p = doc["program"]
        lines += [
            f"GEMM [{doc['m']}x{doc['k']}] @ [{doc['k']}x{doc['n']}] x{doc['batch']} {doc['dtype']} on {doc['hardware']}",
            f"config      {cfg}  (from {doc['chosen_from']} candidate(s))",
            f"grid        {doc['grid'][0]} x {doc['grid'][1]} x {doc['grid'][2]} = {doc['programs']} programs, one {p['output_tile'][0]}x{p['output_tile'][1]} output tile each",
            f"program     loops {p['k_loop_iterations']} times over K in steps of {p['k_step']}: loads A{p['loads_per_iteration']['a']} and B{p['loads_per_iteration']['b']}, tl.dot into a float32 accumulator",
        ]
    else:
        p = doc["program"]
        lines += [
            f"{doc['kind']} {' x '.join(map(str, doc['shape']))} {doc['dtype']} on {doc['hardware']}",
            f"config      {cfg}  (from {doc['chosen_from']} candidate(s))",
            f"grid        {doc['programs']} programs, {p['block']} elements per step, {p['loop_iterations']} step(s) each",
        ]
    lines += [
        f"warps       {doc['warps_per_program']} per program of {doc['warp_size_threads']} lanes ({doc['threads_per_program']} threads), ~{doc['registers_per_thread']} registers/thread (estimate)",
        f"shared mem  {doc['shared_memory_per_program_bytes']} B per program",
        f"occupancy   {doc['occupancy_blocks_per_sm']} programs/SM ({occ['warps_per_sm']} warps, {occ['fraction']:.0%}), limited by {', '.join(doc['occupancy_limited_by'])}; "
        + ", ".join(f"{k} {v}" for k, v in occ["by_limit"].items()),
        f"waves       {doc['waves']} of {wave['per_wave']} on {doc['sms']} SMs; last {wave['tail_programs']}/{wave['per_wave']} full ({wave['efficiency']:.1%} of slots used)",
        f"masked      {doc['masked_lane_fraction']:.2%} of lanes in partial tiles",
    ]
    if "simt_efficiency" in doc:
        lines.append(f"divergence  {doc['simt_efficiency']:.1%} of issued lane-cycles useful")
    rate = (
        f", {doc['flop_per_s'] / 1e12:.0f} TFLOP/s ({doc['fraction_of_peak']:.0%} of peak)"
        if "flop_per_s" in doc
        else ""
    )
    lines.append(
        f"time        {doc['time_s'] * 1e6:.2f} us{rate} (waves + {doc['overhead_s'] * 1e6:.1f} us per-kernel overhead)"
    )
    for f in doc.get("files", []):
        lines.append(f"wrote       {f}")
    return "\n".join(lines)
