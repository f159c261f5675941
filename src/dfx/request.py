"""One analysis asked for: :class:`AnalyzeRequest`, frozen and validated once, before any capture.

``dfx analyze`` builds one from its options, :func:`dfx.analyze` from its keywords (sweeps and
``dfx serve`` call it), and :func:`dfx.analysis.run` carries it through the stages. Every check a
request can fail (a profile that does not load, an execution model a machine cannot run, two
profiles with one id, a split that disagrees with itself, a routing file, a capacity factor, an
inference option on a training step) happens in :meth:`AnalyzeRequest.of`, so a bad option never
costs a capture.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Mapping, Sequence

from dfx.errors import DfxError

__all__ = [
    "DEFAULT_DTYPE",
    "DEFAULT_EXECUTION_MODEL",
    "DEFAULT_HARDWARE",
    "DEFAULT_MODEL",
    "AnalyzeRequest",
    "Mode",
]

DEFAULT_MODEL = "gpt2-block"
# The dtype a model name is built in when none is given: machines are compared at bf16, the CLI's
# --dtype default, so dfx.analyze("gpt2-block") and `dfx analyze gpt2-block` are the same analysis.
DEFAULT_DTYPE = "bf16"

# A GPU and a dataflow accelerator, side by side: the comparison dfx exists for.
DEFAULT_HARDWARE: tuple[str, ...] = ("nvidia-h100-sxm", "ibm-spyre")

# How analyze runs a graph on each profile unless told otherwise: the target's compiled program (every
# machine the course compares runs one), its kernels list-scheduled on the cores. "eager" and
# "scratchpad" are the node-level models (one operator at a time on the whole machine).
DEFAULT_EXECUTION_MODEL: str = "compiled"


class Mode(str, Enum):
    """What a request analyses: the forward pass, an inference phase (or another storage width), or a
    training step."""

    FORWARD = "forward"
    PHASE = "phase"
    TRAIN = "train"


@dataclass(frozen=True)
class AnalyzeRequest:
    """An analysis, validated: the model, its shapes and precision, the phase and its lengths, the
    machines, the split over chips and the execution model (the parameters of :func:`dfx.analyze`).

    Build it with :meth:`of`; the fields hold parsed values (loaded profiles, an
    :class:`~dfx.roofline.ExecutionModel`, a :class:`~dfx.costs.moe.Routing`, a split plan).
    """

    model: Any
    args: Any
    kwargs: Mapping[str, Any] | None
    profiles: tuple[Any, ...]
    dtype: str | None
    batch: int | None
    seq: int | None
    method: str
    input_shapes: Sequence[tuple[int, ...]] | None
    execution_model: Any
    phase: str | None
    prompt_len: int | None
    kv_len: int | None
    output_len: int | None
    weight_dtype: str | None
    kv_dtype: str | None
    split: Any
    runtime: str | None
    train: bool
    optimizer: str | None
    routing: Any
    capacity_factor: float
    cache: Any
    gqa_kv_reads: Any = None  # a dfx.inference.kv_reads.KVReads; None is shared

    @classmethod
    def of(
        cls,
        model: Any = DEFAULT_MODEL,
        args: Any = None,
        *,
        kwargs: Mapping[str, Any] | None = None,
        hardware: Sequence[Any] | str | None = None,
        dtype: str | None = None,
        batch: int | None = None,
        seq: int | None = None,
        method: str = "auto",
        input_shapes: Sequence[tuple[int, ...]] | None = None,
        execution_model: Any = None,
        phase: str | None = None,
        prompt_len: int | None = None,
        kv_len: int | None = None,
        output_len: int | None = None,
        weight_dtype: str | None = None,
        kv_dtype: str | None = None,
        chips: int | None = None,
        parallel: str | None = None,
        runtime: str | None = None,
        train: bool = False,
        optimizer: str | None = None,
        routing: str | None = None,
        capacity_factor: float | None = None,
        cache: Any = None,
        cores: int | None = None,
        gqa_kv_reads: str | None = None,
    ) -> AnalyzeRequest:
        """The request :func:`dfx.analyze` is given (same parameters), checked before any capture.

        Raises
        ------
        DfxError
            A profile that does not load, ``cores`` outside a profile's core count, an execution
            model a profile cannot run, two profiles
            with one id, ``chips`` disagreeing with ``parallel``, a bad routing or capacity factor, an
            optimizer without ``train``, inference options on a training step, a captured Graph or a
            storage-only dtype to train; each one line naming the value and the fix.
        """
        from dfx.compile.moe import check_capacity_factor
        from dfx.costs.moe import parse_routing
        from dfx.inference.kv_reads import parse_kv_reads
        from dfx.targets import target_for

        if isinstance(hardware, str):  # one profile given bare, not in a list
            hardware = [hardware]
        if dtype is None and isinstance(model, str):
            dtype = DEFAULT_DTYPE
        if isinstance(model, str) and isinstance(dtype, str):
            check_dtype_name(dtype)  # before any profile: the message names every width analyze takes
        hardware_ids = DEFAULT_HARDWARE if hardware is None else tuple(hardware)
        profiles = tuple(load(h) for h in hardware_ids)  # fail fast on a bad id, before capture
        if cores is not None:  # part of each chip (--cores), refused before capture when out of range
            from dfx.hardware import restrict_to_cores

            profiles = tuple(restrict_to_cores(p, cores) for p in profiles)
        model_name = execution_model_of(execution_model)
        for p in profiles:  # and on a model a profile cannot run, before capture too
            target_for(p).check_execution_model(p, model_name)
            p.runtime_name(runtime)  # and on a runtime it does not have
        check_distinct_ids(profiles)
        request = cls(
            model=model,
            args=args,
            kwargs=kwargs,
            profiles=profiles,
            dtype=dtype,
            batch=batch,
            seq=seq,
            method=method,
            input_shapes=input_shapes,
            execution_model=model_name,
            phase=phase,
            prompt_len=prompt_len,
            kv_len=kv_len,
            output_len=output_len,
            weight_dtype=weight_dtype,
            kv_dtype=kv_dtype,
            split=split_of(chips, parallel),
            runtime=runtime,
            train=train,
            optimizer=optimizer,
            routing=parse_routing(routing),  # a bad --routing file fails before capture
            capacity_factor=check_capacity_factor(capacity_factor),
            cache=cache,
            gqa_kv_reads=parse_kv_reads(gqa_kv_reads),  # a bad name fails before capture
        )
        if request.mode is Mode.TRAIN:
            request._check_training()
        return request

    @property
    def mode(self) -> Mode:
        """A training step (``train`` or an ``optimizer``), an inference phase (a phase, a length or a
        storage width given), else the forward pass."""
        if self.train or self.optimizer is not None:
            return Mode.TRAIN
        inference = (self.phase, self.prompt_len, self.kv_len, self.output_len, self.weight_dtype, self.kv_dtype)
        inference += (self.gqa_kv_reads,)
        if any(v is not None for v in inference) or storage_only(self.dtype):
            return Mode.PHASE
        return Mode.FORWARD

    def _check_training(self) -> None:
        from dfx.ir import Graph

        if not self.train:
            raise DfxError(f"optimizer={self.optimizer!r} applies to a training step; add train=True (--train)")
        given = [
            n
            for n, v in (
                ("phase", self.phase),
                ("weight_dtype", self.weight_dtype),
                ("kv_dtype", self.kv_dtype),
                ("gqa_kv_reads", self.gqa_kv_reads),
                ("prompt_len", self.prompt_len),
                ("kv_len", self.kv_len),
                ("output_len", self.output_len),
            )
            if v is not None
        ]
        if given:
            raise DfxError(
                f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to inference; "
                "drop it or drop train (--train)"
            )
        if isinstance(self.model, Graph):
            raise DfxError("train=True needs a model (a module or a model name), not a captured Graph")
        if storage_only(self.dtype):
            raise DfxError(f"--dtype {self.dtype} is an inference storage width; train in fp32, bf16 or fp16")


def load(h: Any):
    """A profile given as an id, alias or path (:func:`dfx.hardware.load_profile`), or one already loaded."""
    from dfx.hardware import load_profile

    return h if not isinstance(h, str) else load_profile(h)


def execution_model_of(value: Any):
    """``value`` as a :class:`dfx.roofline.ExecutionModel` (``None``: the default); a one-line error otherwise."""
    from dfx.roofline import parse_execution_model

    try:
        return parse_execution_model(DEFAULT_EXECUTION_MODEL if value is None else value)
    except ValueError as exc:
        raise DfxError(str(exc)) from None


def split_of(chips: int | None, parallel: str | None) -> Any:
    """The user's ``--chips`` / ``--parallel`` as a plan (or a chip count); ``None``: the fewest chips."""
    from dfx.parallel import parse_parallel

    if parallel is not None:
        plan = parse_parallel(parallel)
        if chips is not None and chips != plan.chips:
            raise DfxError(
                f"--chips {chips} disagrees with --parallel {parallel} ({plan.chips} chips); give one of them"
            )
        return replace(plan, source="--parallel")  # what chose the split, under dfx analyze's table
    return chips


def check_dtype_name(dtype: str) -> None:
    """Refuse a ``--dtype`` that is neither a dtype a model is built in nor a width dfx re-prices to.

    The capture path's own message names only the first kind, so ``--dtype fp6`` read as if fp8,
    int8 and fp4 (which ``dfx analyze --dtype`` takes) were refused too.

    Raises
    ------
    DfxError
        Naming the value and both lists.
    """
    from dfx.ir.spec import normalize_dtype

    if storage_only(dtype):
        return
    try:
        normalize_dtype(dtype)
    except ValueError:
        raise DfxError(
            f"unknown dtype {dtype!r}; expected fp32, bf16, fp16 or fp64 (the model is built in it), "
            "or fp8, int8, fp4 or mxfp4 (a bf16 capture re-priced: docs/inference.md)"
        ) from None


def storage_only(dtype: str | None) -> bool:
    """Whether ``dtype`` is a width dfx re-prices a bf16 capture to (fp8, int8), not one torch builds in."""
    from dfx.costs.precision import CAPTURE_DTYPES, storage_name

    try:
        return dtype is not None and storage_name(dtype) not in CAPTURE_DTYPES
    except DfxError:
        return False  # not a width at all: the capture path names the accepted dtypes


def check_distinct_ids(profiles: Sequence[Any]) -> None:
    """Results are keyed by profile id: two profiles with one id would silently lose one."""
    seen: set[str] = set()
    for p in profiles:
        if p.id in seen:
            raise DfxError(
                f"hardware profile id {p.id!r} is given twice (a copied profile file keeps its id); "
                "give each profile file its own id"
            )
        seen.add(p.id)
