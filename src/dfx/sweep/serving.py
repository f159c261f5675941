"""A serving sweep: ``dfx sweep`` with ``rate: [...]`` runs ``dfx serve`` over models x hardware x
dtype x chips x rate (``docs/serving.md``, "A rate sweep through dfx sweep").

Each model, dtype and split is one :func:`dfx.serve.simulate` call with every rate of the sweep
(``ServeConfig.rates``) and every profile, so a machine's steps are priced once and shared by all
its rates (the :class:`dfx.serve.steps.StepPricer` is the run's explicit cache). It runs in this
process: pricing is capture-bound and a rate costs only its simulation. The rows go to
``serving.csv`` in the sweep's folder, one per (model, hardware, dtype, parallel, rate), with the
``dfx.serving/1`` documents beside them in ``serving.json`` and, with several rates, each run's
latency-versus-rate picture (``latency_vs_rate.png``; numbered where the sweep has several models,
dtypes or splits).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Callable

from dfx.sweep.spec import AUTO, SweepSpec, split_of

__all__ = ["SERVING_COLUMNS", "SERVING_FILES", "run_serving_sweep"]

SERVING_FILES = ("serving.csv", "serving.json")
SERVING_COLUMNS = (
    "model",
    "hardware",
    "dtype",
    "parallel",
    "scheduler",
    "rate_per_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
    "e2e_p50_s",
    "requests_per_s",
    "output_tokens_per_s",
    "goodput_per_s",
)


def _config(spec: SweepSpec, model: str, dtype: str, parallel: str) -> Any:
    from dfx.serve import Arrivals, ServeConfig
    from dfx.serve.api import parse_slo
    from dfx.serve.workload import DEFAULT_REQUESTS

    opts = dict(spec.serve)
    requests = int(opts.pop("requests", DEFAULT_REQUESTS))
    slo = opts.pop("slo", None)
    for key in ("input_len", "output_len"):
        if key in opts:
            opts[key] = str(opts[key])
    rates = tuple(float(r) for r in spec.rate)
    return ServeConfig(
        model=model,
        hardware=tuple(spec.profile_refs().values()),
        arrivals=Arrivals(rate=rates[0], requests=requests),
        dtype=dtype,
        slo=parse_slo(slo) if isinstance(slo, str) else dict(slo or {}),
        rates=rates if len(rates) > 1 else (),
        **split_of(parallel) if parallel != AUTO else {},
        **opts,
    )


def _row(model: str, dtype: str, parallel: str, m: Any) -> dict[str, Any]:
    s = m.summary
    return {
        "model": model,
        "hardware": m.profile_id,
        "dtype": dtype,
        "parallel": parallel,
        "scheduler": m.scheduler,
        "rate_per_s": m.rate_per_s,
        "ttft_p50_s": s.ttft_s.p50,
        "ttft_p99_s": s.ttft_s.p99,
        "tpot_p50_s": s.tpot_s.p50 if s.tpot_s else None,
        "tpot_p99_s": s.tpot_s.p99 if s.tpot_s else None,
        "e2e_p50_s": s.e2e_s.p50,
        "requests_per_s": s.requests_per_s,
        "output_tokens_per_s": s.output_tokens_per_s,
        "goodput_per_s": s.goodput_per_s,
    }


def run_serving_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    force: bool = False,
    pricer_factory: Callable[..., Any] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``spec``'s serving sweep and write :data:`SERVING_FILES` into ``out``; the rows, in
    (model, dtype, parallel, rate, hardware) order.

    Parameters
    ----------
    spec : SweepSpec
        Checked, with ``rate`` set.
    pricer_factory : callable, optional
        Passed to :func:`dfx.serve.simulate` (steps given instead of captured: tests).

    Raises
    ------
    DfxError
        A file of :data:`SERVING_FILES` exists in ``out`` and ``force`` is false (before any work), or
        a serving run's own refusal.
    """
    from dfx.report.files import check_targets, write_outputs
    from dfx.serve import simulate

    runs = [(m, d, par) for m in spec.models for d in spec.dtype for par in spec.parallel]
    pictures = [_picture_name(k, len(runs)) for k in range(len(runs))] if len(spec.rate) > 1 else []
    check_targets(out, list(SERVING_FILES) + pictures, force=force)
    rows: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    for model, dtype, parallel in runs:
        config = _config(spec, model, dtype, parallel)
        if on_progress is not None:
            on_progress(f"serving {model} ({dtype}, {parallel}) at {len(spec.rate)} rate(s)")
        result = simulate(config, pricer_factory=pricer_factory)
        rows += [_row(model, dtype, parallel, m) for m in result.curve or result.machines]
        docs.append(result.to_dict())
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=SERVING_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    files: dict[str, str | bytes] = {"serving.csv": text.getvalue(), "serving.json": json.dumps(docs, indent=1)}
    if pictures:
        from dfx.serve.plot import rate_curve_png

        files.update({name: rate_curve_png(doc) for name, doc in zip(pictures, docs)})
    write_outputs(out, files, force=force)
    return rows


def _picture_name(k: int, n: int) -> str:
    """The latency-versus-rate picture of run ``k`` of ``n`` (model, dtype, split), numbered where several.

    >>> _picture_name(0, 1), _picture_name(1, 3)
    ('latency_vs_rate.png', 'latency_vs_rate-2.png')
    """
    return "latency_vs_rate.png" if n == 1 else f"latency_vs_rate-{k + 1}.png"
