"""The main job: capture, cost, and evaluate a model on hardware profiles; the export document.

``analyze`` chains the stages (capture -> costs -> roofline per profile) and returns an
:class:`Analysis`, whose :meth:`Analysis.to_dict` is the one documented export format
(``docs/export-format.md``, schema ``dfx.analysis/1``). Pictures and reports read only that format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from dfx.costs import CostedGraph, annotate
from dfx.ir import Graph
from dfx.report.progress import step
from dfx.request import (
    DEFAULT_DTYPE,
    DEFAULT_EXECUTION_MODEL,
    DEFAULT_HARDWARE,
    DEFAULT_MODEL,
    AnalyzeRequest,
    Mode,
    execution_model_of,
)
from dfx.capture_spec import capture_model, capture_spec, normalize_dtype_or_fail
from dfx.result import Analysis
from dfx.schema.ids import ANALYSIS_SCHEMA as SCHEMA

if TYPE_CHECKING:  # export records, imported where a record is built: a sweep never builds one
    pass

__all__ = [
    "Analysis",
    "DEFAULT_DTYPE",
    "DEFAULT_EXECUTION_MODEL",
    "DEFAULT_HARDWARE",
    "DEFAULT_MODEL",
    "SCHEMA",
    "AnalyzeRequest",
    "analyze",
    "capture_spec",
    "normalize_dtype_or_fail",
    "run",
]


def analyze(
    model_or_name: Any = DEFAULT_MODEL,
    args: Any = None,
    *,
    kwargs: dict[str, Any] | None = None,
    hardware: Sequence[Any] | None = None,
    dtype: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    method: str = "auto",
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    execution_model: str | None = None,
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
) -> Analysis:
    """Capture, cost and evaluate a model on hardware profiles.

    Parameters
    ----------
    model_or_name : nn.Module, str or Graph
        A module (with ``args``/``kwargs`` as example inputs), a model spec string (a built-in name
        such as ``"gpt2-block"``, ``"path/to/file.py:Class"`` with ``input_shapes``, or
        ``"hf:NAME_OR_CONFIG"``), or an already captured :class:`dfx.ir.Graph`.
    args, kwargs
        Example inputs for a module; only shapes and dtypes are used.
    hardware : sequence of str or HardwareProfile, optional
        Profile ids, aliases, paths or loaded profiles. ``None`` means :data:`DEFAULT_HARDWARE`;
        ``[]`` means costs only.
    dtype : str, optional
        For model specs: the dtype to build the model in (``fp32``, ``bf16``, ``fp16``); ``None``:
        :data:`DEFAULT_DTYPE` (``bf16``, machines are compared at bf16), as the command line's
        ``--dtype``, so ``dfx.analyze("gpt2-block")`` is what ``dfx analyze gpt2-block`` prints.
        Pass ``dtype="fp32"`` for torch's own default: ``hf:llama-2-70b`` decode at tp=8 on H100
        is 16.2 ms TPOT in fp32, 11.2 ms in bf16. A module is captured in its own dtype.
    batch, seq : int, optional
        For built-in and ``hf:`` models: batch size (``None``: 1) and sequence length (``None``:
        the model's default). A file model takes its shapes from ``input_shapes`` instead.
    method : {"auto", "export", "fx", "dynamo"}
        Capture method.
    execution_model : {"compiled", "eager", "scratchpad"}, optional
        How each profile runs the graph (:func:`evaluate_on`); default :data:`DEFAULT_EXECUTION_MODEL`.
    phase : {"prefill", "decode", "generate"}, optional
        An LLM inference phase of a causal decoder (``docs/inference.md``): the document's graph is
        that phase's step and ``Analysis.inference`` holds TTFT, TPOT and tokens/s per profile.
    prompt_len, kv_len, output_len : int, optional
        Prompt tokens (prefill, generate; default 128), cached tokens of a decode step (default:
        ``prompt_len``), output tokens of generate (default 128).
    weight_dtype, kv_dtype : str, optional
        Storage of weights (``bf16``, ``fp16``, ``fp8``, ``int8``, ``int4``) and of the KV cache;
        default: ``dtype``. ``dtype`` may then also be ``fp8`` or ``int8`` (activations).
    chips, parallel : optional
        Spread the model over ``chips`` chips, or as ``parallel`` says (``"tp=8,pp=2"``); default:
        the fewest chips that hold it (``docs/parallel.md``). Each result then reports ``chips``
        and a per-chip timeline under ``parallel``, and its latency is the split's.
    runtime : str, optional
        Time nodes and kernels as that runtime runs each profile (its ``runtimes`` entry: achieved
        fractions of peak, fixed cost per kernel; ``docs/hardware.md``), as ``--runtime``; ``"ideal"``:
        the ideal roofline; default: each profile's ``default_runtime`` (GPUs: ``back-to-back``,
        kernels queued from a framework), the ideal roofline where it has none.
    train : bool
        Analyse one training step instead of the forward pass: the joint forward + backward graph
        as torch.compile's AOTAutograd traces it, plus the optimizer's fused step
        (``docs/training.md``); ``Analysis.training`` holds the step's split and memory.
    optimizer : {"adam", "adamw", "sgd", "sgd-momentum"}, optional
        With ``train``: the optimizer (default ``adam``).
    routing : str, optional
        How a mixture of experts routes its tokens: ``uniform`` (default), ``zipf:S`` or a JSON/CSV
        file of per-expert token counts (:func:`dfx.costs.moe.parse_routing`).
    capacity_factor : float, optional
        Expert capacity on compile-time machines, ``ceil(factor * T * k / E)`` slots per expert
        (default 1.25; ``docs/compile.md``, "Mixtures of experts").
    cores : int, optional
        Run on this many of each profile's cores (:func:`dfx.hardware.restrict_to_cores`: their share of
        peak, on-chip memory and bandwidth, and the off-chip bandwidth they can draw); default: the
        whole chip. Each result's profile id then says so (``ibm-spyre-1of32``).
    gqa_kv_reads : {"shared", "per-query-head"}, optional
        With a phase: how the decode attention reads a GQA/MQA cache. ``shared`` (default): once per
        KV head, a grouped kernel; ``per-query-head``: once per query head, as a kernel with one
        thread block per (sequence, query head) does (:mod:`dfx.inference.kv_reads`).
    cache : dfx.cache.CaptureCache, optional
        Read the forward graph of a model spec from this capture cache, and store a new capture in
        it (``dfx analyze`` passes one at the user's cache folder unless ``--no-cache``); default:
        capture every time.

    Returns
    -------
    Analysis

    Raises
    ------
    DfxError
        On a bad model spec, bad dtype, capture failure or unknown hardware profile; the message
        is one line naming the problem.
    """
    request = AnalyzeRequest.of(
        model_or_name,
        args,
        kwargs=kwargs,
        hardware=hardware,
        dtype=dtype,
        batch=batch,
        seq=seq,
        method=method,
        input_shapes=input_shapes,
        execution_model=execution_model,
        phase=phase,
        prompt_len=prompt_len,
        kv_len=kv_len,
        output_len=output_len,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        chips=chips,
        parallel=parallel,
        runtime=runtime,
        train=train,
        optimizer=optimizer,
        routing=routing,
        capacity_factor=capacity_factor,
        cache=cache,
        cores=cores,
        gqa_kv_reads=gqa_kv_reads,
    )
    return run(request)


def run(request: AnalyzeRequest) -> Analysis:
    """The analysis ``request`` asks for: capture -> costs -> compile (each profile's target) -> evaluate
    -> parallel, each stage once per profile in that order (``docs/architecture.md``).

    Raises
    ------
    DfxError
        A capture that fails, or a split the model or machine cannot take; the request itself was
        checked when it was made (:meth:`AnalyzeRequest.of`).
    """
    from dfx.compile.moe import attach_moe, lower_moe
    from dfx.costs.moe import apply_routing
    from dfx.targets import target_for

    r = request

    def evaluate(costed: CostedGraph, profile: Any, eager: bool = True) -> Any:
        step(f"compiling and evaluating on {profile.id}")
        target = target_for(profile)
        lowered, moe = lower_moe(costed, target, r.routing, r.capacity_factor)  # each target's MoE lowering
        result = evaluate_on(
            lowered, profile, execution_model=r.execution_model, split=r.split, runtime=r.runtime, eager=eager
        )
        return attach_moe(result, lowered, moe)

    mode = r.mode
    if mode is Mode.TRAIN:
        from dfx.training.analyze import analyze_training

        return analyze_training(
            r.model,
            r.args,
            r.kwargs,
            r.profiles,
            optimizer=r.optimizer,
            dtype=r.dtype,
            batch=r.batch,
            seq=r.seq,
            method=r.method,
            input_shapes=r.input_shapes,
            evaluate=evaluate,
        )
    if mode is Mode.PHASE:
        from dfx.inference.analyze import analyze_phase

        return analyze_phase(
            r.model,
            r.profiles,
            phase=r.phase,
            dtype=r.dtype,
            batch=r.batch,
            seq=r.seq,
            method=r.method,
            prompt_len=r.prompt_len,
            kv_len=r.kv_len,
            output_len=r.output_len,
            weight_dtype=r.weight_dtype,
            kv_dtype=r.kv_dtype,
            evaluate=evaluate,
            input_shapes=r.input_shapes,
            evaluate_latency=lambda costed, profile: evaluate(costed, profile, eager=False),  # steps only summed
            kv_reads=r.gqa_kv_reads,
        )
    info: dict[str, Any] = {}
    if isinstance(r.model, Graph):
        graph = r.model
        info["name"] = graph.name
    else:
        graph, info = capture_model(
            r.model, r.args, r.kwargs, r.dtype, r.batch, r.seq, r.method, r.input_shapes, r.cache
        )
    costed = apply_routing(annotate(graph), r.routing)
    results = tuple(evaluate(costed, p) for p in r.profiles)
    return Analysis(costed, results, info)


def _placed(result: Any, costed: CostedGraph, profile: Any, split: Any) -> Any:
    """``result`` spread over chips (:func:`dfx.parallel.place`): the user's plan, else the fewest that fit."""
    from dfx.parallel import ParallelPlan, default_plan, default_training_plan, place, plan_for_chips, training_memory

    from dfx.parallel.data import is_training_graph, model_state_bytes
    from dfx.parallel.place import check_tp

    link = profile.interconnect
    training = memory = None
    if is_training_graph(costed):
        from dfx.training.step import training_step

        training = training_step(costed)  # the gradients and backward nodes the collectives read; its memory
        # ZeRO's model states (as dfx.parallel.data counts them) and one replica's saved activations
        state = model_state_bytes(costed, training)
        saved = training.saved_activation_bytes
    if isinstance(split, ParallelPlan):
        plan = split
    elif split is not None and split > 1 and training is not None and not (link and link.weights_on_chip):
        # a training step over N chips: FSDP over all of them (MaxText's default, ZeRO-3), docs/parallel.md
        plan = ParallelPlan(dp=split, fsdp=True, source="--chips (a training step: fsdp over every chip)")
    elif split is not None:
        plan = plan_for_chips(profile, split)
    elif training is not None:
        # the fewest FSDP chips whose model state / dp + saved activations fit (docs/parallel.md), else
        # the fewest that fit with full activation recomputation (docs/training.md)
        plan = default_training_plan(profile, state, saved)
        if plan is None:
            from dfx.training.recompute import recompute_kept_bytes

            plan = default_training_plan(profile, state, recompute_kept_bytes(costed, training)[0])
        plan = plan or default_plan(costed, profile)
    else:
        plan = default_plan(costed, profile)
    if training is not None:
        memory = training_memory(plan, profile, state, saved)
        if memory.fits is False:
            # what the frameworks do with a step that does not fit: keep each layer's input, recompute the rest
            from dfx.training.recompute import full_recompute

            recompute = full_recompute(costed, training, result)
            result = recompute.apply(result)
            memory = training_memory(plan, profile, state, recompute.kept_bytes)
        if memory.fits is False:
            import warnings

            from dfx.report.console import format_bytes

            warnings.warn(
                f"{profile.id}: the training step needs {format_bytes(memory.per_chip_bytes)} per chip under "
                f"{_plan_words(plan)} (model state {format_bytes(memory.model_state_bytes)} + saved activations "
                f"{format_bytes(memory.saved_activation_bytes)}, with full activation recomputation), more than its "
                f"{format_bytes(memory.capacity_bytes)}; shard it over more chips (--parallel fsdp=N, or drop --chips "
                "for the fewest that fit) or lower --batch",
                stacklevel=2,
            )
    elif split is not None:
        check_tp(costed, plan)  # a refusal before any warning about the same split
        _warn_inference_split(costed, profile, plan)
    return place(result, costed, plan, training if plan.dp > 1 else None, memory)


def _warn_inference_split(costed: CostedGraph, profile: Any, plan: Any) -> None:
    """Warn (not refuse) where the user's split of an inference graph does not fit its chips, or its
    tensor-parallel group spans more chips than one interconnect domain (``docs/parallel.md``)."""
    import warnings

    from dfx.parallel import fewest_chips
    from dfx.report.console import format_bytes

    link = profile.interconnect
    if link is not None and link.weights_on_chip:
        return  # Groq, Cerebras: their architecture models place the model on chips themselves
    needed = fewest_chips(costed, profile)
    if plan.model_chips < needed:
        off = profile.off_chip_level()
        chips = f"{plan.model_chips} chip{'s' if plan.model_chips != 1 else ''}"
        warnings.warn(
            f"{profile.id}: the model ({format_bytes(costed.unique_parameter_bytes())} of weights, plus its KV "
            f"cache and activations) does not fit {chips} of {format_bytes(off.capacity_bytes)}"
            + (f" under {_plan_words(plan)}" if plan.model_chips > 1 else "")
            + f"; it needs at least {needed} chips (drop --parallel/--chips for the fewest that fit)",
            stacklevel=3,
        )
    domain = link.domain_chips if link is not None else None
    if domain and plan.tp > domain:
        warnings.warn(
            f"{profile.id}: tp={plan.tp} spans more chips than one interconnect domain of {domain} "
            f"({link.description or link.topology.value}); "
            f"beyond it the all-reduces cross the network between domains, which dfx does not model (it times them "
            f"at the domain's {link.ring_bytes_per_s / 1e9:g} GB/s), so the communication is optimistic; "
            f"keep tp <= {domain} and add pp across domains",
            stacklevel=3,
        )


def _plan_words(plan: Any) -> str:
    """``fsdp=8``, ``dp=2,tp=4``, ``1 chip``: a plan as --parallel would take it."""
    parts = [f"{'fsdp' if plan.fsdp else 'dp'}={plan.dp}"] if plan.dp > 1 else []
    parts += [f"{k}={getattr(plan, k)}" for k in ("tp", "pp", "ep") if getattr(plan, k) > 1]
    return ",".join(parts) or "1 chip"


def evaluate_on(
    costed: CostedGraph,
    profile: Any,
    *,
    execution_model: Any = None,
    split: Any = None,
    runtime: str | None = None,
    eager: bool = True,
    per_operator: bool = False,
):
    """Evaluate ``costed`` on one profile, with its architecture model where dfx has one.

    ``execution_model`` (``"compiled"``, ``"eager"``, ``"scratchpad"``; default
    :data:`DEFAULT_EXECUTION_MODEL`) is how the profile runs the graph. A GPU evaluated compiled also
    carries its eager numbers under ``eager``, so the report shows both. ``split`` (a
    :class:`dfx.parallel.ParallelPlan` or a chip count; ``None``: the fewest chips that hold the
    model) spreads the result over chips (:func:`dfx.parallel.place`); ``runtime`` names the
    profile's runtime whose achieved fractions time the nodes and kernels (``None``: the profile's
    ``default_runtime``; ``"ideal"``: the ideal roofline; :meth:`dfx.hardware.HardwareProfile.runtime_name`).
    ``eager=False`` leaves a compiled GPU's eager numbers out (a second evaluation no latency reads;
    ``dfx sweep`` wants only the latency).

    It is ``place_on(evaluate_one_chip(...), costed, profile, split)``: a sweep over splits
    evaluates one chip once and places that result on each split.

    Eager is the unfused program (:meth:`dfx.targets.Target.eager_program`) on the same kernel model as the
    compiled one. It stays the per-operator model (one operator at a time on the whole machine) with
    ``per_operator`` (``dfx validate``, which compares measured operators) and on a calibrated profile:
    its tables were measured per operator, and the kernel model does not take them yet
    (``docs/compile.md``). A runtime's fractions and fixed cost per kernel time both models.
    """
    return place_on(
        evaluate_one_chip(
            costed, profile, execution_model=execution_model, runtime=runtime, eager=eager, per_operator=per_operator
        ),
        costed,
        profile,
        split,
    )


def place_on(result: Any, costed: CostedGraph, profile: Any, split: Any = None):
    """``result`` (:func:`evaluate_one_chip`) spread over ``split``'s chips, as :func:`evaluate_on` does.

    Raises
    ------
    DfxError
        A split the model or machine cannot take (:func:`dfx.parallel.place`).
    """
    return _placed(result, costed, profile, split)


def check_execution_model(profile: Any, execution_model: Any = None) -> None:
    """Refuse an execution model that would not change what ``profile`` is quoted at.

    ``eager`` is the unfused program on the compiled kernel model (``docs/compile.md``). On a profile
    whose architecture model times every operator whole (Groq's TSP, the Cerebras wafer:
    ``times_operators``), each operator already keeps its own kernel and its time is the model's,
    on chip, in the compiler's schedule: neither machine has an eager runtime, and the eager program
    would repeat the compiled latency under another name. ``per_operator`` evaluations (``dfx
    validate``) do not come here.

    Raises
    ------
    DfxError
        ``eager`` on such a profile, in one line naming the value and the fix.

    >>> from dfx.hardware import load_profile
    >>> check_execution_model(load_profile("h100"), "eager")  # a GPU: eager is the unfused program
    >>> check_execution_model(load_profile("groq-lpu"), "compiled")
    """
    from dfx.targets import target_for

    target_for(profile).check_execution_model(profile, execution_model_of(execution_model))


def evaluate_one_chip(
    costed: CostedGraph,
    profile: Any,
    *,
    execution_model: Any = None,
    runtime: str | None = None,
    eager: bool = True,
    per_operator: bool = False,
):
    """:func:`evaluate_on` on one chip, before :func:`place_on` spreads it over chips (same parameters)."""
    from dfx.targets import target_for

    calibrated = getattr(profile, "calibrated", None) is not None
    return target_for(profile).evaluate(
        costed,
        profile,
        execution_model=execution_model_of(execution_model),
        runtime=profile.runtime_name(runtime),  # None: the profile's default_runtime; "ideal": none
        eager=eager,
        per_operator=per_operator,
        machine_model=(lambda eager: _calibrated_timer(costed, profile, eager)) if calibrated else None,
    )


def _calibrated_timer(costed: CostedGraph, profile: Any, eager: bool = False) -> dict[str, Any]:
    """The calibrated machine model of a profile that carries its tables (``dfx calibrate --out``):
    the same node and kernel timers ``dfx validate`` predicts with (``dfx.measure.cache_model``, torch-free);
    ``eager``: views cost a dispatch (:func:`dfx.measure.cache_model.cache_timer`)."""
    from dfx.measure.cache_model import NAME, cache_timer, kernel_timer
    from dfx.measure.machine import MachineModel

    machine = MachineModel.from_profile(profile)
    return {
        "node_timer": cache_timer(costed, profile, machine, eager=eager),
        "kernel_timer": kernel_timer(costed, profile, machine),
        "arch_model": NAME,
    }
