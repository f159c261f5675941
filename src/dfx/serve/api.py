"""``dfx.serve.simulate``: one serving run (or a rate sweep) of a model on machines, as a typed result.

The steps, in order: load the profiles; draw the requests (:mod:`dfx.serve.workload`); per machine
pick the scheduler (:func:`dfx.serve.policy.default_scheduler` unless ``scheduler`` is given),
price and interpolate its steps once (:mod:`dfx.serve.steps`; shared by every rate), size its KV
cache (continuous, disaggregated) or its compiled batch (static), and run the discrete-event loop
(:mod:`dfx.serve.engine`, :mod:`dfx.serve.static`, :mod:`dfx.serve.disagg`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from dfx.errors import DfxError
from dfx.serve.engine import DEFAULT_KV_BLOCK, DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_SEQS, ContinuousConfig
from dfx.serve.metrics import ServingSummary, Timeline, bin_timeline, summarize
from dfx.serve.policy import check_scheduler, default_scheduler
from dfx.serve.speculative import parse_speculative
from dfx.serve.trace import record_continuous, record_disaggregated, record_static
from dfx.serve.steps import DEFAULT_TOL, IterationCost, StepPricer, fit_costs
from dfx.serve.workload import Arrivals, Request, check_arrivals, make_requests, parse_lengths

__all__ = ["MachineServing", "ServeConfig", "ServingResult", "simulate"]

# vLLM's gpu_memory_utilization default (vllm/engine/arg_utils.py): the share of device memory the
# server takes for weights, activations and the KV cache; SGLang's mem_fraction_static is 0.85-0.88
DEFAULT_MEM_FRACTION = 0.9
# A budget on the tokens one run simulates (every request's prompt + output, on every machine, at every
# rate): 10,000 requests x (512 + 10,000) tokens simulated in 3.3 s on the 2-CPU machine (2026-12-07),
# so 2**30 is about half a minute; 100,000 x (512 + 100,000) ran past 100 s unrefused.
MAX_SERVE_TOKENS = 2**30
# How a continuous server runs prompts (dfx.serve.engine, "Separate prefill"): mixed into the decode
# iteration (vLLM V1, Sarathi-Serve) or as an iteration of its own, first (SGLang v0.3's default,
# enable_mixed_chunk False; vLLM V0 without chunked prefill)
PREFILL_MODES = ("mixed", "separate")


@dataclass(frozen=True)
class ServeConfig:
    """One serving request, validated once and passed whole (``dfx serve``'s options)."""

    model: str
    hardware: tuple[str, ...]
    arrivals: Arrivals
    input_len: str = "512"
    output_len: str = "128"
    seed: int = 0
    scheduler: str | None = None
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_seqs: int = DEFAULT_MAX_SEQS
    kv_block: int = DEFAULT_KV_BLOCK
    mem_fraction: float = DEFAULT_MEM_FRACTION
    batch: int | None = None  # a static batch; None: the smallest that keeps up (api docstring)
    buckets: tuple[int, ...] | None = None  # static prompt buckets; None: powers of two
    chips: int | None = None
    parallel: str | None = None
    dtype: str = "bfloat16"
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    runtime: str | None = None  # time kernels as that runtime of each profile runs them (docs/hardware.md)
    slo: Mapping[str, float] = field(default_factory=dict)
    tol: float = DEFAULT_TOL
    rates: tuple[float, ...] = ()  # more rates: a latency-versus-rate curve
    prefill: str = "mixed"  # continuous: prompt chunks in the decode iteration, or "separate" (SGLang v0.3)
    speculative: tuple[int, float] | None = None  # (K proposed, acceptance rate): dfx.serve.speculative
    routing: str | None = None  # MoE routing (dfx.costs.moe.parse_routing); None: uniform
    capacity_factor: float | None = None  # MoE capacity on compile-time targets; None: the default 1.25

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "hardware": list(self.hardware),
            "arrivals": self.arrivals.to_dict(),
            "input_len": self.input_len,
            "output_len": self.output_len,
            "seed": self.seed,
            "scheduler": self.scheduler,
            "max_batch_tokens": self.max_batch_tokens,
            "max_seqs": self.max_seqs,
            "kv_block": self.kv_block,
            "mem_fraction": self.mem_fraction,
            "batch": self.batch,
            "buckets": list(self.buckets) if self.buckets else None,
            "chips": self.chips,
            "parallel": self.parallel,
            "dtype": self.dtype,
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "runtime": self.runtime,
            "slo": dict(self.slo),
            "tol": self.tol,
            "rates": list(self.rates),
            "prefill": self.prefill,
            "speculative": list(self.speculative) if self.speculative else None,
            "routing": self.routing,
            "capacity_factor": self.capacity_factor,
        }


@dataclass(frozen=True)
class MachineServing:
    """One machine's serving run: its scheduler and why, its split, cache or compiled batch, how
    its steps were priced, the summary, the timeline and the per-request latencies (s)."""

    profile_id: str
    scheduler: str
    scheduler_source: str
    chips: int
    summary: ServingSummary
    timeline: Timeline
    ttft_s: tuple[float, ...]
    tpot_s: tuple[float, ...]
    e2e_s: tuple[float, ...]
    kv_capacity_tokens: int | None = None
    static: Mapping[str, Any] | None = None
    disaggregated: Mapping[str, Any] | None = None
    pricing: Mapping[str, Any] = field(default_factory=dict)
    rate_per_s: float | None = None
    record: Any = field(default=None, compare=False, repr=False)  # dfx.serve.trace.RunRecord: --trace's

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile_id,
            "scheduler": self.scheduler,
            "scheduler_source": self.scheduler_source,
            "chips": self.chips,
            "rate_per_s": self.rate_per_s,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "summary": self.summary.to_dict(),
            "static": dict(self.static) if self.static is not None else None,
            "disaggregated": dict(self.disaggregated) if self.disaggregated is not None else None,
            "pricing": dict(self.pricing),
            "timeline": self.timeline.to_dict(),
            "requests": {"ttft_s": list(self.ttft_s), "tpot_s": list(self.tpot_s), "e2e_s": list(self.e2e_s)},
        }


@dataclass(frozen=True)
class ServingResult:
    """What :func:`simulate` returns: the config, each machine's run at the first rate (or the
    offline/closed-loop run), and with several rates each rate's runs (the latency-versus-rate curve)."""

    config: ServeConfig
    machines: tuple[MachineServing, ...]
    curve: tuple[MachineServing, ...] = ()
    wall_s: float = 0.0
    pricing_wall_s: float = 0.0

    def machine(self, profile_id: str) -> MachineServing:
        for m in self.machines:
            if m.profile_id == profile_id:
                return m
        raise KeyError(f"no serving run for {profile_id!r}")

    def to_dict(self) -> dict[str, Any]:
        from dfx.schema.ids import SERVING_SCHEMA

        from dfx.schema.serving import read_serving

        doc = {
            "schema": SERVING_SCHEMA,
            "config": self.config.to_dict(),
            "machines": [m.to_dict() for m in self.machines],
            "curve": [_curve_row(m) for m in self.curve],
            "wall_s": self.wall_s,
            "pricing_wall_s": self.pricing_wall_s,
        }
        return read_serving(doc, "dfx.serve").to_dict()  # written through the record that reads it


def _curve_row(m: MachineServing) -> dict[str, Any]:
    s = m.summary
    return {
        "profile": m.profile_id,
        "scheduler": m.scheduler,
        "rate_per_s": m.rate_per_s,
        "requests_per_s": s.requests_per_s,
        "output_tokens_per_s": s.output_tokens_per_s,
        "ttft_s": s.ttft_s.to_dict(),
        "tpot_s": s.tpot_s.to_dict() if s.tpot_s else None,
        "e2e_s": s.e2e_s.to_dict(),
        "goodput_per_s": s.goodput_per_s,
    }


def parse_slo(text: str | None) -> dict[str, float]:
    """``"ttft=0.2,tpot=0.05"`` (seconds; ``ms`` suffix allowed) -> ``{"ttft_s": 0.2, "tpot_s": 0.05}``.

    >>> parse_slo("ttft=200ms,tpot=0.05")
    {'ttft_s': 0.2, 'tpot_s': 0.05}
    """
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        name = name.strip().lower()
        if not sep or name not in ("ttft", "tpot", "e2e"):
            raise DfxError(
                f"bad --slo {text!r}; expected ttft=SECONDS,tpot=SECONDS (e2e= too), e.g. ttft=0.2,tpot=50ms"
            )
        v = value.strip().lower()
        scale = 1e-3 if v.endswith("ms") else 1.0
        try:
            seconds = float(v.removesuffix("ms").removesuffix("s")) * scale
        except ValueError:
            raise DfxError(f"bad --slo {text!r}: {value!r} is not a time such as 0.2 or 200ms") from None
        if not math.isfinite(seconds) or seconds <= 0:
            raise DfxError(f"bad --slo {text!r}: a target must be a positive time")
        out[f"{name}_s"] = seconds
    return out


def _split(chips: int | None, parallel: str | None) -> Any:
    from dfx.parallel import parse_parallel

    if parallel is not None:
        plan = parse_parallel(parallel)
        if chips is not None and chips != plan.chips:
            raise DfxError(
                f"--chips {chips} disagrees with --parallel {parallel} ({plan.chips} chips); give one of them"
            )
        return replace(plan, source="--parallel")
    if chips is not None and (isinstance(chips, bool) or not isinstance(chips, int) or chips < 1):
        raise DfxError(f"--chips {chips!r}: expected a whole number >= 1")
    return chips


def _check(config: ServeConfig) -> None:
    check_scheduler(config.scheduler)
    check_arrivals(config.arrivals)
    for r in config.rates:
        check_arrivals(Arrivals(rate=r, requests=config.arrivals.requests))
    if not (0 < config.mem_fraction <= 1):
        raise DfxError(f"--mem-fraction {config.mem_fraction!r}: expected a share of device memory in (0, 1]")
    if not config.hardware:
        raise DfxError("no hardware given; add --hw PROFILE (e.g. --hw nvidia-h100-sxm)")
    ContinuousConfig(
        kv_blocks=1, max_batch_tokens=config.max_batch_tokens, max_seqs=config.max_seqs, kv_block=config.kv_block
    )
    if config.prefill not in PREFILL_MODES:
        raise DfxError(
            f"--prefill {config.prefill!r}: expected mixed (prompt chunks join the decode iteration: vLLM V1) "
            "or separate (a prefill iteration of its own, first: SGLang v0.3, vLLM V0)"
        )
    if config.speculative is not None:
        parse_speculative(",".join(map(str, config.speculative)))
    if config.batch is not None and (
        isinstance(config.batch, bool) or not isinstance(config.batch, int) or config.batch < 1
    ):
        raise DfxError(f"--batch {config.batch!r}: a static batch must be a whole number >= 1")


def _check_budget(workloads: Sequence[Sequence[Request]], machines: int) -> None:
    """Refuse a run whose requests hold more than :data:`MAX_SERVE_TOKENS` tokens, before pricing."""
    tokens = sum(r.prompt_len + r.output_len for w in workloads for r in w)
    if tokens * machines > MAX_SERVE_TOKENS:
        per = f" x {machines} machines" if machines > 1 else ""
        raise DfxError(
            f"{sum(len(w) for w in workloads):,} requests hold {tokens:,} prompt + output tokens{per}, above dfx's "
            f"budget of {MAX_SERVE_TOKENS:,} (2**30) tokens a serve run simulates; "
            "give fewer --requests or a shorter --input-len / --output-len"
        )


def simulate(
    config: ServeConfig,
    *,
    pricer_factory: Callable[[Sequence[Any], Any], StepPricer] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> ServingResult:
    """Simulate serving ``config.model`` on each of ``config.hardware`` (module docstring).

    Parameters
    ----------
    config : ServeConfig
    pricer_factory : callable, optional
        ``(profiles, split) -> StepPricer``; default: :meth:`StepPricer.from_model` (dfx's own phases).
    on_progress : callable, optional
        Called with a short line as each stage starts (the CLI's progress bar).

    Raises
    ------
    DfxError
        Bad options (one line naming the value and the fix), an unknown profile or model.
    """
    from dfx.hardware import load_profile

    t0 = time.perf_counter()
    _check(config)
    say = on_progress or (lambda _line: None)
    profiles = [load_profile(h) for h in config.hardware]
    ids = [p.id for p in profiles]
    if len(set(ids)) != len(ids):
        raise DfxError(f"--hw names the same profile twice ({', '.join(ids)}); give each machine once")
    inputs = parse_lengths(config.input_len, "--input-len")
    outputs = parse_lengths(config.output_len, "--output-len")
    rates = config.rates or ((config.arrivals.rate,) if config.arrivals.rate is not None else (None,))
    workloads = [
        make_requests(
            replace(config.arrivals, rate=r) if r is not None else config.arrivals, inputs, outputs, config.seed
        )
        for r in rates
    ]
    split = _split(config.chips, config.parallel)
    if pricer_factory is None:

        def pricer_factory(ps, sp):
            return StepPricer.from_model(
                config.model,
                ps,
                dtype=config.dtype,
                weight_dtype=config.weight_dtype,
                kv_dtype=config.kv_dtype,
                split=sp,
                runtime=config.runtime,
                routing=config.routing,
                capacity_factor=config.capacity_factor,
            )

    _check_budget(workloads, len(profiles))
    all_requests = [r for w in workloads for r in w]
    servers = []
    for p in profiles:
        say(f"pricing {config.model} on {p.id}")
        pricer = pricer_factory([p], split)
        server = _server(config, p, pricer, all_requests)
        servers.append(server)
    first, curve = [], []
    for k, (rate, reqs) in enumerate(zip(rates, workloads)):
        for server in servers:
            say(f"serving {len(reqs):,} requests on {server.profile_id}" + (f" at {rate:g}/s" if rate else ""))
            m = server.run(reqs, config, rate)
            (first if k == 0 else curve).append(m)
            if len(rates) > 1 and k == 0:
                curve.append(m)
    pricing_s = sum(s.pricer.wall_s for s in servers)  # points priced up front and during the runs
    return ServingResult(config, tuple(first), tuple(curve), time.perf_counter() - t0, pricing_s)


@dataclass
class _Server:
    """One machine ready to serve: its scheduler, priced costs and limits."""

    profile_id: str
    scheduler: str
    source: str
    cost: IterationCost
    chips: int
    pricing: dict
    kv_blocks: int | None = None
    batch: int | None = None
    buckets: tuple[int, ...] = ()
    transfer: Callable[[int], float] | None = None
    pricer: Any = None

    def pricing_now(self) -> dict:
        """How the steps were priced so far (points are priced as the runs need them)."""
        p = self.pricer
        return {
            **self.pricing,
            "points": len(p.points),
            "wall_s": p.wall_s,
            "grid": self.cost.to_dict(),
            "priced": [q.to_dict() for q in p.points],
        }

    def run(self, reqs: Sequence[Request], config: ServeConfig, rate: float | None) -> MachineServing:
        conc = config.arrivals.concurrency
        prompts = [r.prompt_len for r in reqs]
        outs = [r.output_len for r in reqs]
        if self.scheduler == "static":
            return self._static(reqs, config, rate, prompts, outs, conc)
        cc = ContinuousConfig(
            kv_blocks=self.kv_blocks,
            max_batch_tokens=config.max_batch_tokens,
            max_seqs=config.max_seqs,
            kv_block=config.kv_block,
            mixed_prefill=config.prefill == "mixed",
            speculative_k=config.speculative[0] if config.speculative else 0,
            accept=config.speculative[1] if config.speculative else 0.0,
        )
        if self.scheduler == "disaggregated":
            from dfx.serve.disagg import run_disaggregated

            d = run_disaggregated(reqs, self.cost, cc, self.transfer, concurrency=conc)
            rows = _engine_rows(d.prefill) + (_engine_rows(d.decode) if d.decode else [])
            rows.sort()
            summary = summarize(
                d.arrival_s,
                d.first_token_s,
                d.finish_s,
                prompts,
                outs,
                rows,
                slo=config.slo,
                preemptions=sum(d.preemptions),
            )
            extra = {
                "pools": 2,
                "chips_per_pool": self.chips,
                "mean_transfer_s": sum(d.transfer_s) / len(d.transfer_s),
                "prefill_iterations": d.prefill.iterations,
                "decode_iterations": d.decode.iterations if d.decode else 0,
            }
            return self._result(
                summary,
                rows,
                d.arrival_s,
                d.first_token_s,
                d.finish_s,
                outs,
                rate,
                disaggregated=extra,
                record=record_disaggregated(d),
            )
        from dfx.serve.engine import run_continuous

        e = run_continuous(reqs, self.cost, cc, concurrency=conc)
        rows = _engine_rows(e)
        summary = summarize(
            e.arrival_s,
            e.first_token_s,
            e.finish_s,
            prompts,
            outs,
            rows,
            slo=config.slo,
            preemptions=sum(e.preemptions),
        )
        return self._result(
            summary, rows, e.arrival_s, e.first_token_s, e.finish_s, outs, rate, record=record_continuous(e)
        )

    def _static(self, reqs, config, rate, prompts, outs, conc) -> MachineServing:
        from dfx.serve.static import run_static

        s = run_static(reqs, self.cost, self.batch, self.buckets, concurrency=conc)
        rows = [(b0, b1, float(n), None, w) for b0, b1, n, _bucket, _o, w in s.batches]
        waits = [st - a for st, a in zip(s.start_s, s.arrival_s)]
        from dfx.serve.metrics import Percentiles

        w = Percentiles.of(waits)
        extra = {
            "batch": self.batch,
            "buckets": list(self.buckets),
            "batches_run": len(s.batches),
            "prompt_padding_fraction": 1 - s.prompt_tokens / s.prompt_padded_tokens if s.prompt_padded_tokens else 0.0,
            "decode_padding_fraction": (
                1 - s.decode_row_steps / s.decode_padded_row_steps if s.decode_padded_row_steps else 0.0
            ),
            "wait_s": w.to_dict() if w else None,
        }
        summary = summarize(s.arrival_s, s.first_token_s, s.finish_s, prompts, outs, rows, slo=config.slo)
        return self._result(
            summary, rows, s.arrival_s, s.first_token_s, s.finish_s, outs, rate, static=extra, record=record_static(s)
        )

    def _result(self, summary, rows, arrival, first, finish, outs, rate, static=None, disaggregated=None, record=None):
        from dfx.serve.metrics import per_request

        ttft, tpot, e2e = per_request(arrival, first, finish, outs)
        return MachineServing(
            self.profile_id,
            self.scheduler,
            self.source,
            self.chips,
            summary,
            bin_timeline(rows),
            tuple(ttft),
            tuple(tpot),
            tuple(e2e),
            kv_capacity_tokens=self.kv_blocks * self.pricing["kv_block"] if self.kv_blocks is not None else None,
            static=static,
            disaggregated=disaggregated,
            pricing=self.pricing_now(),
            rate_per_s=rate,
            record=record,
        )


def _engine_rows(e) -> list:
    return [(t0, t1, float(b), used / e.kv_blocks, w) for t0, t1, b, used, w in e.timeline]


def _server(config: ServeConfig, profile: Any, pricer: StepPricer, reqs: Sequence[Request]) -> _Server:
    """Price ``profile``'s steps and size its cache or compiled batch for ``reqs``."""
    if config.scheduler is not None:
        scheduler, source = config.scheduler, "--scheduler"
    else:
        scheduler, source = default_scheduler(profile)
    if scheduler == "static" and config.speculative:
        raise DfxError(
            f"{profile.id}: --speculative is modelled for continuous and disaggregated serving, not a static "
            "compiled batch; add --scheduler continuous or drop --speculative"
        )
    longest_prompt = max(r.prompt_len for r in reqs)
    longest_ctx = max(r.prompt_len + r.output_len for r in reqs)
    pricing: dict[str, Any] = {"tol": config.tol, "kv_block": config.kv_block}
    if scheduler == "static":
        server = _static_server(config, profile, pricer, reqs, longest_ctx, source)
    else:
        server = _paged_server(config, profile, pricer, reqs, scheduler, source, longest_prompt, longest_ctx)
    server.pricing = {**pricing, **server.pricing}
    server.pricer = pricer
    return server


def _paged_server(config, profile, pricer, reqs, scheduler, source, longest_prompt, longest_ctx) -> _Server:
    from dfx.serve.steps import PREFILL_QUANTUM

    pid = profile.id
    top_prefill = -(-max(config.max_batch_tokens, longest_ctx) // PREFILL_QUANTUM) * PREFILL_QUANTUM
    first = pricer.point(1, top_prefill, 0)  # the largest pass: its activations and split size the cache
    chips = first.chips[pid]
    geo = pricer.geometry
    kv_tokens = _kv_capacity_tokens(profile, chips, geo, config.mem_fraction)
    if kv_tokens is None:  # a memory of unknown size: the cache is not what limits the server
        kv_tokens = sum(r.prompt_len + r.output_len for r in reqs)
    blocks = int(kv_tokens // config.kv_block)
    if blocks * config.kv_block < longest_ctx:
        raise DfxError(
            f"{pid}: {chips} chip(s) leave room for {max(0, blocks * config.kv_block):,} KV tokens after the weights "
            f"and activations, less than one request's {longest_ctx:,}; give more chips (--chips), a smaller "
            "--kv-dtype or --weight-dtype, or shorter lengths"
        )
    costs = fit_costs(pricer, max_kv=longest_ctx, tol=config.tol)[pid]
    transfer = None
    if scheduler == "disaggregated":
        from dfx.parallel import Collective, collective_s, interconnect_of

        link = interconnect_of(profile)
        per_token = geo.kv_bytes_per_token

        def transfer(prompt_len: int) -> float:
            return collective_s(link, Collective.SEND_RECV, per_token * prompt_len, 2)

    pricing = {"kv_bytes_per_token": geo.kv_bytes_per_token, "weight_bytes": geo.weight_bytes}
    return _Server(pid, scheduler, source, costs, chips, pricing, kv_blocks=blocks, transfer=transfer)


def _kv_capacity_tokens(profile: Any, chips: int, geo: Any, mem_fraction: float) -> float | None:
    """``(chips * memory * mem_fraction - weights - activations) / KV bytes per token`` (``None``:
    the memory's size is not known), with the memory the model lives in (off chip, else on chip)."""
    from dfx.arch.memory.capacity import offchip_memory, onchip_memory

    level = offchip_memory(profile) or onchip_memory(profile)
    if level is None or not level.capacity_bytes:
        return None
    free = chips * level.capacity_bytes * mem_fraction - geo.weight_bytes - geo.activation_bytes
    return max(0.0, free / geo.kv_bytes_per_token)


def _static_server(config, profile, pricer, reqs, longest_ctx, source) -> _Server:
    from dfx.serve.static import decode_steps_s
    from dfx.shapes.buckets import check_buckets, pow2_ladder

    pid = profile.id
    buckets = check_buckets(config.buckets) if config.buckets else pow2_ladder([r.prompt_len for r in reqs])
    if max(r.prompt_len for r in reqs) > buckets[-1]:
        raise DfxError(f"--buckets {','.join(map(str, buckets))}: the longest prompt is longer than the largest bucket")
    max_kv = buckets[-1] + max(r.output_len for r in reqs)
    rate = max(config.rates) if config.rates else config.arrivals.rate
    mean_prompt = sum(r.prompt_len for r in reqs) / len(reqs)
    mean_out = sum(r.output_len for r in reqs) / len(reqs)
    bucket = next(b for b in buckets if b >= mean_prompt)
    costs = fit_costs(pricer, max_kv=max_kv, batch=config.batch or 1, tol=config.tol)[pid]
    batch = config.batch
    chosen = "--batch"
    if batch is None:
        if config.arrivals.concurrency is not None:
            batch = 1 << (min(config.arrivals.concurrency, config.max_seqs) - 1).bit_length()
            chosen = "the power of two >= --concurrency"
        elif rate is None:
            batch = min(config.max_seqs, 1 << (min(len(reqs), config.max_seqs) - 1).bit_length())
            chosen = "offline: the power of two >= the requests, at most --max-seqs"
        else:
            batch = 1
            while True:
                costs.price_batch(batch)
                t = costs.batch_prefill_s(batch, bucket) + decode_steps_s(
                    costs, batch, bucket, max(0, round(mean_out) - 1)
                )
                if batch / t >= rate or batch >= config.max_seqs:
                    break
                batch *= 2
            chosen = f"the smallest power of two whose throughput at the mean lengths is >= {rate:g} requests/s"
    costs.price_batch(batch)
    for b in buckets:  # each compiled bucket's prefill, priced exactly
        costs.batch_prefill_s(batch, b)
    chips = max(p.chips.get(pid, 1) for p in pricer.points if p.batch == batch)
    pricing = {"batch_chosen_by": chosen}
    return _Server(pid, "static", source, costs, chips, pricing, batch=batch, buckets=tuple(buckets))
