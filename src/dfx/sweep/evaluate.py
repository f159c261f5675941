"""Evaluate one group of sweep points: one captured graph, every profile and execution model of the group.

:func:`run_group` is what a worker process or a Ray task runs. It takes a plain task dict
(:meth:`dfx.sweep.spec.Group.to_task`) and returns plain row dicts, so the local pool and Ray run
the same function on the same data and give the same rows.

A forward point is evaluated exactly as ``dfx.analyze(model, hardware=[profile], batch=, seq=,
dtype=, execution_model=, chips= or parallel=)`` does it: :func:`dfx.analysis.capture_spec`,
:func:`dfx.costs.annotate`, :func:`dfx.analysis.evaluate_on` (as its two halves: one chip evaluated
once per profile and execution model, then placed on each split of the ``parallel`` axis). The
graph is kept (in this process, and as ``dfx.graph/1`` JSON in the sweep's cache folder, so a
resumed sweep does not capture again); sizes of one model share one symbolic capture per bucket
(:mod:`dfx.sweep.graphs`): each further size is a substitution, equal to its concrete capture. A
phase point calls ``dfx.analyze(..., phase=...)`` itself; its steps are captured once per process by
:func:`dfx.inference.steps.capture_step`.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from dfx.errors import DfxError
from dfx.sweep.spec import FORWARD

__all__ = ["METRICS", "costed_graph", "graph_on_disk", "SEQ_NOT_TOKENS", "run_group", "seq_counts_tokens"]

# The numbers a row carries besides its key (docs/sweeps.md, "The results table").
METRICS = ("latency_s", "tokens_per_s", "ttft_s", "tpot_s", "total_s", "flops", "bytes", "chips")


def _graph_cache_path(cache_dir: str, key: tuple[Any, ...]) -> Path:
    from dfx._version import __version__

    digest = hashlib.sha256(repr((__version__, *key)).encode()).hexdigest()[:24]
    return Path(cache_dir) / f"{digest}.graph.json"


@lru_cache(maxsize=256)  # more than a sweep's graphs per worker: a miss re-reads the graph's JSON
def costed_graph(
    model: str,
    batch: int,
    seq: int,
    dtype: str,
    method: str,
    cache_dir: str | None = None,
    capture_cache: str | None = None,
):
    """The costed graph of a forward point, captured at most once per process and per cache folder.

    Parameters
    ----------
    model : str
        A model spec (built-in, ``hf:``).
    batch, seq : int
    dtype : str
        torch's dtype name.
    method : str
        Capture method.
    cache_dir : str, optional
        Folder of captured graphs (``dfx.graph/1`` JSON, keyed by dfx version, model, sizes, dtype,
        method); read if present, written after a capture or a substitution
        (:func:`dfx.sweep.graphs.forward_graph`).
    capture_cache : str, optional
        The folder of the user's capture cache (:class:`dfx.cache.CaptureCache`), shared by every
        sweep and ``dfx analyze``: read before capturing, written after.

    Returns
    -------
    CostedGraph
    """
    from dfx.costs import annotate
    from dfx.heap import after_capture
    from dfx.ir import Graph
    from dfx.sweep.graphs import forward_graph

    path = None if cache_dir is None else _graph_cache_path(cache_dir, (model, batch, seq, dtype, method))
    if path is not None and path.is_file():
        try:
            costed = annotate(Graph.from_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a torn or stale file: capture again and replace it
        else:
            after_capture()
            return costed
    captures = None
    if capture_cache is not None:
        from dfx.cache import CaptureCache

        captures = CaptureCache(capture_cache)
    graph = forward_graph(model, batch, seq, dtype, method, captures)  # one symbolic capture per bucket
    if path is not None:
        _write_atomic(path, graph.to_json())
    costed = annotate(graph)
    after_capture()  # a worker or the command line freezes what it keeps (dfx.heap)
    return costed


def graph_on_disk(task: dict[str, Any], cache_dir: str | None) -> bool:
    """Whether a forward task's graph is already in the cache folder (nothing to capture for it)."""
    from dfx.costs.precision import Precision

    if cache_dir is None or task["phase"] != FORWARD:
        return False
    key = (task["model"], task["batch"], task["seq"], Precision.of(task["dtype"]).capture, task["method"])
    if _graph_cache_path(cache_dir, key).is_file():
        return True
    if task.get("capture_cache") is None:
        return False
    from dfx.cache import CaptureCache, CaptureKey

    model, batch, seq, dtype, method = key
    captured = CaptureKey.of("forward", model, batch=batch, seq=seq, dtype=dtype, method=method)
    return captured is not None and CaptureCache(task["capture_cache"]).path(captured).is_file()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _profile(ref: str):
    """The profile ``ref`` names, loaded once per process while its file (if a file) is unchanged."""
    try:
        st = os.stat(ref)  # a user's profile file: edited between two sweeps of one process, read again
        stamp = (st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):  # a shipped id or a quick profile
        stamp = None
    return _profile_at(ref, stamp)


@lru_cache(maxsize=64)
def _profile_at(ref: str, stamp: tuple[int, int] | None):
    from dfx.hardware import load_profile

    return load_profile(ref)


def _row(task: dict[str, Any], hardware: str, execution_model: str, parallel: str, **metrics: Any) -> dict[str, Any]:
    from dfx.sweep.spec import Point

    point = Point(
        task["model"], hardware, task["batch"], task["seq"], task["dtype"], task["phase"], execution_model, parallel
    )
    row = {
        "point_id": point.point_id,
        **{
            k: getattr(point, k)
            for k in ("model", "hardware", "batch", "seq", "dtype", "phase", "execution_model", "parallel")
        },
    }
    row.update({k: metrics.get(k, None if k in ("chips",) else math.nan) for k in METRICS})
    row["error"] = metrics.get("error", "")
    return row


# built-in -> what its seq is, where that is not tokens (Preset.seq_means; tests/sweep/test_sweep_command.py)
SEQ_NOT_TOKENS: dict[str, str] = {"resnet-block": "image side", "mlp": "images per sample"}


def seq_counts_tokens(model: str) -> bool:
    """Whether ``model``'s seq is a count of tokens, so that ``batch * seq / latency_s`` is tokens/s.

    A built-in says what its seq is (:attr:`dfx.models.registry.Preset.seq_means`): ``resnet-block``'s
    is the image side, ``mlp``'s the images per sample (:data:`SEQ_NOT_TOKENS`, a copy without
    importing torch, so that a sweep on cached graphs never does; a test checks it). An ``hf:``
    config's is tokens.

    Examples
    --------
    >>> seq_counts_tokens("gpt2-block"), seq_counts_tokens("hf:gpt2"), seq_counts_tokens("resnet-block")
    (True, True, False)
    """
    return model not in SEQ_NOT_TOKENS


def _forward_rows(task: dict[str, Any], cache_dir: str | None) -> list[dict[str, Any]]:
    from dfx.analysis import evaluate_one_chip, place_on
    from dfx.costs.precision import Precision

    # as dfx.analyze does it: capture in the precision's capture dtype (bf16 for fp8/int8), and
    # re-price the costs unless the capture dtype is the activation dtype
    precision = Precision.of(task["dtype"])
    costed = costed_graph(
        task["model"],
        task["batch"],
        task["seq"],
        precision.capture,
        task["method"],
        cache_dir,
        task.get("capture_cache"),
    )
    if not precision.is_identity:
        costed = precision.apply(costed)
    total = costed.total
    # tokens/s only where seq counts tokens: resnet-block's seq is the image side and mlp's the images
    # per sample, so batch * seq / latency is no throughput there; the column is left empty (NaN)
    tokens = task["batch"] * task["seq"] if seq_counts_tokens(task["model"]) else math.nan
    rows = []
    one_chip: dict[tuple[str, str], Any] = {}  # (hw, em) -> its one-chip result, placed on every split asked
    for hw, em, par in task["points"]:
        profile = _profile(task["profile_refs"][hw])
        try:
            if (hw, em) not in one_chip:  # a GPU's eager numbers: no latency reads them
                one_chip[hw, em] = evaluate_one_chip(costed, profile, execution_model=_em(em), eager=False)
            result = place_on(one_chip[hw, em], costed, profile, _split(par))
        except DfxError as exc:  # a plan this model or machine refuses (pp beyond its layers, no interconnect)
            rows.append(_row(task, hw, em, par, error=_one_line(exc)))
            continue
        latency = result.latency_s
        rows.append(
            _row(
                task,
                hw,
                em,
                par,
                latency_s=latency,
                tokens_per_s=tokens / latency if latency > 0 else math.nan,  # NaN where seq is not tokens
                total_s=latency,
                flops=total.flops,
                bytes=total.bytes_read + total.bytes_written,
                chips=result.extras.get("chips"),
            )
        )
    return rows


def _split(parallel: str) -> Any:
    """``evaluate_on``'s ``split`` for a ``parallel`` value, as ``dfx.analyze`` turns its keywords into one."""
    from dfx.request import split_of as split_request
    from dfx.sweep.spec import split_of

    kw = split_of(parallel)
    return split_request(kw.get("chips"), kw.get("parallel"))


def _one_line(exc: BaseException) -> str:
    from dfx.errors import one_line

    return one_line(str(exc), 300)


def _phase_rows(task: dict[str, Any]) -> list[dict[str, Any]]:
    from dfx.analysis import analyze

    phase, seq = task["phase"], task["seq"]
    lengths = {
        "decode": {"kv_len": seq},
        "prefill": {"prompt_len": seq},
        "generate": {"prompt_len": seq, "output_len": task["output_len"]},
    }[phase]
    from dfx.sweep.spec import split_of

    from dfx.analysis import check_execution_model

    rows = []
    for em, par in dict.fromkeys((em, par) for _, em, par in task["points"]):  # one analyze per (model, split)
        hws = []
        for hw in (hw for hw, e, p in task["points"] if (e, p) == (em, par)):
            try:  # a profile refusing the execution model is its own row's error, not the group's
                check_execution_model(_profile(task["profile_refs"][hw]), _em(em))
                hws.append(hw)
            except DfxError as exc:
                rows.append(_row(task, hw, em, par, error=_one_line(exc)))
        if not hws:
            continue
        try:
            a = analyze(
                task["model"],
                hardware=[_profile(task["profile_refs"][h]) for h in hws],
                batch=task["batch"],
                dtype=task["dtype"],
                method=task["method"],
                phase=phase,
                execution_model=_em(em),
                **lengths,
                **split_of(par),
            )
        except DfxError as exc:  # the model refuses the phase, or a plan its layers cannot take
            rows.extend(_row(task, hw, em, par, error=_one_line(exc)) for hw in hws)
            continue
        total = a.costed.total
        for hw, result in zip(hws, a.hardware):
            m = a.inference.metrics(result.profile.id)
            tokens_per_s = m.prefill_tokens_per_s if phase == "prefill" else m.tokens_per_s
            rows.append(
                _row(
                    task,
                    hw,
                    em,
                    par,
                    latency_s=result.latency_s,
                    tokens_per_s=tokens_per_s,
                    ttft_s=_nan(m.ttft_s),
                    tpot_s=_nan(m.tpot_s),
                    total_s=_nan(m.total_s),
                    flops=total.flops,
                    bytes=total.bytes_read + total.bytes_written,
                    chips=result.extras.get("chips"),
                )
            )
    return rows


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _em(name: str) -> str | None:
    return None if name == "default" else name


def run_group(task: dict[str, Any], cache_dir: str | None = None) -> list[dict[str, Any]]:
    """The result rows of one group task: one per (profile, execution model), in the task's order.

    A point that dfx refuses (a phase on a model that is not a causal decoder, a capture failure)
    gets a row with its one-line message under ``error`` and NaN numbers, so a resumed sweep does
    not retry it.

    Parameters
    ----------
    task : dict
        :meth:`dfx.sweep.spec.Group.to_task`.
    cache_dir : str, optional
        Folder of captured graphs (see :func:`costed_graph`).
    """
    try:
        return _forward_rows(task, cache_dir) if task["phase"] == FORWARD else _phase_rows(task)
    except DfxError as exc:
        return [_row(task, hw, em, par, error=_one_line(exc)) for hw, em, par in task["points"]]
