"""``dfx calibrate``: measure this machine with torch and write it as a hardware profile.

What is measured (each the median of repeated eager calls, see :mod:`dfx.measure.microbench`):

- ``peak_flop_per_s.<dtype>``: a square ``torch.mm``, grown until one call is long enough;
- ``memory.<level>.bandwidth_bytes_per_s``: ``c = a + b`` with a working set sized to sit in each
  cache level (half the L2 the threads reach, :func:`reachable_bytes`; the L3 by :func:`l3_working_set_bytes`) and in DRAM (4 x the L3, at least 64 MiB);
- ``op_overhead_s``: the median over seven op kinds (add, relu, gelu, softmax, layer norm, linear,
  conv2d) of each one on 1- to 8-element tensors;

and, in the profile's ``calibrated`` section (so that ``dfx analyze --hw my-cpu.yaml`` predicts with
them) and in the JSON document, the tables of the calibrated prediction (:mod:`dfx.measure.machine`):

- ``overhead_by_kind``: each tiny op's own time in a hot loop (add, linear, layer norm, ...);
- ``overhead_mixed``: each tiny op's time when the kinds run in turn, as a graph's nodes do;
- ``overhead_curve``: the per-op overhead against the time since an op of the same kind last ran;
- ``vector_rates``: the FLOP rate of GELU, tanh-GELU, softmax, layer norm and batch norm (CPU);
- ``gemm_table``: GEMM FLOP/s over rows x k x n;
- ``attention_rates``: fused attention's FLOP/s by sequence length, causal and not;
- ``conv_points``: ResNet-shaped convolutions' FLOP/s, as implicit GEMMs;
- ``conv_points_channels_last``: the same in channels-last, as Inductor runs them on a CPU;
- ``layout_copy``: Inductor's NCHW -> channels-last copy kernel, compiled and timed (CPU, a budget
  of at least ``LAYOUT_MIN_S / _SHARE["layout_copy"]``, 40 s: the compile takes about 3.6 s);
- ``compiled_overhead``: a call's time in a tiny compiled graph of linears (a generated kernel, an
  extern ``addmm`` and ``mm``, the graph's first call), compiled with the copy and timed in its share;
- ``resident_bytes``: the largest working set the last-level cache keeps (CPU);
- ``gemm_cold``: a 4096 x 4096 weight's GEMM with the weight in cache and read from DRAM, by rows (CPU);
- ``after_gemm``: an add in a hot loop and right after GEMMs with 1 to 64 MiB weights, at two sizes;
- ``after_gemm_chain``: tiny element-wise calls one after another after a 64 MiB GEMM, by position (CPU);
- ``cold_write``: a ``[64, 4096]`` multiply into one output buffer and cycling through twice the resident bytes of them (CPU);
- ``reference_flop_per_s``: one reference GEMM, which ``dfx validate`` measures again to see how
  far the machine moved since.

Threads are torch's own (``torch.get_num_threads()``), as a model run would use them.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import statistics
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import torch

from dfx.errors import DfxError
from dfx.hardware.schema import HIERARCHY_SLACK, hierarchy_contradictions
from dfx.measure.busy import SHARE_MIN, Verdict, left_share, probe_load, read_cpu_clocks, verdict, watch_load
from dfx.measure.machine import AfterGemmPoint, ColdGemmPoint, ColdWritePoint, GemmRate, gemm_curve
from dfx.measure.microbench import (
    REFERENCE_SHAPE,
    Sample,
    after_gemm_chain_points,
    after_gemm_points,
    cold_write_points,
    attention_rates,
    reference_flop_per_s,
    conv_points,
    gemm_cold_points,
    gemm_bias_points,
    gemm_flop_per_s,
    gemm_table,
    mixed_overheads,
    LAYOUT_MIN_S,
    compile_layout_copy,
    compile_tiny_linears,
    compiled_overheads,
    layout_copy_points,
    op_overhead_s,
    overhead_curves,
    resident_bytes,
    stream_bytes_per_s,
    vector_rates,
)
from dfx.schema.calibration import (
    AfterGemmChainPointRecord,
    AfterGemmPointRecord,
    AttentionPointRecord,
    ColdGemmPointRecord,
    ColdWritePointRecord,
    CalibrationDoc,
    CalibrationTables,
    GemmBiasPointRecord,
    GemmCurvePointRecord,
    GemmPointRecord,
    KindOverheadPointRecord,
    LayoutCopyPointRecord,
    MeasurementRecord,
    OverheadPointRecord,
    VerdictRecord,
)
from dfx.schema.ids import CALIBRATION_SCHEMA

__all__ = ["MAX_BUDGET_S", "CacheLevel", "Calibration", "calibrate", "check_calibrate_args", "host_caches"]

DEFAULT_BUDGET_S = 45.0
# of the budget, per kind of benchmark
_SHARE = {
    "overhead": 0.04,
    "overhead_curve": 0.08,  # 7 calls per kind at every gap down to 3 ms; 0.12 (10 calls) held its 30 ms point no steadier
    "overhead_mixed": 0.01,
    "gemm": 0.06,
    "table": 0.21,
    "cold_write": 0.02,
    "gemm_cold": 0.05,
    "after_gemm": 0.03,
    "after_gemm_chain": 0.01,  # since 2026-12-02, from after_gemm's 0.04: 9 to 60 GEMMs and their chains
    "stream": 0.10,  # 0.08 for an hour: the L3 slope then read 28 to 40 GB/s (38 to 49 before)
    "resident": 0.03,
    "gemm_bias": 0.02,
    "vector": 0.09,
    "attention": 0.07,
    "conv": 0.05,
    "conv_channels_last": 0.03,
    "layout_copy": 0.10,
}
# of a cache's capacity; the L3 is measured at l3_working_set_bytes when the L2 is known
_WORKING_SET_FRACTION = {"L2": 0.5, "L3": 0.25}
_DRAM_MIN_BYTES = 64 * 2**20  # a DRAM working set well past any L3
_DRAM_L3_MULTIPLE = 4
_GPU_HBM_WORKING_SET = 2**30
_COLD_WRITE_MIN_BYTES = 256 * 2**20  # cold_write cycles through twice the resident bytes, at least this
_OUTLIER = 20.0  # a figure 20 x its peers' median (or a tenth, for rates) comes from a stalled benchmark


@dataclass(frozen=True)
class CacheLevel:
    """A cache of this machine: its name, total capacity (all instances) and instance count."""

    name: str
    capacity_bytes: int
    instances: int


@dataclass(frozen=True)
class Calibration:
    """What ``dfx calibrate`` measured; :meth:`to_profile` is a hardware profile mapping in the normal schema."""

    device: str  # "cpu" or "cuda"
    device_name: str
    torch_version: str
    threads: int
    date: str
    peak_flop_per_s: Mapping[str, Sample]
    bandwidth: Mapping[str, Sample]  # level name -> sample, closest to compute first
    capacities: Mapping[str, CacheLevel]
    overhead: Sample
    # the tables of dfx.measure.machine (the profile's `calibrated` section)
    overhead_by_kind: Mapping[str, float] = field(default_factory=dict)  # tiny-op kind -> hot seconds
    overhead_mixed: Mapping[str, float] = field(default_factory=dict)  # tiny-op kind -> seconds, the kinds in turn
    overhead_curve: tuple[tuple[float, float], ...] = ()  # (seconds since the kind last ran, overhead seconds)
    # kind -> its own (gap seconds, overhead seconds): the kinds kept out of the curve's median (mean, cat)
    overhead_curve_by_kind: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    # kind -> its own (gap seconds, overhead seconds): each of the kinds the curve is the median of
    overhead_curve_each: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    vector_rates: Mapping[str, Sample] = field(default_factory=dict)  # family -> FLOP/s (fp32, CPU)
    gemm_table: tuple[GemmRate, ...] = ()  # fp32 GEMM FLOP/s by rows x k x n
    attention: tuple[tuple[bool, int, float], ...] = ()  # (causal, sequence length, FLOP/s) of fused attention
    convs: tuple[GemmRate, ...] = ()  # convolutions as their implicit GEMMs, FLOP/s
    convs_cl: tuple[GemmRate, ...] = ()  # the same, channels-last (Inductor's layout on a CPU)
    layout_copy: tuple[tuple[int, float], ...] = ()  # Inductor's NCHW -> channels-last copy: (bytes moved, seconds)
    # a call's seconds in Inductor's compiled code: generated, addmm, mm, first_addmm (CPU)
    compiled_overhead: Mapping[str, float] = field(default_factory=dict)
    gemm_bias: tuple[tuple[int, int, int, float, float], ...] = ()  # (rows, k, n, mm seconds, addmm seconds)
    resident: Sample | None = None  # bytes the last-level cache keeps (CPU)
    reference_flop_per_s: float | None = None  # the reference GEMM dfx validate measures again
    gemm_cold: tuple[ColdGemmPoint, ...] = ()  # a large weight's GEMM hot and from DRAM, by rows (CPU)
    after_gemm: tuple[AfterGemmPoint, ...] = ()  # an add hot and right after a large GEMM, by bytes (CPU)
    after_gemm_chain: tuple[tuple[int, int, float], ...] = ()  # (position, GEMM bytes, seconds) of tiny calls after it
    cold_write: tuple[ColdWritePoint, ...] = ()  # an output written into one buffer and into cold ones (CPU)
    budget_s: float = DEFAULT_BUDGET_S
    warnings: tuple[str, ...] = field(default=())
    verdict: Verdict | None = None  # load probes before and after, and whether to trust the figures (CPU)
    affinity: tuple[int, ...] = ()  # the CPUs the process may run on (os.sched_getaffinity)
    memory_bytes: int | None = None  # the host's memory (MemTotal): the off-chip level's capacity (CPU)

    def _source(self, how: str) -> str:
        return (
            f"measured [D] by dfx calibrate on {self.date}, torch {self.torch_version}, {self.threads} threads: {how}"
        )

    def to_profile(self, profile_id: str | None = None) -> dict[str, Any]:
        """The profile mapping (SI numbers), accepted by :func:`dfx.hardware.parse_profile`."""
        gpu = self.device == "cuda"
        pid = profile_id or ("cuda-calibrated" if gpu else "host-cpu-calibrated")
        levels, sources = [], {}
        for name, sample in self.bandwidth.items():
            cache = self.capacities.get(name)
            level: dict[str, Any] = {
                "name": name,
                "capacity_bytes": cache.capacity_bytes if cache else (self.memory_bytes or None),
                "bandwidth_bytes_per_s": sample.value,
                "managed": "cache" if cache else "software",
                "on_chip": cache is not None,
            }
            if cache and cache.instances > 1:
                level["instances"] = cache.instances
            levels.append(level)
            sources[f"memory.{name}"] = self._source(
                sample.how
                + (
                    f"; capacity from the OS ({cache.instances} instance(s))"
                    if cache
                    else "; capacity: MemTotal of /proc/meminfo"
                    if self.memory_bytes
                    else ""
                )
            )
        for dtype, sample in self.peak_flop_per_s.items():
            sources[f"peak_flop_per_s.{dtype}"] = self._source(sample.how)
        sources["op_overhead_s"] = self._source(self.overhead.how)
        sources["compute"] = f"the OS and torch on {self.date}: {self.threads} threads (torch.get_num_threads())"
        profile: dict[str, Any] = {
            "id": pid,
            "name": f"{self.device_name} (calibrated {self.date})",
            "vendor": "measured",
            "kind": "gpu" if gpu else "cpu",
            "notes": f"measured by dfx calibrate, budget {self.budget_s:g} s; medians of repeated eager torch calls",
            "peak_flop_per_s": {d: s.value for d, s in self.peak_flop_per_s.items()},
            "memory": levels,
            "compute": {"cores": self.threads, "description": f"{self.device_name}, {self.threads} torch threads"},
            "scheduling": {
                "commitment": "dynamic",
                "description": "eager PyTorch: one op at a time, dispatched at run time",
            },
            "memory_model": "cache",
            "op_overhead_s": self.overhead.value,
            "sources": sources,
        }
        tables = self.tables()
        if any(v not in (None, [], {}) for k, v in tables.items() if k != "gemm_dtype"):
            profile["calibrated"] = tables
            sources["calibrated"] = self._source(
                "the calibrated machine model's tables (docs/validation.md: overhead curve "
                "and per-kind overheads, vector rates, GEMM table, attention and convolution "
                "rates, cache residency, reference GEMM); medians of repeated eager calls"
            )
        return profile

    def table_record(self) -> CalibrationTables:
        """The machine model's tables as their record (the profile's ``calibrated`` section, and the document's)."""
        return CalibrationTables(
            overhead_curve=tuple(OverheadPointRecord(gap_s=g, overhead_s=o) for g, o in self.overhead_curve),
            overhead_by_kind=MappingProxyType(dict(self.overhead_by_kind)),
            overhead_mixed=MappingProxyType(dict(self.overhead_mixed)),
            overhead_curve_by_kind=tuple(
                KindOverheadPointRecord(kind=k, gap_s=g, overhead_s=o)
                for k, curve in self.overhead_curve_by_kind.items()
                for g, o in curve
            ),
            overhead_curve_each=tuple(
                KindOverheadPointRecord(kind=k, gap_s=g, overhead_s=o)
                for k, curve in self.overhead_curve_each.items()
                for g, o in curve
            ),
            vector_rates=MappingProxyType({f: v.value for f, v in self.vector_rates.items()}),
            gemm_dtype="float32",
            gemm_table=tuple(
                GemmPointRecord(rows=p.rows, k=p.k, n=p.n, flop_per_s=p.flop_per_s) for p in self.gemm_table
            ),
            attention_rates=tuple(AttentionPointRecord(causal=c, seq=n, flop_per_s=r) for c, n, r in self.attention),
            conv_points=tuple(GemmPointRecord(rows=p.rows, k=p.k, n=p.n, flop_per_s=p.flop_per_s) for p in self.convs),
            resident_bytes=int(self.resident.value) if self.resident and self.resident.value else None,
            reference_flop_per_s=self.reference_flop_per_s,
            gemm_cold=tuple(
                ColdGemmPointRecord(rows=p.rows, k=p.k, n=p.n, hot_s=p.hot_s, cold_s=p.cold_s) for p in self.gemm_cold
            ),
            after_gemm=tuple(
                AfterGemmPointRecord(bytes=p.bytes, streamed_bytes=p.streamed_bytes, hot_s=p.hot_s, after_s=p.after_s)
                for p in self.after_gemm
            ),
            cold_write=tuple(
                ColdWritePointRecord(bytes=p.bytes, hot_s=p.hot_s, cold_s=p.cold_s) for p in self.cold_write
            ),
            conv_points_channels_last=tuple(
                GemmPointRecord(rows=p.rows, k=p.k, n=p.n, flop_per_s=p.flop_per_s) for p in self.convs_cl
            ),
            layout_copy=tuple(LayoutCopyPointRecord(bytes=b, time_s=t) for b, t in self.layout_copy),
            compiled_overhead=MappingProxyType(dict(self.compiled_overhead)),
            gemm_bias=tuple(
                GemmBiasPointRecord(rows=r, k=k, n=n, mm_s=mm, addmm_s=add) for r, k, n, mm, add in self.gemm_bias
            ),
            after_gemm_chain=tuple(
                AfterGemmChainPointRecord(position=p, streamed_bytes=b, time_s=t) for p, b, t in self.after_gemm_chain
            ),
        )

    def tables(self) -> dict[str, Any]:
        """The machine model's tables (``HardwareProfile.calibrated``; the same keys in the ``--json`` document)."""
        return self.table_record().to_dict()

    def to_record(self) -> CalibrationDoc:
        """The ``dfx calibrate --json`` document as its record (``dfx.schema.calibration``)."""
        raw = {f"peak_flop_per_s.{d}": s for d, s in self.peak_flop_per_s.items()}
        raw.update({f"memory.{n}.bandwidth_bytes_per_s": s for n, s in self.bandwidth.items()})
        raw["op_overhead_s"] = self.overhead
        raw.update({f"vector_rates.{f}": v for f, v in self.vector_rates.items()})
        if self.resident is not None:
            raw["resident_bytes"] = self.resident
        tables = self.table_record()
        return CalibrationDoc(
            schema=CALIBRATION_SCHEMA,
            device=self.device,
            threads=self.threads,
            torch_version=self.torch_version,
            date=self.date,
            profile=MappingProxyType(self.to_profile()),
            **{f.name: getattr(tables, f.name) for f in fields(CalibrationTables) if f.name != "gemm_table"},
            gemm_table=tuple(
                GemmPointRecord(rows=p.rows, k=p.k, n=p.n, flops=p.flops, flop_per_s=p.flop_per_s)
                for p in self.gemm_table
            ),  # with each GEMM's FLOPs, unlike the profile's table
            # single figures kept beside the tables: the median family, the k = n = 512 column
            vector_flop_per_s=statistics.median(v.value for v in self.vector_rates.values())
            if self.vector_rates
            else None,
            gemm_curve=tuple(GemmCurvePointRecord(flops=f, flop_per_s=r) for f, r in gemm_curve(self.gemm_table)),
            measurements=MappingProxyType(
                {
                    k: MeasurementRecord(value=s.value, median_s=s.median_s, reps=s.reps, how=s.how)
                    for k, s in raw.items()
                }
            ),
            warnings=tuple(self.warnings),
            affinity=tuple(self.affinity),
            verdict=None
            if self.verdict is None
            else VerdictRecord.from_dict(self.verdict.to_dict(), CALIBRATION_SCHEMA, "verdict"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``dfx calibrate --json`` document: the profile and the raw medians behind it."""
        return self.to_record().to_dict()


def _mem_total_bytes() -> int | None:
    """The host's memory, bytes (``MemTotal`` of ``/proc/meminfo``); ``None`` where the OS does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _affinity() -> tuple[int, ...]:
    """The CPUs this process may run on (``os.sched_getaffinity``; empty where the OS does not say)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return ()


def host_caches(root: str | Path = "/sys/devices/system/cpu") -> dict[str, CacheLevel]:
    """The L2 and L3 caches Linux reports (total capacity over distinct instances); empty elsewhere."""
    found: dict[str, set[tuple[str, int]]] = {}
    for index in sorted(Path(root).glob("cpu[0-9]*/cache/index[0-9]*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
            shared = (index / "shared_cpu_list").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction" or level not in ("2", "3"):
            continue
        found.setdefault(f"L{level}", set()).add((shared, _parse_size(size)))
    return {name: CacheLevel(name, sum(s for _, s in inst), len(inst)) for name, inst in sorted(found.items())}


def _parse_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "host CPU"


def _plan(device: str) -> tuple[dict[str, CacheLevel], dict[str, int], str, Callable[[], None] | None]:
    """Cache levels, the working set to stream per level, the device's name, and its sync."""
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        caches = {"L2": CacheLevel("L2", l2, 1)} if l2 else {}
        sets = {"L2": l2 // 2} if l2 else {}
        sets["HBM"] = _GPU_HBM_WORKING_SET
        return caches, sets, props.name, torch.cuda.synchronize
    caches = host_caches()
    threads = torch.get_num_threads()
    sets = {n: int(reachable_bytes(c, threads) * _WORKING_SET_FRACTION[n]) for n, c in caches.items()}
    if "L2" in caches and "L3" in caches:
        sets["L3"] = l3_working_set_bytes(reachable_bytes(caches["L2"], threads), caches["L3"].capacity_bytes)
    l3 = caches.get("L3").capacity_bytes if "L3" in caches else 0
    sets["DRAM"] = max(_DRAM_MIN_BYTES, _DRAM_L3_MULTIPLE * l3)
    return caches, sets, _cpu_name(), None


def reachable_bytes(cache: CacheLevel, threads: int) -> int:
    """The part of ``cache`` that ``threads`` threads reach: one instance per thread, at most all of them.

    A private cache (an L2 per core) gives each thread its own instance, so ``threads`` threads on a
    machine with more cores reach only ``threads`` of them; a shared one (one L3 instance) is reached
    whole by any thread. Each cache level is then measured on the same threads at a working set its
    own topology sets (:func:`_plan`).

    >>> reachable_bytes(CacheLevel("L2", 64 * 2**20, 64), threads=2) // 2**20  # 2 of 64 private 1 MiB L2s
    2
    >>> reachable_bytes(CacheLevel("L3", 32 * 2**20, 1), threads=2) // 2**20  # one shared L3: all of it
    32
    """
    per_instance = cache.capacity_bytes // max(cache.instances, 1)
    return per_instance * min(max(threads, 1), max(cache.instances, 1))


MAX_BUDGET_S = 3600.0  # an hour: far more than any table needs; a typo like 1e9 is refused, not run


def l3_working_set_bytes(l2_bytes: int, l3_bytes: int) -> int:
    """The working set that measures the L3: the geometric mean of the L2's and the L3's capacities.

    ``l2_bytes`` is the L2 of all cores (:func:`host_caches`), ``l3_bytes`` the L3's; at most a quarter of
    the L3. A quarter of the L3 (the rule this replaces, and still the L2's: half of it) sits at the far
    end of what a process keeps of a large shared L3: on this project's 2-vCPU guest (L2 2 x 2 MiB, L3
    480 MiB shared with the host's other tenants, of which calibrate finds 120 to 180 MiB resident) its
    120 MiB streamed partly from DRAM, and the L3 slope read 28 to 44 GB/s from one calibration to the
    next while a ResNet block's 3 MB tensors streamed at 45 to 50 GB/s; with the geometric mean
    (44 MiB, its slope's quarter 11 MiB, both far above the L2) it read 56 GB/s, and the block's last
    three nodes went from 1.3 to 1.7 of their measured time to 0.9 to 1.0 (``docs/validation.md``,
    21:15). On a desktop with 1 MiB of L2 and 32 MiB of L3 it is 5.7 MiB, against 8 before.

    >>> l3_working_set_bytes(4 * 2**20, 480 * 2**20) // 2**20  # sqrt(4 * 480) = 43.8 MiB
    43
    >>> l3_working_set_bytes(2**20, 8 * 2**20) // 2**20  # sqrt(8) = 2.8 MiB over a quarter (2 MiB): a quarter
    2
    """
    return min(int(math.sqrt(l2_bytes * l3_bytes)), l3_bytes // 4)


def check_calibrate_args(device: str, budget_s: float) -> None:
    """Refuse an unknown or absent device and a budget that is not in (0, MAX_BUDGET_S] seconds (``DfxError``)."""
    if device not in ("cpu", "cuda"):
        raise DfxError(f"unknown --device {device!r}; expected cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise DfxError("--device cuda asked for, but torch sees no CUDA GPU on this machine")
    if not (0 < budget_s <= MAX_BUDGET_S):  # also false for NaN
        raise DfxError(f"--budget-s must be a number of seconds above 0 and at most {MAX_BUDGET_S:.0f}, got {budget_s}")


_REMEASURES = 2  # tries after the first, for the levels that contradict the hierarchy


def _busy_contradiction(bandwidth: Mapping[str, Sample], evidence: Sequence[str]) -> str:
    """The first contradiction of ``bandwidth`` and the first piece of ``evidence``, as one reason."""
    near, far = hierarchy_contradictions({k: v.value for k, v in bandwidth.items()})[0]
    return (
        f"{near} measured {bandwidth[near].value / 1e9:.3g} GB/s, below {far}'s {bandwidth[far].value / 1e9:.3g} "
        f"GB/s, after {_REMEASURES + 1} tries, and the machine was busy: {evidence[0]}"
    )


def settle_hierarchy(
    bandwidth: Mapping[str, Sample], evidence: Sequence[str] = ()
) -> tuple[dict[str, Sample], tuple[str, ...]]:
    """Bandwidths that still contradict the hierarchy after measuring again: refused on evidence of other
    load, kept as two levels that measure alike otherwise.

    A nearer level measured slower than a farther one is either a stalled benchmark or two levels the
    machine does not tell apart at these working sets (on this project's 2-vCPU guest a quiet machine
    read its L2 at 128 to 218 GB/s and its L3 at 195 to 202 from one run to the next). Which one is
    decided from ``evidence`` of other load (:func:`dfx.measure.busy.other_load`: other processes'
    CPU time, steal time, spin probes), not from the figures: with evidence, the calibration is
    refused; without, the nearer level is given the farther one's figure (data a nearer level holds
    is read at least as fast as from a farther one: a lower bound, never the stalled figure) and a
    note says so.

    Returns
    -------
    (dict, tuple of str)
        Every level, in ``bandwidth``'s order, and one note per level raised.

    Raises
    ------
    DfxError
        With the contradiction and the first piece of evidence, when there is any.

    Examples
    --------
    >>> s = lambda gb: Sample(gb * 1e9, 1e-3, 5, "made up")
    >>> kept, notes = settle_hierarchy({"L2": s(130), "L3": s(200), "DRAM": s(20)})
    >>> [round(v.value / 1e9) for v in kept.values()], notes[0].split(":")[0]
    ([200, 200, 20], "L2 measured 130 GB/s, below L3's 200 GB/s, with no sign of other load")
    """
    pairs = hierarchy_contradictions({k: v.value for k, v in bandwidth.items()})
    if not pairs:
        return dict(bandwidth), ()
    if evidence:
        raise DfxError(
            f"calibrate refused: {_busy_contradiction(bandwidth, evidence)}; calibrate again when it is quiet"
        )
    kept = dict(bandwidth)
    notes = []
    levels = list(kept)
    for i in range(len(levels) - 2, -1, -1):  # farthest first, so a raise carries up the hierarchy
        level = levels[i]
        below = max(levels[i + 1 :], key=lambda name: kept[name].value)  # the fastest farther level
        if kept[level].value * HIERARCHY_SLACK < kept[below].value:
            got, floor = kept[level], kept[below]
            notes.append(
                f"{level} measured {got.value / 1e9:.3g} GB/s, below {below}'s {floor.value / 1e9:.3g} GB/s, with no "
                f"sign of other load: the two levels measure alike at these working sets; both are kept, {level} at "
                f"{below}'s figure (a nearer level is never slower)"
            )
            kept[level] = replace(
                floor, how=f"{below}'s figure, as {level} measured slower ({got.value / 1e9:.3g} GB/s: {got.how})"
            )
    return kept, tuple(reversed(notes))


def measure_bandwidths(
    working_sets: Mapping[str, int],
    caches: Mapping[str, Any],
    device: str,
    budget_s: float,
    sync=None,
    step: Callable[[str], None] = lambda label: None,
    measure: Callable[..., Sample] | None = None,
    watch: Callable[[], Callable[[], Sequence[str]]] | None = None,
    notes: list[str] | None = None,
    busy: list[str] | None = None,
) -> dict[str, Sample]:
    """Bandwidth per memory level, nearest first, measured again where it contradicts the hierarchy.

    Every cache level is measured the same way (:func:`dfx.measure.microbench.stream_bytes_per_s`'s
    slope, on torch's threads), at a working set sized from the machine's own cache topology
    (:func:`_plan`). A nearer level measured slower than a farther one is measured again, both
    levels of the pair, up to ``_REMEASURES`` times; one left after that is settled by
    :func:`settle_hierarchy` on the evidence of other load ``watch`` gathered over the whole
    measurement (``watch()`` starts it, calling its result stops it: :func:`dfx.measure.busy.watch_load`).
    The notes of levels kept alike are appended to ``notes``. A contradiction that survives every try
    on a busy machine is appended to ``busy`` (calibrate's verdict then refuses the run, unless
    ``--allow-busy``, which keeps the levels settled as on a quiet machine); without a ``busy`` list
    it is raised.

    Raises
    ------
    DfxError
        From :func:`settle_hierarchy`, without ``busy``: a contradiction that survives every try on a busy machine.
    """
    measure = measure or stream_bytes_per_s
    share = budget_s / max(len(working_sets), 1)
    stop = watch() if watch is not None else (lambda: ())

    def one(level: str) -> Sample:
        step(f"bandwidth {level} ({working_sets[level] / 2**20:.1f} MiB)")
        return measure(working_sets[level], device, share, sync, slope=level in caches)

    bandwidth = {level: one(level) for level in working_sets}
    for _ in range(_REMEASURES):
        pairs = hierarchy_contradictions({k: s.value for k, s in bandwidth.items()})
        if not pairs:
            break
        for level in dict.fromkeys(level for pair in pairs for level in pair):
            bandwidth[level] = one(level)
    evidence = tuple(stop())
    if busy is not None and evidence and hierarchy_contradictions({k: s.value for k, s in bandwidth.items()}):
        busy.append(_busy_contradiction(bandwidth, evidence))  # the verdict's reason; --allow-busy keeps:
        evidence = ()  # the figures settled as on a quiet machine, the nearer at the farther's figure
    kept, alike = settle_hierarchy(bandwidth, evidence)
    if notes is not None:
        notes.extend(alike)
    return kept


def _consistency_warnings(
    by_kind: Mapping[str, float], vectors: Mapping[str, Sample], table: tuple[GemmRate, ...], reference: float
) -> list[str]:
    """Figures that disagree with their neighbours: a machine that was busy during one benchmark.

    Each is a median already; one that is 20 times its peers' median (a tiny op), a tenth of it
    (a vector rate), or half or twice the same GEMM measured in the table (the reference) means
    that most of its repetitions were stalled.
    """
    out = []
    if by_kind:
        typical = statistics.median(by_kind.values())
        out += [
            f"a tiny {k} took {v * 1e6:,.0f} us, {v / typical:,.0f} x the median op kind: the machine was busy; calibrate again"
            for k, v in by_kind.items()
            if v > _OUTLIER * typical
        ]
    if vectors:
        typical = statistics.median(s.value for s in vectors.values())
        out += [
            f"{k} ran at {s.value / 1e9:.2g} GFLOP/s, under a tenth of the median vector op: the machine was busy; calibrate again"
            for k, s in vectors.items()
            if s.value < typical / (_OUTLIER / 2)
        ]
    same = [p.flop_per_s for p in table if (p.rows, p.k, p.n) == REFERENCE_SHAPE]
    if same and not 0.5 <= reference / same[0] <= 2.0:
        out.append(
            f"the reference GEMM ran at {reference / 1e9:.3g} GFLOP/s and the same shape in the GEMM table at "
            f"{same[0] / 1e9:.3g}: the machine was busy; calibrate again"
        )
    return out


# A cold GEMM's exposed time over its weight's whole read at the DRAM bandwidth beyond which it is refused:
# at 16 rows, where none of the read hides behind the compute, this machine measured 1.15 to 1.28 of it
# (the library also writes its packed copy of the weight); one calibration measured 2.6 at 64 rows, where
# the others measured 0.2 to 0.6, and the Llama layer was predicted 44 to 52% slow.
_COLD_EXPOSED_LIMIT = 1.5


def _cold_gemm_warnings(points: Sequence[ColdGemmPoint], dram_bytes_per_s: float | None) -> list[str]:
    """The ``gemm_cold`` points whose cold call took longer than its hot call plus ``_COLD_EXPOSED_LIMIT``
    times the weight's whole read at ``dram_bytes_per_s``: a weight from DRAM cannot add more than its
    read, so most of those calls were stalled by something else.

    Examples
    --------
    >>> ok, bad = ColdGemmPoint(64, 1024, 1024, 1e-3, 1.2e-3), ColdGemmPoint(64, 1024, 1024, 1e-3, 2e-3)
    >>> _cold_gemm_warnings([ok], 10e9)  # 4 MiB at 10 GB/s: 0.42 ms; 0.2 ms exposed
    []
    >>> _cold_gemm_warnings([bad], 10e9)[0][:58]  # 1 ms exposed, over 1.5 x 0.42 ms
    'a GEMM [64, 1024] x [1024, 1024] with its weight from DRAM'
    """
    if not dram_bytes_per_s:
        return []
    out = []
    for p in points:
        read_s = p.k * p.n * p.weight_item_bytes / dram_bytes_per_s
        if p.cold_s - p.hot_s > _COLD_EXPOSED_LIMIT * read_s:
            out.append(
                f"a GEMM [{p.rows}, {p.k}] x [{p.k}, {p.n}] with its weight from DRAM took {p.cold_s * 1e3:.3g} ms, "
                f"{(p.cold_s - p.hot_s) * 1e3:.3g} ms over its hot time where reading the weight at the DRAM "
                f"bandwidth takes {read_s * 1e3:.3g} ms: the machine was busy; the point is capped at that read"
            )
    return out


def _capped_cold(points: Sequence[ColdGemmPoint], dram_bytes_per_s: float | None) -> tuple[ColdGemmPoint, ...]:
    """``points`` with each contradicting one (:func:`_cold_gemm_warnings`) capped at its hot time plus
    its weight's whole read at the DRAM bandwidth: the most a weight from DRAM can add."""
    if not dram_bytes_per_s:
        return tuple(points)
    capped = []
    for p in points:
        read_s = p.k * p.n * p.weight_item_bytes / dram_bytes_per_s
        capped.append(replace(p, cold_s=p.hot_s + read_s) if p.cold_s - p.hot_s > _COLD_EXPOSED_LIMIT * read_s else p)
    return tuple(capped)


_COMPILED_OVERHEAD_PART = 0.5  # of what the compiles leave of the compiled share: the tiny graph's calls


def _compiled_families(
    budget_s: float, sync: Callable[[], None] | None, step: Callable[[str], None]
) -> list[tuple[str, str, Callable[[], Any]]]:
    """The ``layout_copy`` family and the ``compiled_overhead`` one, their graphs compiled now; ``budget_s``
    covers the compiles and the timing.

    Inductor's copy kernel is compiled first (its import and the compile, about 3.6 s), then the
    tiny graph of linears (:func:`dfx.measure.microbench.compile_tiny_linears`, about 0.3 s more);
    what the compiles leave of ``budget_s`` is split between timing the copy and timing the tiny
    graph's calls (:func:`dfx.measure.microbench.compiled_overheads`), at least 0.25 s and 0.1 s.
    The compiles run before the families, outside the busy watch: Inductor's import and lowering
    use CPU in processes of their own, which the watch would count as another tenant's (it
    measured the family again on a quiet machine when the compile was inside it).
    """
    step("compiling Inductor's channels-last copy")
    start = time.perf_counter()
    copy = compile_layout_copy()
    step("compiling a tiny graph of linears")
    tiny = compile_tiny_linears()
    left = max(0.0, budget_s - (time.perf_counter() - start))
    copy_s = max(0.25, left * (1 - _COMPILED_OVERHEAD_PART))
    calls_s = max(0.1, left * _COMPILED_OVERHEAD_PART)
    return [
        (
            "Inductor's channels-last copy (compiled)",
            "layout_copy",
            lambda: layout_copy_points("cpu", copy_s, sync, compile_fn=lambda fn, example: copy),
        ),
        ("Inductor's calls (compiled)", "compiled_overhead", lambda: compiled_overheads(calls_s, tiny)),
    ]


def calibrate(
    device: str = "cpu",
    dtypes: tuple[str, ...] = ("float32",),
    budget_s: float = DEFAULT_BUDGET_S,
    on_step: Callable[[str], None] | None = None,
) -> Calibration:
    """Measure peak FLOP/s per dtype, bandwidth per memory level and per-op overhead on ``device``.

    Parameters
    ----------
    device : {"cpu", "cuda"}
    dtypes : tuple of str
        torch dtype names to measure a GEMM peak for (``float32``, ``bfloat16``, ``float16``).
    budget_s : float
        Roughly how long to spend, in seconds; each benchmark gets a share.
    on_step : callable, optional
        Called with a short label before each benchmark (the CLI's progress bar).

    Raises
    ------
    DfxError
        If the device is unknown or absent, or the budget is not a positive number of seconds up
        to an hour (:func:`check_calibrate_args`).
    """
    check_calibrate_args(device, budget_s)
    from dfx.measure.timing import settle_allocator

    settle_allocator()  # as dfx validate does: the heap of a long-running process, whatever ran before
    threads = torch.get_num_threads()
    torch.set_num_threads(threads)  # pinned for the whole run, and stated in every figure's source
    step = on_step or (lambda label: None)
    before = probe_load(threads) if device == "cpu" else None  # before our own work adds to the load
    caches, working_sets, name, sync = _plan(device)
    cpus = os.cpu_count() or 1
    shares: dict[str, float] = {}  # family -> the share of a CPU other processes left our threads (busy.left_share)
    got: dict[str, Any] = {}

    def family(label: str, key: str, measure: Callable[[], Any]) -> None:
        """Run one benchmark family, keep its result under ``key`` and the share of a CPU it was left."""
        step(label)
        start = read_cpu_clocks()
        got[key] = measure()
        share = left_share(start, read_cpu_clocks(), cpus, threads) if device == "cpu" else None
        if share is not None:
            shares[key] = share

    last = list(caches.values())[-1] if caches else None
    skipped: list[str] = []  # families a small budget leaves out, said in the warnings
    alike: list[str] = []  # memory levels kept at a farther level's figure (settle_hierarchy), said in the warnings
    hierarchy_busy: list[str] = []  # a memory level slower than a farther one on a busy machine: a verdict reason

    def watch() -> Callable[[], tuple[str, ...]]:  # evidence of other load over the bandwidths (busy.watch_load)
        if device != "cpu":
            return lambda: ()
        return watch_load("the bandwidths", cpus, threads, probe=probe_load, clocks=read_cpu_clocks)

    families: list[tuple[str, str, Callable[[], Any]]] = [
        ("per-op overhead", "overhead", lambda: op_overhead_s(device, budget_s * _SHARE["overhead"], sync)),
        (
            "per-op overhead, kinds in turn",
            "overhead_mixed",
            lambda: mixed_overheads(device, budget_s * _SHARE["overhead_mixed"], sync),
        ),
        (
            "overhead after other work",
            "overhead_curve",
            lambda: overhead_curves(device, budget_s * _SHARE["overhead_curve"], sync),
        ),
        (
            f"GEMM {', '.join(dtypes)}",
            "gemm",
            lambda: {
                d: gemm_flop_per_s(getattr(torch, d), device, budget_s * _SHARE["gemm"] / len(dtypes), sync)
                for d in dtypes
            },
        ),
        (
            "bandwidth",
            "stream",
            lambda: measure_bandwidths(
                working_sets,
                caches,
                device,
                budget_s * _SHARE["stream"],
                sync,
                step,
                watch=watch,
                notes=alike,
                busy=hierarchy_busy,
            ),
        ),
        (
            "GEMM rows x weight sizes",
            "table",
            lambda: gemm_table(
                torch.float32,
                device,
                budget_s * _SHARE["table"],
                sync,
                peak_flop_per_s=got["gemm"]["float32"].value if "float32" in got["gemm"] else None,
            ),
        ),
        ("GEMM with a bias", "gemm_bias", lambda: gemm_bias_points(device, budget_s * _SHARE["gemm_bias"], sync)),
        ("attention", "attention", lambda: attention_rates(device, budget_s * _SHARE["attention"], sync)),
        ("convolutions", "conv", lambda: conv_points(device, budget_s * _SHARE["conv"], sync)),
    ]
    if device == "cpu":  # Inductor's layout for convolutions on a CPU (dfx.measure.cache_model.kernel_timer)
        families.append(
            (
                "convolutions, channels-last",
                "conv_cl",
                lambda: conv_points(device, budget_s * _SHARE["conv_channels_last"], sync, channels_last=True),
            )
        )
        if budget_s * _SHARE["layout_copy"] >= LAYOUT_MIN_S:  # a smaller budget cannot hold Inductor's compile
            families += _compiled_families(budget_s * _SHARE["layout_copy"], sync, step)
        else:
            skipped.append(
                f"--budget-s {budget_s:g} cannot hold Inductor's compiles (at least "
                f"{LAYOUT_MIN_S / _SHARE['layout_copy']:.0f} s): layout_copy and compiled_overhead are not measured, "
                "so validate --compiled and channels-last convolutions are predicted without them"
            )
    if device == "cpu":
        families.append(("vector ops", "vector", lambda: vector_rates(device, budget_s * _SHARE["vector"], sync)))
        if last is not None:
            families += [
                (
                    "cache residency",
                    "resident",
                    lambda: resident_bytes(
                        last.capacity_bytes,
                        list(got["stream"].values())[-1].value,
                        device,
                        budget_s * _SHARE["resident"],
                        sync,
                    ),
                ),
                (
                    "GEMM with its weight from DRAM",
                    "gemm_cold",
                    lambda: tuple(
                        ColdGemmPoint(*p)
                        for p in gemm_cold_points(
                            torch.float32, device, budget_s * _SHARE["gemm_cold"], last.capacity_bytes, sync
                        )
                    ),
                ),
            ]
        families.append(
            (
                "small ops after a large GEMM",
                "after_gemm",
                lambda: tuple(
                    AfterGemmPoint(*p) for p in after_gemm_points(device, budget_s * _SHARE["after_gemm"], sync)
                ),
            )
        )
        families.append(
            (
                "tiny ops one after another after a large GEMM",
                "after_gemm_chain",
                lambda: after_gemm_chain_points(device, budget_s * _SHARE["after_gemm_chain"], sync),
            )
        )
    if device == "cpu":
        families.append(
            (
                "outputs written into cold buffers",
                "cold_write",
                lambda: tuple(
                    ColdWritePoint(*p)
                    for p in cold_write_points(
                        device,
                        budget_s * _SHARE["cold_write"],
                        sync,
                        max(_COLD_WRITE_MIN_BYTES, 2 * int(got["resident"].value if got.get("resident") else 0)),
                    )
                ),
            )
        )
    families.append(
        ("reference GEMM", "reference", lambda: reference_flop_per_s(device, min(0.5, budget_s * 0.02), sync))
    )
    for label, key, measure in families:
        family(label, key, measure)
    # a family other processes left our threads too little of a CPU for is measured again, once (only when busy)
    for label, key, measure in families:
        if shares.get(key, 1.0) < SHARE_MIN:
            family(f"measuring {label} again: other processes were running", key, measure)

    def contradicting() -> list[str]:
        return _consistency_warnings(got["overhead"][1], got.get("vector", {}), got["table"], got["reference"])

    contradictions = contradicting()
    for _ in range(_REMEASURES if contradictions else 0):  # measured again: a stall rarely hits the same figure twice
        for label, key, measure in families:
            if key in ("overhead", "vector", "reference"):
                family(f"measuring {label} again: it contradicts the rest", key, measure)
        contradictions = contradicting()
        if not contradictions:
            break
    dram = list(got["stream"].values())[-1].value if device == "cpu" and got.get("stream") else None
    cold_contradictions = _cold_gemm_warnings(got.get("gemm_cold", ()), dram)
    for _ in range(_REMEASURES if cold_contradictions else 0):
        for label, key, measure in families:
            if key == "gemm_cold":
                family(f"measuring {label} again: it took longer than its weight's read from DRAM", key, measure)
        cold_contradictions = _cold_gemm_warnings(got.get("gemm_cold", ()), dram)
        if not cold_contradictions:
            break
    if cold_contradictions:
        got["gemm_cold"] = _capped_cold(got["gemm_cold"], dram)
    overhead, by_kind = got["overhead"]
    mixed: dict[str, float] = got.get("overhead_mixed", {})
    (curve, curve_by_kind, curve_each), peaks = got["overhead_curve"], got["gemm"]
    bandwidth, table = got["stream"], got["table"]
    attention, convs, reference = got["attention"], got["conv"], got["reference"]
    convs_cl: tuple[GemmRate, ...] = got.get("conv_cl", ())
    layout_copy: tuple[tuple[int, float], ...] = got.get("layout_copy", ())
    compiled_overhead: dict[str, float] = got.get("compiled_overhead", {})
    gemm_bias: tuple[tuple[int, int, int, float, float], ...] = got.get("gemm_bias", ())
    vectors: dict[str, Sample] = got.get("vector", {})
    resident = got.get("resident")
    cold: tuple[ColdGemmPoint, ...] = got.get("gemm_cold", ())
    after: tuple[AfterGemmPoint, ...] = got.get("after_gemm", ())
    chain: tuple[tuple[int, int, float], ...] = got.get("after_gemm_chain", ())
    cold_write: tuple[ColdWritePoint, ...] = got.get("cold_write", ())
    probe_after = probe_load(threads) if device == "cpu" else None
    judged = (
        verdict(before, probe_after, cpus, threads, hierarchy_busy + contradictions, family_shares=shares)
        if device == "cpu"
        else None
    )
    warnings = list(contradictions) + cold_contradictions + alike + skipped
    return Calibration(
        device=device,
        device_name=name,
        torch_version=torch.__version__,
        threads=threads,
        date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        peak_flop_per_s=peaks,
        bandwidth=bandwidth,
        capacities=caches,
        overhead=overhead,
        overhead_by_kind=by_kind,
        overhead_mixed=mixed,
        overhead_curve=curve,
        overhead_curve_by_kind=curve_by_kind,
        overhead_curve_each=curve_each,
        vector_rates=vectors,
        gemm_table=table,
        attention=attention,
        convs=convs,
        convs_cl=convs_cl,
        layout_copy=layout_copy,
        compiled_overhead=compiled_overhead,
        gemm_bias=gemm_bias,
        resident=resident,
        reference_flop_per_s=reference,
        gemm_cold=cold,
        after_gemm=after,
        after_gemm_chain=chain,
        cold_write=cold_write,
        budget_s=budget_s,
        warnings=tuple(warnings),
        verdict=judged,
        affinity=_affinity(),
        memory_bytes=_mem_total_bytes() if device == "cpu" else None,
    )
