"""The ``dfx triton`` command. Thin: parse, call :mod:`dfx.arch.gpu`, print or write.

``dfx.cli`` adds it with :func:`register`; this module imports only typer at import time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from dfx.errors import DfxError
from dfx.schema.ids import TRITON_SCHEMA

__all__ = ["register", "triton_command"]

SCHEMA = TRITON_SCHEMA
_NUM_WARPS = (1, 2, 4, 8, 16, 32)  # a Triton program's warps: a power of two, at most 32 (1,024 threads)


def _ints(text: str, count: int, flag: str) -> tuple[int, ...]:
    from dfx.limits import check_size

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != count or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise DfxError(f"{flag} wants {count} positive integers separated by ',', got {text!r}")
    return tuple(check_size(f"{flag} size", int(p), fix="give smaller sizes") for p in parts)


def _branch(text: Optional[str]) -> tuple[float, float, float] | None:
    if text is None:
        return None
    try:
        p, then_f, else_f = (float(x) for x in text.split(","))
    except ValueError:
        p = -1.0
    if not 0 <= p <= 1:
        raise DfxError(f"--branch wants P,THEN_FLOPS,ELSE_FLOPS with 0 <= P <= 1 (e.g. 0.5,20,1), got {text!r}")
    return p, then_f, else_f


def triton_command(
    gemm_dims: Optional[str] = typer.Option(None, "--gemm", help="GEMM sizes M,K,N: A[M,K] @ B[K,N]."),
    pointwise: Optional[int] = typer.Option(None, "--pointwise", help="A fused elementwise kernel over N elements."),
    reduction: Optional[str] = typer.Option(
        None, "--reduction", help="An inner reduction ROWS,COLS (each row of COLS reduced)."
    ),
    attention: Optional[str] = typer.Option(
        None, "--attention", help="FlashAttention forward over B,H,S,D (Triton's fused-attention tutorial)."
    ),
    threads: Optional[int] = typer.Option(
        None, "--threads", help="A block of N threads: its warps (64-lane wavefronts on AMD) and masked lanes."
    ),
    hw: str = typer.Option("nvidia-h100-sxm", "--hw", help="A GPU profile with a simt section."),
    dtype: str = typer.Option("bfloat16", "--dtype", help="Element dtype (bf16, fp16, fp32, ...)."),
    batch: int = typer.Option(1, "--batch", help="GEMM batch (bmm): programs = batch x tiles."),
    block: Optional[str] = typer.Option(
        None,
        "--block",
        help="GEMM BLOCK_M,BLOCK_N,BLOCK_K; pointwise XBLOCK; reduction XBLOCK,R0_BLOCK; attention BLOCK_M,BLOCK_N. Default: Inductor's choice.",
    ),
    stages: Optional[int] = typer.Option(None, "--stages", help="GEMM num_stages (with --block)."),
    warps: Optional[int] = typer.Option(None, "--warps", help="num_warps (with --block)."),
    regs: Optional[int] = typer.Option(None, "--regs", help="Registers per thread (default: dfx's estimate)."),
    branch: Optional[str] = typer.Option(
        None, "--branch", help="Pointwise: P,THEN_FLOPS,ELSE_FLOPS, a branch each lane takes with probability P."
    ),
    flops: float = typer.Option(1.0, "--flops-per-element", help="Pointwise/reduction FLOPs per element."),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Directory for triton.json and, for a GEMM, contrast.png (GPU vs TPU vs Spyre)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite files in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the document as JSON."),
) -> None:
    """A Triton kernel on a GPU: grid, one program's loop, warps, occupancy, waves, masked lanes, time."""
    from dfx.arch.gpu import api

    given = [x is not None for x in (gemm_dims, pointwise, reduction, threads, attention)]
    if sum(given) != 1:
        raise DfxError(
            "give exactly one of --gemm M,K,N, --pointwise N, --reduction ROWS,COLS, --attention B,H,S,D or --threads N"
        )
    from dfx.limits import check_finite, check_size

    for flag, value in (("--pointwise", pointwise), ("--batch", batch), ("--threads", threads)):
        if value is not None:
            check_size(flag, value)
    check_finite("--flops-per-element", flops, low=0.0)
    if warps is not None and warps not in _NUM_WARPS:  # Triton rounds nothing: num_warps is a power of two
        raise DfxError(f"--warps must be a power of two from 1 to 32 (Triton's num_warps), got {warps}")
    if stages is not None and stages < 1:
        raise DfxError(f"--stages must be a positive integer (Triton's num_stages), got {stages}")
    profile = api.gpu_profile(hw)
    if attention is not None:
        bhsd = _ints(attention, 4, "--attention")
        kern = api.attention_kernel(
            *bhsd,
            profile,
            dtype=dtype,
            config=api.attention_config_from(_ints(block, 2, "--block") if block else None, stages, warps, profile),
            registers_per_thread=regs,
        )
        doc = {"schema": SCHEMA, **kern.to_dict()}
        sys.stdout.write((json.dumps(doc, indent=1) if as_json else api.describe(doc)) + "\n")
        return
    if threads is not None:
        doc = {"schema": SCHEMA, **api.block_document(threads, profile, registers_per_thread=regs)}
        sys.stdout.write((json.dumps(doc, indent=1) if as_json else api.describe_block(doc)) + "\n")
        return
    if gemm_dims is not None:
        m, k, n = _ints(gemm_dims, 3, "--gemm")
        cfg = api.gemm_config_from(
            _ints(block, 3, "--block") if block else None, stages, warps, m, k, n, dtype, profile
        )
        kern = api.gemm_kernel(m, k, n, profile, dtype=dtype, batch=batch, config=cfg, registers_per_thread=regs)
    elif pointwise is not None:
        cfg = api.pointwise_config_from(_ints(block, 1, "--block") if block else None, warps)
        kern = api.pointwise_kernel(
            pointwise,
            profile,
            dtype=dtype,
            branch=_branch(branch),
            flops_per_element=flops,
            config=cfg,
            **({"registers_per_thread": regs} if regs else {}),
        )
    else:
        rows, cols = _ints(reduction, 2, "--reduction")
        cfg = api.reduction_config_from(_ints(block, 2, "--block") if block else None, warps, cols)
        kern = api.reduction_kernel(
            rows,
            cols,
            profile,
            dtype=dtype,
            flops_per_element=flops,
            config=cfg,
            **({"registers_per_thread": regs} if regs else {}),
        )
    doc = {"schema": SCHEMA, **kern.to_dict()}
    if out is not None:
        api.write_outputs(kern, doc, out, force=force)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(api.describe(doc) + "\n")


def register(app: typer.Typer) -> None:
    app.command("triton")(triton_command)
