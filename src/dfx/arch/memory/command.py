"""The ``dfx capacity``, ``dfx tile``, ``dfx energy`` and ``dfx casestudy attention`` commands.

Thin: parse, call :mod:`dfx.arch.memory.api`, print or emit JSON. Only typer is imported at module
level; ``dfx.cli`` calls :func:`register`.
"""

from __future__ import annotations

import json
import sys
from typing import Any, List, Optional

import typer

from dfx.schema.ids import CASESTUDY_ATTENTION_SCHEMA
from dfx.options import INPUT_DTYPE_HELP, INPUT_SHAPE_HELP, MODEL_HELP

__all__ = ["register"]

_HW_HELP = "Hardware profile id, alias or file."
_DTYPE_HELP = "fp32, bf16 or fp16."


def _shapes(
    input_shape: Optional[List[str]], input_dtype: Optional[List[str]], batch: Optional[int], seq: Optional[int]
) -> Any:
    """``--input-shape``/``--input-dtype`` as shapes for a file model, which takes no --batch or --seq."""
    from dfx.options import parse_input_shapes
    from dfx.errors import DfxError

    if input_shape and (batch is not None or seq is not None):
        raise DfxError("--batch and --seq apply to built-in and hf: models; a file model's --input-shape gives them")
    return parse_input_shapes(input_shape, input_dtype)


def _emit(doc: dict[str, Any], lines: list[str], as_json: bool) -> None:
    sys.stdout.write((json.dumps(doc, indent=1) if as_json else "\n".join(lines)) + "\n")


def _positive(name: str, value: Optional[int]) -> None:
    from dfx.errors import DfxError

    if value is not None and value <= 0:
        raise DfxError(f"{name} must be a positive integer, got {value}")


def _parse_gemm(text: str) -> tuple[int, int, int]:
    from dfx.errors import DfxError

    try:
        m, k, n = (int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise DfxError(f"bad --gemm {text!r}; expected three positive integers M,K,N such as 4096,4096,4096") from None
    if min(m, k, n) <= 0:
        raise DfxError(f"bad --gemm {text!r}; M, K and N must be positive")
    return m, k, n


def capacity(
    model: str = typer.Argument("gpt2-block", help=MODEL_HELP),
    hw: str = typer.Option(..., "--hw", help=_HW_HELP),
    dtype: str = typer.Option("bf16", help=_DTYPE_HELP),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    input_dtype: Optional[List[str]] = typer.Option(None, "--input-dtype", help=INPUT_DTYPE_HELP),
    weight_dtype: Optional[str] = typer.Option(
        None, "--weight-dtype", help="Weight storage: bf16, fp16, fp8, int8, int4, fp4 (default: --dtype)."
    ),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache storage (default: --dtype)."),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.capacity/1 document."),
) -> None:
    """Weights, activations and KV cache against the on- and off-chip capacity of --hw (each as stored)."""
    from dfx.arch.memory.api import model_capacity
    from dfx.arch.memory.report import capacity_lines

    _positive("--batch", batch)
    _positive("--seq", seq)
    r = model_capacity(
        model,
        hw,
        dtype=dtype,
        batch=batch or 1,
        seq=seq,
        input_shapes=_shapes(input_shape, input_dtype, batch, seq),
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
    )
    _emit(r.to_dict(), capacity_lines(r.to_dict()), as_json)


def tile(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " Omit with --gemm."),
    gemm: Optional[str] = typer.Option(None, "--gemm", help="One GEMM M,K,N instead of a model."),
    hw: str = typer.Option(..., "--hw", help=_HW_HELP),
    dtype: str = typer.Option("bf16", help=_DTYPE_HELP),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (models only)."),
    double_buffer: bool = typer.Option(
        True, "--double-buffer/--no-double-buffer", help="Double-buffer the input tiles."
    ),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    input_dtype: Optional[List[str]] = typer.Option(None, "--input-dtype", help=INPUT_DTYPE_HELP),
    acc_dtype: Optional[str] = typer.Option(
        None, "--acc-dtype", help="Accumulator the output tile is held in (default fp32 for bf16/fp16 inputs)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.tile/1 document."),
) -> None:
    """Scratchpad tiles per matmul: working set, off-chip traffic, intensity and time on --hw."""
    from dfx.arch.memory.api import dtype_name, tile_gemms, tile_model
    from dfx.arch.memory.report import tile_lines
    from dfx.arch.memory.tiling import Gemm
    from dfx.errors import DfxError
    from dfx.ir import itemsize_bytes

    if (gemm is None) == (model is None):
        raise DfxError("give either a MODEL or --gemm M,K,N, not both or neither")
    _positive("--batch", batch)
    _positive("--seq", seq)
    if gemm is not None:
        m, k, n = _parse_gemm(gemm)
        g = Gemm(m, k, n, itemsize_bytes(dtype_name(dtype)), 1, f"gemm {m}x{k}x{n}")
        r = tile_gemms([g], hw, dtype=dtype, double_buffer=double_buffer, acc_dtype=acc_dtype)
    else:
        r = tile_model(
            model,
            hw,
            dtype=dtype,
            batch=batch or 1,
            seq=seq,
            double_buffer=double_buffer,
            input_shapes=_shapes(input_shape, input_dtype, batch, seq),
            acc_dtype=acc_dtype,
        )
    _emit(r.to_dict(), tile_lines(r.to_dict()), as_json)


def energy(
    model: str = typer.Argument("gpt2-block", help=MODEL_HELP),
    hw: str = typer.Option(..., "--hw", help=_HW_HELP),
    dtype: str = typer.Option("bf16", help=_DTYPE_HELP),
    batch: Optional[int] = typer.Option(None, help="Batch size (default 1; built-in and hf: models)."),
    seq: Optional[int] = typer.Option(None, help="Sequence length (default: the model's own)."),
    input_shape: Optional[List[str]] = typer.Option(None, "--input-shape", help=INPUT_SHAPE_HELP),
    input_dtype: Optional[List[str]] = typer.Option(None, "--input-dtype", help=INPUT_DTYPE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the dfx.energy/1 document."),
) -> None:
    """Energy per node and in total: eager (all through off-chip memory) vs dataflow (forwarded on chip)."""
    from dfx.arch.memory.api import model_energy
    from dfx.arch.memory.report import energy_lines

    _positive("--batch", batch)
    _positive("--seq", seq)
    doc = model_energy(
        model, hw, dtype=dtype, batch=batch or 1, seq=seq, input_shapes=_shapes(input_shape, input_dtype, batch, seq)
    ).to_dict()
    doc["model"] = model
    _emit(doc, energy_lines(doc), as_json)


def attention(
    seq: int = typer.Option(4096, help="Sequence length N."),
    heads: int = typer.Option(16, help="Attention heads."),
    head_dim: int = typer.Option(64, help="Head size d."),
    batch: int = typer.Option(1, help="Batch size."),
    dtype: str = typer.Option("bf16", help=_DTYPE_HELP),
    hw: Optional[List[str]] = typer.Option(
        None, "--hw", help="Profiles to compare (default: ibm-spyre and google-tpu-v4)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the per-machine numbers as JSON."),
) -> None:
    """Follow one attention block through two machines: tiling, what stays on chip, traffic, time."""
    from dfx.arch.memory.api import dtype_name, profile_of
    from dfx.arch.memory.casestudy import AttentionBlock, attention_on_chip, compiler_stages, render_case_study

    for name, value in (("--seq", seq), ("--heads", heads), ("--head-dim", head_dim), ("--batch", batch)):
        _positive(name, value)
    block = AttentionBlock(seq, heads, head_dim, batch, dtype_name(dtype))
    profiles = [profile_of(h) for h in (hw or ["ibm-spyre", "google-tpu-v4"])]
    results = [attention_on_chip(block, p) for p in profiles]
    stages = compiler_stages(block, profiles)
    if as_json:
        doc = {
            "schema": CASESTUDY_ATTENTION_SCHEMA,
            "block": block.__dict__,
            "machines": [r.to_dict() for r in results],
            "stages": stages,
        }
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(render_case_study(results, stages))


def register(app: typer.Typer) -> None:
    """Add ``capacity``, ``tile``, ``energy`` and the ``casestudy`` group to ``app``."""
    app.command("capacity")(capacity)
    app.command("tile")(tile)
    app.command("energy")(energy)
    case = typer.Typer(no_args_is_help=True, help="Case studies: one block followed through several machines.")
    case.command("attention")(attention)
    app.add_typer(case, name="casestudy")
