"""What a sweep covers: its axes, read from a YAML file or flags, and the points they span.

A sweep is the cross product of its axes (``docs/sweeps.md``)::

    models x hardware x batch x seq x dtype x phase x execution_model x parallel

Each :class:`Point` is one ``dfx.analyze`` call with one profile. Points that share a graph (the same
model, batch, seq, dtype and phase) form a :class:`Group`: it is captured once and evaluated on
every profile and execution model of the group.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from dfx.errors import DfxError

__all__ = [
    "AUTO",
    "AXES",
    "DEFAULT_MAX_POINTS",
    "FORWARD",
    "Group",
    "Point",
    "SweepSpec",
    "load_spec",
    "parallel_value",
    "split_of",
]

# The refusal threshold: at the measured ~1 ms per evaluated point (bench/bench_sweep.py), 100,000
# points are minutes of evaluation, before their captures; more is almost always a typo'd axis.
DEFAULT_MAX_POINTS = 100_000
MAX_SPEC_BYTES = 2**20  # a sweep file lists axes: a few hundred bytes; a larger one is not a sweep file
FORWARD = "forward"  # the phase value of a plain forward pass (dfx analyze without --phase)
PHASES = (FORWARD, "prefill", "decode", "generate")
EXECUTION_MODELS = ("default", "compiled", "eager", "scratchpad")  # default: analyze's own default
AXES = ("models", "hardware", "batch", "seq", "dtype", "phase", "execution_model", "parallel")
AUTO = "auto"  # the parallel value of dfx analyze without --chips/--parallel: the fewest chips that hold the model
_SCALARS = ("output_len", "method", "max_points", "rate", "serve")
# a serving sweep (rate: [..]; dfx.sweep.serving): the options of dfx serve it may set under serve:
SERVE_OPTIONS = (
    "input_len",
    "output_len",
    "requests",
    "seed",
    "scheduler",
    "prefill",
    "max_batch_tokens",
    "max_seqs",
    "kv_block",
    "mem_fraction",
    "runtime",
    "slo",
    "routing",
    "capacity_factor",
)
CAPTURE_METHODS = ("auto", "export", "fx", "dynamo")  # dfx.capture.CAPTURE_METHODS, without importing torch


@dataclass(frozen=True, order=True)
class Point:
    """One sweep point: one model at one size, dtype and phase, on one profile.

    ``seq`` is the model's length axis: the sequence length of a forward pass (``--seq``), the
    prompt length of a prefill or generate (``--prompt-len``), the KV length of a decode step
    (``--kv-len``).
    """

    model: str
    hardware: str  # the profile's id
    batch: int
    seq: int
    dtype: str  # torch's name: float32, bfloat16, float16
    phase: str = FORWARD
    execution_model: str = "default"
    parallel: str = AUTO  # "auto", "chips=N" (dfx analyze --chips N) or "tp=T,pp=P,ep=E" (--parallel)

    @property
    def point_id(self) -> str:
        """The key of the point's row in the results table (``parallel`` appended unless ``auto``)."""
        parts = [self.model, self.hardware, self.batch, self.seq, self.dtype, self.phase, self.execution_model]
        return "|".join(str(v) for v in parts + ([] if self.parallel == AUTO else [self.parallel]))

    @property
    def split(self) -> dict[str, Any]:
        """The ``chips=``/``parallel=`` keywords of the point's ``dfx.analyze`` call."""
        return split_of(self.parallel)

    @property
    def group_key(self) -> tuple[Any, ...]:
        """Points with one group key share one captured graph."""
        return (self.model, self.batch, self.seq, self.dtype, self.phase)


@dataclass(frozen=True)
class Group:
    """Points sharing one graph: captured once, evaluated per (profile, execution model)."""

    model: str
    batch: int
    seq: int
    dtype: str
    phase: str
    points: tuple[Point, ...]
    profile_refs: Mapping[str, str]  # profile id -> how to load it (id, or a user's file path)
    output_len: int
    method: str

    def to_task(self) -> dict[str, Any]:
        """A picklable description a worker process (or a Ray task) runs (:func:`dfx.sweep.evaluate.run_group`)."""
        return {
            "model": self.model,
            "batch": self.batch,
            "seq": self.seq,
            "dtype": self.dtype,
            "phase": self.phase,
            "output_len": self.output_len,
            "method": self.method,
            "points": [(p.hardware, p.execution_model, p.parallel) for p in self.points],
            "profile_refs": dict(self.profile_refs),
        }


@dataclass(frozen=True)
class SweepSpec:
    """The axes of a sweep (each a tuple of values) and its scalar settings.

    Attributes
    ----------
    models : tuple of str
        Model specs, as ``dfx analyze`` takes them (built-ins, ``hf:`` configs).
    hardware : tuple of str
        Profile ids, aliases or files; stored as given, resolved by :meth:`profile_refs`. Default
        (in a file or flags): ``dfx analyze``'s, ``nvidia-h100-sxm`` and ``ibm-spyre``.
    batch, seq : tuple of int
    dtype : tuple of str
        Activation formats by their canonical names (``bfloat16``, ``float32``, ``float16``, and the
        re-priced ``float8_e4m3fn``/``int8`` of ``dfx analyze --dtype fp8/int8``); short names such as
        ``bf16`` are accepted on input. Default ``bfloat16``, as ``dfx analyze``.
    phase : tuple of str
        ``forward``, ``prefill``, ``decode``, ``generate``.
    execution_model : tuple of str
        ``default`` (analyze's default), ``compiled``, ``eager``, ``scratchpad``.
    parallel : tuple of str
        Chips and their split (``docs/parallel.md``): ``auto`` (the fewest chips that hold the
        model, as ``dfx analyze``), ``chips=N`` (``--chips N``; an integer N on input) or
        ``tp=T,pp=P,ep=E`` (``--parallel``).
    output_len : int
        Output tokens of a ``generate`` point.
    method : str
        Capture method.
    max_points : int
        A sweep with more points is refused before any work.
    """

    models: tuple[str, ...]
    hardware: tuple[str, ...]
    batch: tuple[int, ...] = (1,)
    seq: tuple[int, ...] = (128,)
    dtype: tuple[str, ...] = ("bfloat16",)  # dfx analyze's default: machines are compared at bf16
    phase: tuple[str, ...] = (FORWARD,)
    execution_model: tuple[str, ...] = ("default",)
    parallel: tuple[str, ...] = (AUTO,)
    output_len: int = 128
    method: str = "auto"
    max_points: int = DEFAULT_MAX_POINTS
    rate: tuple[float, ...] = ()  # request rates (requests/s): a serving sweep (dfx.sweep.serving)
    serve: Mapping[str, Any] = field(default_factory=dict, hash=False)  # its dfx serve options (SERVE_OPTIONS)
    _ids: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _digests: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_points(self) -> int:
        """The number of points: the product of the axis lengths (hardware counted once per profile)."""
        n = 1
        for axis in AXES:
            n *= len(getattr(self, axis))
        return n

    def check(self) -> SweepSpec:
        """This spec, validated; every value checked before any capture.

        Raises
        ------
        DfxError
            An empty axis, a value of the wrong kind, a seq above 2**24 or a largest batch x seq
            above 2**26 tokens (:func:`dfx.limits.check_tokens`), an unknown
            dtype/phase/execution model or capture method, an unknown hardware profile, or more than
            ``max_points`` points (one line, with the count).
        """
        for axis in AXES:
            values = getattr(self, axis)
            if not values:
                raise DfxError(f"sweep axis {axis!r} is empty; give it at least one value")
            if len(set(values)) != len(values):
                raise DfxError(f"sweep axis {axis!r} repeats a value: {list(values)}; list each value once")
        from dfx.limits import check_tokens

        for axis in ("batch", "seq"):
            for v in getattr(self, axis):
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise DfxError(f"sweep {axis} values must be positive integers, got {v!r}")
        # each such point would only be refused by dfx.analyze, one by one; the largest point is
        # the largest batch with the largest seq
        check_tokens(max(self.batch), max(self.seq), batch_name="sweep batch", seq_name="sweep seq")
        if self.method not in CAPTURE_METHODS:  # every point would be refused by capture, one by one
            raise DfxError(f"unknown sweep method {self.method!r}; expected one of {', '.join(CAPTURE_METHODS)}")
        for axis, allowed in (("phase", PHASES), ("execution_model", EXECUTION_MODELS)):
            bad = [v for v in getattr(self, axis) if v not in allowed]
            if bad:
                raise DfxError(f"unknown sweep {axis} {bad[0]!r}; expected one of {', '.join(allowed)}")
        for v in self.parallel:
            split_of(v)  # a bad plan fails here, before any capture
        if isinstance(self.output_len, bool) or not isinstance(self.output_len, int) or self.output_len <= 1:
            raise DfxError(f"sweep output_len must be an integer of at least 2, got {self.output_len!r}")
        if isinstance(self.max_points, bool) or not isinstance(self.max_points, int) or self.max_points <= 0:
            raise DfxError(f"sweep max_points must be a positive integer, got {self.max_points!r}")
        if self.n_points > self.max_points:
            raise DfxError(
                f"sweep has {self.n_points:,} points, more than max_points {self.max_points:,}; "
                "narrow an axis, or raise max_points (--max-points) if you mean it"
            )
        if self.rate or self.serve:
            _check_serving(self)
        self.profile_refs()  # unknown profiles fail here, before any capture
        return self

    def profile_refs(self) -> dict[str, str]:
        """Profile id -> the reference a worker loads it by (the id itself for a shipped profile).

        Raises
        ------
        DfxError
            An unknown profile, or two references to one id.
        """
        if self._ids:
            return dict(self._ids)
        from dfx.hardware import load_profile
        from dfx.hardware.quick import is_quick_spec

        out: dict[str, str] = {}
        for ref in self.hardware:
            profile = load_profile(ref)
            pid = profile.id
            self._digests[pid] = profile_digest(profile)
            if pid in out:
                raise DfxError(f"hardware {ref!r} is profile {pid!r} again; list each profile once")
            # a quick profile is its own reference ("peak=200T,bw=2T" without "quick:" was made a path,
            # and every point of it refused); a user's file by its absolute path, for the workers
            out[pid] = pid if _is_shipped(ref) else ref if is_quick_spec(ref) else str(Path(ref).resolve())
        self._ids.update(out)
        return out

    def points(self) -> list[Point]:
        """Every point, in axis order (models outermost, execution model innermost)."""
        ids = list(self.profile_refs())
        return [
            Point(m, h, b, s, d, ph, em, par)
            for m, h, b, s, d, ph, em, par in itertools.product(
                self.models, ids, self.batch, self.seq, self.dtype, self.phase, self.execution_model, self.parallel
            )
        ]

    def groups(self, points: Iterable[Point] | None = None) -> list[Group]:
        """``points`` (default: all) grouped by graph, in first-seen order."""
        refs = self.profile_refs()
        by_key: dict[tuple[Any, ...], list[Point]] = {}
        for p in self.points() if points is None else points:
            by_key.setdefault(p.group_key, []).append(p)
        return [
            Group(
                *key,
                points=tuple(pts),
                profile_refs={p.hardware: refs[p.hardware] for p in pts},
                output_len=self.output_len,
                method=self.method,
            )
            for key, pts in by_key.items()
        ]

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (written to ``sweep.json`` in ``--out``; a resumed sweep must match it).

        ``parallel`` is left out while it is only ``auto``, so sweeps written before the axis existed resume.
        """
        out = {
            "models": list(self.models),
            "hardware": list(self.profile_refs()),
            "batch": list(self.batch),
            "seq": list(self.seq),
            "dtype": list(self.dtype),
            "phase": list(self.phase),
            "execution_model": list(self.execution_model),
            "output_len": self.output_len,
            "method": self.method,
        }
        if self.parallel != (AUTO,):
            out["parallel"] = list(self.parallel)
        if self.rate:
            out["rate"] = list(self.rate)
            out["serve"] = dict(self.serve)
        self.profile_refs()
        # each profile's figures, so that a folder's rows are not resumed after its file was edited
        out["profiles"] = {pid: self._digests[pid] for pid in self._ids}
        return out

    def fingerprint(self) -> str:
        """A short hash of :meth:`to_dict` minus the axes' order (:func:`fingerprint`)."""
        return fingerprint(self.to_dict())


def fingerprint(spec: Mapping[str, Any]) -> str:
    """A short hash of a spec's plain data (:meth:`SweepSpec.to_dict`) minus the axes' order.

    >>> fingerprint({"seq": [8, 16], "method": "auto"}) == fingerprint({"method": "auto", "seq": [16, 8]})
    True
    """
    text = repr(sorted((k, sorted(map(str, v)) if isinstance(v, list) else v) for k, v in spec.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def profile_digest(profile: Any) -> str:
    """A short hash of every figure of a hardware profile (its JSON dump, keys sorted).

    Two loads of one file, or of one shipped profile, give the same digest; an edited figure
    (a bandwidth, an overhead) gives another.
    """
    import json

    text = json.dumps(profile.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _is_shipped(ref: str) -> bool:
    from dfx.hardware.loader import _aliases, _looks_like_path, _shipped_file

    if _looks_like_path(ref):
        return False
    key = ref.strip().lower()
    return _shipped_file(key) is not None or key in _aliases()  # an id by its one file; an alias by the table


def _as_tuple(axis: str, value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return (value,)
    raise DfxError(f"sweep axis {axis!r} must be a value or a list of values, got {type(value).__name__}")


def _dtype(value: Any) -> str:
    from dfx.costs.precision import Precision

    try:
        return Precision.of(str(value)).activation  # fp8, int8: a bf16 capture re-priced, as dfx analyze does
    except DfxError:
        raise DfxError(f"unknown sweep dtype {value!r}; expected bf16, fp16, fp32, fp8 or int8") from None


def parallel_value(value: Any) -> str:
    """A ``parallel`` axis value in its canonical text: ``auto``, ``chips=N`` or ``tp=T,pp=P[,ep=E]``.

    Examples
    --------
    >>> parallel_value(8), parallel_value("pp=2, tp=4"), parallel_value("AUTO")
    ('chips=8', 'tp=4,pp=2', 'auto')

    Raises
    ------
    DfxError
        Not a positive integer, ``chips=N``, ``auto`` or a plan ``dfx analyze --parallel`` takes.
    """
    from dfx.parallel import parse_parallel

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise DfxError(f"sweep parallel value {value!r}: expected auto, a chip count or a plan such as tp=4,pp=2")
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    count = text.removeprefix("chips=")
    if count.lstrip("-").isdigit():
        if int(count) < 1:
            raise DfxError(f"sweep parallel value {value!r}: a chip count must be a whole number >= 1")
        return f"chips={int(count)}"
    plan = parse_parallel(text)
    if plan.dp > 1:
        raise DfxError(
            f"sweep parallel value {value!r}: dp/fsdp (data parallelism) applies to training steps, which dfx sweep "
            "does not run; use dfx analyze --train --parallel"
        )
    parts = [f"tp={plan.tp}", f"pp={plan.pp}"] + ([f"ep={plan.ep}"] if plan.ep > 1 else [])
    return ",".join(parts)


def split_of(value: str) -> dict[str, Any]:
    """The ``dfx.analyze`` keywords (``chips=`` or ``parallel=``) of a canonical ``parallel`` value.

    Examples
    --------
    >>> split_of("auto"), split_of("chips=4"), split_of("tp=4,pp=2")
    ({}, {'chips': 4}, {'parallel': 'tp=4,pp=2'})
    """
    if value == AUTO:
        return {}
    if value.startswith("chips="):
        return {"chips": int(value.removeprefix("chips="))}
    return {"parallel": value}


def from_mapping(data: Mapping[str, Any], origin: str = "the sweep") -> SweepSpec:
    """A spec from a mapping with the keys of :data:`AXES` plus ``output_len``, ``method``, ``max_points``.

    ``model`` is accepted for ``models``. Unknown keys are refused (a typo would silently sweep the
    default).

    Raises
    ------
    DfxError
        An unknown key, a missing ``models`` or ``hardware``, or a bad value (:meth:`SweepSpec.check`).
    """
    if not isinstance(data, Mapping):
        raise DfxError(f"{origin} must be a mapping of axis names to values, got {type(data).__name__}")
    data = dict(data)
    if "model" in data and "models" not in data:
        data["models"] = data.pop("model")
    unknown = [k for k in data if k not in AXES + _SCALARS]
    if unknown:
        raise DfxError(f"unknown key {unknown[0]!r} in {origin}; expected {', '.join(AXES + _SCALARS)}")
    kwargs: dict[str, Any] = {}
    for axis in AXES:
        if axis in data:
            kwargs[axis] = _as_tuple(axis, data[axis])
    if not kwargs.get("models"):
        raise DfxError(f"no models to sweep in {origin}; give at least one (--model, or models: in SWEEP.yaml)")
    if not kwargs.get("hardware"):
        from dfx.analysis import DEFAULT_HARDWARE

        kwargs["hardware"] = DEFAULT_HARDWARE  # as dfx analyze: a GPU and a dataflow accelerator
    if "dtype" in kwargs:
        kwargs["dtype"] = tuple(_dtype(v) for v in kwargs["dtype"])
    if "parallel" in kwargs:
        kwargs["parallel"] = tuple(parallel_value(v) for v in kwargs["parallel"])
    for axis in ("models", "hardware", "phase", "execution_model"):
        if axis in kwargs:
            kwargs[axis] = tuple(str(v) for v in kwargs[axis])
    for key in _SCALARS:
        if key in data:
            kwargs[key] = data[key]
    if "rate" in kwargs:  # one rate or a list of them
        value = kwargs["rate"]
        kwargs["rate"] = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return SweepSpec(**kwargs)


def _check_serving(spec: SweepSpec) -> None:
    """A serving sweep's rates and options (dfx.sweep.serving): positive rates, known options, and
    none of the axes of an analysis point that serving does not read (batch, seq, phase, execution model).

    Raises
    ------
    DfxError
        No rate, a rate that is not a positive number, an unknown option under ``serve``, or an
        analysis axis set.
    """
    import math

    if not spec.rate:
        raise DfxError("a serving sweep needs rate: [requests/s, ...] (e.g. rate: [1, 2, 4]) beside serve:")
    for r in spec.rate:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0:
            raise DfxError(f"sweep rate {r!r}: a request rate must be a positive number of requests/s")
    if len(set(spec.rate)) != len(spec.rate):
        raise DfxError(f"sweep axis 'rate' repeats a value: {list(spec.rate)}; list each value once")
    if not isinstance(spec.serve, Mapping):
        raise DfxError(f"sweep serve: must be a mapping of dfx serve options, got {type(spec.serve).__name__}")
    unknown = [k for k in spec.serve if k not in SERVE_OPTIONS]
    if unknown:
        raise DfxError(f"unknown serve option {unknown[0]!r} in the sweep; expected {', '.join(SERVE_OPTIONS)}")
    for axis, default in (("batch", (1,)), ("seq", (128,)), ("phase", (FORWARD,)), ("execution_model", ("default",))):
        if getattr(spec, axis) != default:
            raise DfxError(
                f"a serving sweep (rate:) does not read the {axis} axis: its batches and lengths come from the "
                "requests (serve: input_len, output_len); drop the axis or sweep it without rate:"
            )


def load_spec(path: str | Path | None, overrides: Mapping[str, Any] | None = None) -> SweepSpec:
    """Read a sweep YAML file (or nothing) and apply ``overrides`` (flags: axis -> values), then check it.

    Raises
    ------
    DfxError
        A missing, unreadable or not regular file, one over :data:`MAX_SPEC_BYTES`, YAML with an alias,
        a duplicate key or nesting deeper than 64 (:func:`dfx.safe_load.load_yaml`), YAML that is not a
        mapping, or a bad spec.
    """
    import yaml

    from dfx.errors import one_line
    from dfx.safe_load import load_yaml

    data: dict[str, Any] = {}
    origin = "the flags"
    if path is not None:
        p = Path(path)
        origin = str(p)
        if not p.exists():
            raise DfxError(f"sweep file {str(p)!r} does not exist")
        if not p.is_file():  # a folder, /dev/zero, a FIFO: nothing to read, or no end to it
            raise DfxError(f"sweep file {str(p)!r} is not a regular file; give a SWEEP.yaml")
        if p.stat().st_size > MAX_SPEC_BYTES:
            raise DfxError(
                f"sweep file {str(p)!r} is {p.stat().st_size:,} bytes, beyond dfx's budget of {MAX_SPEC_BYTES:,} "
                "for a sweep's axes; give a SWEEP.yaml of axes (docs/sweeps.md)"
            )
        try:
            # no aliases (a 500-byte alias bomb is gigabytes of model names), duplicate keys, deep nesting
            loaded = load_yaml(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            fix = "save it as UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "fix it (docs/sweeps.md)"
            raise DfxError(f"sweep file {str(p)!r} cannot be read: {one_line(str(exc), 300)}; {fix}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise DfxError(f"sweep file {str(p)!r} must be a YAML mapping of axis names to values")
        data.update(loaded)
    for key, value in (overrides or {}).items():
        if value is not None and value != () and value != []:
            data[key] = value
    return from_mapping(data, origin).check()
