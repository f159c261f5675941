"""Command-line option texts parsed into library values, shared by every package's ``command.py``.

A leaf: it imports only :mod:`dfx.errors` and :mod:`dfx.ir.spec`, so a command module reaches it
without importing :mod:`dfx.cli` (which imports every command).
"""

from __future__ import annotations

import re
from typing import List, Optional

from dfx.errors import DfxError

__all__ = [
    "CAPACITY_FACTOR_HELP",
    "CORES_HELP",
    "GQA_KV_READS_HELP",
    "INPUT_DTYPE_HELP",
    "INPUT_SHAPE_HELP",
    "MODEL_HELP",
    "ROUTING_HELP",
    "RUNTIME_HELP",
    "parse_input_shapes",
]

# The MODEL argument of every command that captures a model, and a file model's inputs.
MODEL_HELP = "A built-in model (see `dfx models`), path/to/file.py:ClassOrFactory, or hf:NAME_OR_CONFIG."
INPUT_SHAPE_HELP = "Input shape for a file model, e.g. 2,128,64 (4,128:int64 for token ids); repeat per input."
INPUT_DTYPE_HELP = "Dtype of a file model's inputs (e.g. int64 for token ids): once for all, or once per --input-shape."

# The mixture-of-experts options of `dfx analyze` and `dfx compile`.
ROUTING_HELP = "MoE routing: uniform (default), zipf:S (skewed), or a JSON/CSV file of per-expert token counts (docs/cost-model.md)."
# The runtime option of `dfx analyze`, `dfx compile` and `dfx serve` (HardwareProfile.runtime_name).
RUNTIME_HELP = (
    "Time kernels as this runtime of the profile runs them (achieved fractions of peak, fixed cost per kernel; "
    "`dfx hw show ID` lists them), or ideal (the ideal roofline). Default: each profile's default runtime "
    "(GPUs: back-to-back, kernels queued from a framework)."
)
CAPACITY_FACTOR_HELP = (
    "MoE expert capacity on compile-time machines: ceil(factor * tokens * k / E) slots per expert "
    "(default 1.25; docs/compile.md)."
)
# `--gqa-kv-reads` of `dfx analyze` (dfx.inference.kv_reads).
GQA_KV_READS_HELP = (
    "With --phase: how decode attention reads a GQA/MQA KV cache: shared (once per KV head, a grouped "
    "kernel such as XQA or FlashInfer; default) or per-query-head (once per query head: one thread block "
    "per sequence and query head, TensorRT-LLM's MMHA as of v0.6.1; docs/inference.md)."
)
# `--cores` of `dfx analyze` and `dfx compile` (dfx.hardware.restrict_to_cores).
CORES_HELP = (
    "Run on N of each machine's cores: their share of peak, on-chip memory and bandwidth, and the "
    "off-chip bandwidth N cores can draw (default: the whole chip; docs/hardware.md, 'Part of a chip')."
)


def parse_input_shapes(
    shapes: Optional[List[str]], dtypes: Optional[List[str]] = None
) -> Optional[list[tuple[int, ...]]]:
    """``--input-shape`` texts (``"2,128,64"``, ``"2x128x64"``, ``"4,128:int64"``) as shapes; ``None`` when none were given.

    A ``:dtype`` suffix, or ``--input-dtype`` (once for every input, or once per input in order),
    makes that input in that dtype (an :class:`~dfx.ir.spec.InputShape`): ``int64`` for token ids.

    Raises
    ------
    DfxError
        A text that is not positive integers separated by commas or ``x``, an unknown dtype, or
        ``--input-dtype`` given a number of times other than 1 or the number of shapes.
    """
    from dfx.ir.spec import InputShape

    if not shapes:
        if dtypes:
            raise DfxError("--input-dtype needs --input-shape (one per positional input of a file model)")
        return None
    if dtypes and len(dtypes) not in (1, len(shapes)):
        raise DfxError(
            f"--input-dtype is given {len(dtypes)} times for {len(shapes)} --input-shape; give it once, or once per input"
        )
    out = []
    for i, full in enumerate(shapes):
        text, _, dtype = full.partition(":")
        dtype = dtype.strip() or (dtypes[0] if dtypes and len(dtypes) == 1 else dtypes[i] if dtypes else "")
        try:
            dims = tuple(int(d) for d in re.split(r"[,x]", text.strip()))
        except ValueError:
            raise DfxError(
                f"bad --input-shape {full!r}; expected comma-separated integers such as 2,128,64 (or 4,128:int64)"
            ) from None
        if not dims or any(d <= 0 for d in dims):
            raise DfxError(f"bad --input-shape {full!r}; every dimension must be a positive integer")
        try:
            out.append(InputShape(dims, dtype) if dtype else dims)
        except ValueError as exc:
            raise DfxError(f"bad input dtype in {full!r}: {exc}") from None
    return out
