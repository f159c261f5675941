"""Hand-made DAGs: a graph given as a table, for the questions a course asks about small graphs.

A table has one row per node: ``node``, ``inputs`` (the producers it waits for), and either a
``time_s`` or ``flops`` and ``bytes`` (timed on a profile, a shipped one or a quick one such as
``peak=200T,bw=2T,onchip=32M``); optionally ``output_bytes``, the size of the node's output tensor
(for the live bytes against the on-chip capacity). :func:`solve_dag` answers, on that table:

- **firing steps**: under the firing rule with unlimited processing elements, every node whose
  input tokens have all arrived fires in the same step (``networkx.topological_generations``);
- **critical path**: the longest path weighted by node time (:func:`dfx.schedule.critical_path`),
  the infinite-resource lower bound on the makespan;
- **a list schedule on N processors**: whenever a processor is free, the highest-priority ready
  node starts on the lowest-numbered free one (:func:`dfx.sim.run_dynamic`, Graham's list
  scheduling). The priority is the upward rank (HEFT, the default), the table's order, or a list
  of names;
- **live bytes**: the peak of the outputs alive during that schedule against the on-chip capacity
  (:func:`dfx.sim.live_bytes`).

Node time from FLOPs and bytes is the roofline (``docs/roofline.md``)::

    time = max(flops / peak, bytes_on_chip / onchip_bw, bytes_off_chip / bw) + op_overhead

On a cache device (and on a scratchpad device with no usable on-chip level) every byte crosses the
off-chip level. On a scratchpad device a node's bytes stay on chip up to the on-chip capacity and
the rest spill off chip (the rule of :mod:`dfx.roofline.execution`, with the node's traffic as its
working set). A node with no work (0 FLOPs, 0 bytes and no time) takes 0 s and pays no overhead.

Examples
--------
A fork-join on two processors: ``s`` feeds ``a`` (2 s) and ``b`` (3 s), both feed ``j``.

>>> r = solve_dag([{"node": "s", "time_s": 1}, {"node": "a", "inputs": "s", "time_s": 2},
...                {"node": "b", "inputs": "s", "time_s": 3}, {"node": "j", "inputs": "a b", "time_s": 1}], pes=2)
>>> r.firing_steps, r.critical_path.nodes, r.critical_path.time_s, r.makespan_s
((('s',), ('a', 'b'), ('j',)), ('s', 'b', 'j'), 5.0, 5.0)
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

import networkx as nx

from dfx.errors import DfxError
from dfx.schema.dag import DagDoc, DagMemoryRecord, DagNodeRecord, DagPathRecord, DagRunRecord, DagStepRecord
from dfx.schema.ids import DAG_SCHEMA
from dfx.sim.dag import from_networkx
from dfx.sim.engine import Schedule, run_dynamic
from dfx.sim.priority import lower_bounds, priority_order, upward_rank
from dfx.sim.views import Step, firing_steps, live_bytes

__all__ = ["SCHEMA", "DagResult", "HandNode", "read_dag", "solve_dag", "parse_priority"]

SCHEMA = DAG_SCHEMA

_NAME_KEYS = ("node", "name")
_KNOWN = {"node", "name", "inputs", "flops", "bytes", "time_s", "time", "output_bytes"}
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_COUNT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([kKMGTP]?)\s*(?:FLOPs?|FLOP)?\s*$")


class DagFileError(DfxError):
    """A hand-made DAG table that cannot be read: the message names the file, the row and the field."""


@dataclass(frozen=True)
class HandNode:
    """One row of a hand-made DAG.

    Attributes
    ----------
    name : the node's name.
    inputs : the nodes it waits for (its producers).
    flops, bytes : work (FLOPs) and memory traffic (bytes); ``None`` when the row gives a time.
    time_s : the node's duration in seconds when given directly, else ``None``.
    output_bytes : the size of its output tensor, for live bytes; ``None``: 0.
    """

    name: str
    inputs: tuple[str, ...] = ()
    flops: float | None = None
    bytes: float | None = None
    time_s: float | None = None
    output_bytes: float | None = None


# -- reading -----------------------------------------------------------------------------------
def _count(value: Any, what: str, where: str) -> float:
    """``2e9``, ``"2e9"``, ``"2G"`` or ``"2 GFLOP"`` -> 2e9 (FLOPs, or bytes with ``B``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        text = str(value).strip()
        if what == "bytes":
            from dfx.hardware.units import parse_quantity

            try:
                number = parse_quantity(text if text[-1:].isdigit() or text.endswith("B") else text + "B", "bytes")
            except (ValueError, IndexError):
                raise DagFileError(
                    f"{where}: {what}={value!r} is not a number of bytes (e.g. 4096, 4 KiB, 2MB)"
                ) from None
        else:
            match = _COUNT.match(text)
            if match is None:
                raise DagFileError(f"{where}: {what}={value!r} is not a number (e.g. 2e9, 2G, 2 GFLOP)")
            number = float(match.group(1)) * _PREFIX[match.group(2)]
    if not (math.isfinite(number) and number >= 0):
        raise DagFileError(f"{where}: {what}={value!r} must be a finite number >= 0")
    return number


def _seconds(value: Any, where: str) -> float:
    """``1.5``, ``"1.5"``, ``"1.5 s"`` or ``"2 us"`` -> seconds."""
    from dfx.hardware.units import parse_quantity

    try:
        seconds = parse_quantity(value, "s")
    except ValueError:
        raise DagFileError(f"{where}: time={value!r} is not a duration (e.g. 1.5, 1.5 s, 2 us)") from None
    if seconds < 0:
        raise DagFileError(f"{where}: time={value!r} must be >= 0")
    return seconds


def _inputs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return tuple(part for part in re.split(r"[\s;|,]+", str(value)) if part)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _node(row: Mapping[str, Any], where: str) -> HandNode:
    row = {str(k).strip().lower(): v for k, v in row.items() if k is not None}
    unknown = sorted(set(row) - _KNOWN)
    if unknown:
        raise DagFileError(
            f"{where}: unknown column {unknown[0]!r}; columns are node, inputs, flops, bytes, time_s, output_bytes"
        )
    name = next((str(row[k]).strip() for k in _NAME_KEYS if not _blank(row.get(k))), "")
    if not name:
        raise DagFileError(f"{where}: no node name; every row needs a 'node'")
    where = f"{where} (node {name!r})"
    time_value = row.get("time_s", row.get("time"))
    flops = None if _blank(row.get("flops")) else _count(row["flops"], "flops", where)
    nbytes = None if _blank(row.get("bytes")) else _count(row["bytes"], "bytes", where)
    time_s = None if _blank(time_value) else _seconds(time_value, where)
    if time_s is None and flops is None and nbytes is None:
        raise DagFileError(f"{where}: give a time_s, or flops and bytes (timed on --hw)")
    out = None if _blank(row.get("output_bytes")) else _count(row["output_bytes"], "bytes", where)
    return HandNode(name, _inputs(row.get("inputs")), flops, nbytes, time_s, out)


def _rows_from_text(text: str, origin: str, suffix: str) -> list[Mapping[str, Any]]:
    if suffix == ".csv":
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        return list(csv.DictReader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    import yaml

    from dfx.safe_load import load_json, load_yaml

    try:
        data = load_json(text) if suffix == ".json" else load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise DagFileError(
            f"{origin}: not valid {'JSON' if suffix == '.json' else 'YAML'}: {' '.join(str(exc).split())}"
        ) from None
    if isinstance(data, Mapping) and "nodes" in data:
        data = data["nodes"]
    if isinstance(data, Mapping):  # {name: {inputs: ..., time_s: ...}}
        data = [{"node": k, **(v or {})} for k, v in data.items()]
    if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
        raise DagFileError(f"{origin}: expected a list of nodes (node, inputs, flops, bytes or time_s)")
    return data


def read_dag(source: str | Path | Iterable[Mapping[str, Any]]) -> tuple[HandNode, ...]:
    """Read a hand-made DAG: a ``.csv``, ``.yaml``/``.yml`` or ``.json`` file, or rows as mappings.

    Parameters
    ----------
    source : path or iterable of mappings
        A file, or rows such as ``{"node": "b", "inputs": "a", "flops": 2e9, "bytes": 1e6}``.
        ``inputs`` is a list or a string of names separated by spaces, ``;`` or ``|``.

    Returns
    -------
    tuple of HandNode
        In the order given (the tie-break order).

    Raises
    ------
    DagFileError
        A missing or unreadable file, an unknown column, a row with no name or no time and no
        work, a bad number, a duplicate name, an input that names no node.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix.lower() not in (".csv", ".yaml", ".yml", ".json"):
            raise DagFileError(f"{str(path)!r}: a hand-made DAG is a .csv, .yaml or .json file")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DagFileError(
                f"cannot read {str(path)!r}: {exc.strerror if isinstance(exc, OSError) else exc}"
            ) from None
        origin, rows = repr(str(path)), _rows_from_text(text, repr(str(path)), path.suffix.lower())
    else:
        origin, rows = "the DAG", list(source)
    nodes = tuple(_node(row, f"{origin} row {i + 1}") for i, row in enumerate(rows))
    names = [n.name for n in nodes]
    seen: set[str] = set()
    for n in nodes:
        if n.name in seen:
            raise DagFileError(f"{origin}: node {n.name!r} is given twice")
        seen.add(n.name)
    for n in nodes:
        for src in n.inputs:
            if src not in seen:
                raise DagFileError(
                    f"{origin}: node {n.name!r} has input {src!r}, which is not a node (nodes: {', '.join(names)})"
                )
    if not nodes:
        raise DagFileError(f"{origin}: the DAG has no nodes")
    return nodes


# -- timing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeTime:
    """A node's time and, when it has FLOPs and bytes, its intensity and bounds."""

    name: str
    time_s: float
    flops: float | None = None
    bytes: float | None = None
    bound: str | None = None  # under the profile's memory model: compute, memory or none
    bound_off_chip: str | None = None
    bound_on_chip: str | None = None
    given: bool = True  # the time came from the table, not from the roofline

    @property
    def intensity_flop_per_byte(self) -> float | None:
        if self.flops is None or not self.bytes:
            return None
        return self.flops / self.bytes


def _time(node: HandNode, profile: Any) -> NodeTime:
    from dfx.roofline.bound import classify

    if node.time_s is not None:
        return NodeTime(node.name, node.time_s, node.flops, node.bytes)
    if profile is None:
        raise DagFileError(
            f"node {node.name!r} gives flops and bytes but no time_s; time it on a profile with --hw (e.g. --hw peak=200T,bw=2T)"
        )
    flops, nbytes = node.flops or 0.0, node.bytes or 0.0
    if flops == 0 and nbytes == 0:
        return NodeTime(node.name, 0.0, flops, nbytes, "none", "none", None, given=False)
    peak = profile.peak("float32").flop_per_s  # a quick profile has one peak for every dtype
    off, on = profile.off_chip_level(), profile.on_chip_level()
    on_bytes, off_bytes = 0.0, nbytes
    if profile.memory_model.value == "scratchpad" and on is not None:
        off_bytes = max(0.0, nbytes - on.capacity_bytes) if off is not None else 0.0
        on_bytes = nbytes - off_bytes
    memory_s = 0.0
    per_level = []
    for level, b in ((on, on_bytes), (off, off_bytes)):
        if level is not None and b > 0:
            memory_s = max(memory_s, b / level.bandwidth_bytes_per_s)
            per_level.append(classify(flops, b, peak, level.bandwidth_bytes_per_s).value)
    bound = "memory" if "memory" in per_level else "compute"
    time_s = max(flops / peak, memory_s) + profile.op_overhead_s

    def against(level: Any) -> str | None:
        return None if level is None else classify(flops, nbytes, peak, level.bandwidth_bytes_per_s).value

    return NodeTime(node.name, time_s, flops, nbytes, bound, against(off), against(on), given=False)


# -- priority ----------------------------------------------------------------------------------
def parse_priority(priority: str | Sequence[str] | None, names: Sequence[str]) -> tuple[str, str | None]:
    """``None``/``"rank"``, ``"file"`` or a list of names -> ``(kind, None)`` or ``("list", names)``."""
    if priority is None or (isinstance(priority, str) and priority.strip().lower() in ("", "rank")):
        return ("rank", None)
    if isinstance(priority, str) and priority.strip().lower() in ("file", "order"):
        return ("file", None)
    listed = _inputs(priority)
    unknown = [p for p in listed if p not in names]
    if unknown:
        raise DagFileError(
            f"--priority names {unknown[0]!r}, which is not a node; give rank, file or node names such as {','.join(names[:3])}"
        )
    if len(set(listed)) != len(listed):
        raise DagFileError("--priority names a node twice")
    return ("list", listed)


def _order(dag: Any, rank: Sequence[float], priority: Any, given: Sequence[str]) -> list[int]:
    """Node indices (of ``dag``) from highest to lowest priority."""
    kind, listed = parse_priority(priority, list(given))
    by_rank = priority_order(dag, rank)
    if kind == "rank":
        return by_rank
    if kind == "file":
        return [dag.index[name] for name in given]
    first = [dag.index[name] for name in listed]
    return first + [v for v in by_rank if v not in set(first)]  # unlisted nodes after, by rank


# -- solving -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CriticalPathDoc:
    time_s: float
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class DagResult:
    """What :func:`solve_dag` found. ``to_dict()`` is the document ``dfx.dag/1`` (``docs/dag.md``)."""

    nodes: tuple[HandNode, ...]
    times: tuple[NodeTime, ...]
    hardware: str | None
    pes: int
    priority: tuple[str, ...]
    firing_steps: tuple[tuple[str, ...], ...]
    critical_path: CriticalPathDoc
    work_s: float
    schedule: Schedule
    names: tuple[str, ...]  # the schedule's node order (topological)
    steps: tuple[Step, ...]
    peak_live_bytes: float
    capacity_bytes: float | None
    ridges_flop_per_byte: Mapping[str, float] = field(default_factory=dict)

    @property
    def makespan_s(self) -> float:
        return self.schedule.makespan_s

    @property
    def lower_bound_s(self) -> float:
        """``max(critical path, work / N)``: no schedule on N processors beats it."""
        return max(self.critical_path.time_s, self.work_s / self.pes)

    def to_record(self) -> DagDoc:
        """The document ``dfx.dag/1`` as its record (``dfx.schema.dag``)."""
        sched = self.schedule
        rows = tuple(
            DagNodeRecord(
                name=node.name,
                inputs=tuple(node.inputs),
                flops=node.flops,
                bytes=node.bytes,
                output_bytes=node.output_bytes,
                time_s=t.time_s,
                time_given=t.given,
                intensity_flop_per_byte=t.intensity_flop_per_byte,
                bound=t.bound,
                bound_off_chip=t.bound_off_chip,
                bound_on_chip=t.bound_on_chip,
            )
            for node, t in zip(self.nodes, self.times)
        )
        fits = None if self.capacity_bytes is None else self.peak_live_bytes <= self.capacity_bytes
        order = sorted(enumerate(self.names), key=lambda x: (sched.start_s[x[0]], sched.pe[x[0]]))
        return DagDoc(
            schema=SCHEMA,
            hardware=self.hardware,
            ridges_flop_per_byte=MappingProxyType(dict(self.ridges_flop_per_byte)),
            pes=self.pes,
            priority=tuple(self.priority),
            nodes=rows,
            firing_steps=tuple(tuple(s) for s in self.firing_steps),
            critical_path=DagPathRecord(time_s=self.critical_path.time_s, nodes=tuple(self.critical_path.nodes)),
            work_s=self.work_s,
            lower_bound_s=self.lower_bound_s,
            makespan_s=self.makespan_s,
            schedule=tuple(
                DagRunRecord(name=n, pe=sched.pe[i], start_s=sched.start_s[i], end_s=sched.end_s[i]) for i, n in order
            ),
            timeline=tuple(
                DagStepRecord(time_s=s.time_s, finished=tuple(s.finished), ready=tuple(s.ready), fired=tuple(s.fired))
                for s in self.steps
            ),
            memory=DagMemoryRecord(peak_bytes=self.peak_live_bytes, capacity_bytes=self.capacity_bytes, fits=fits),
        )

    def to_dict(self) -> dict[str, Any]:
        """The document ``dfx.dag/1`` (``docs/dag.md``)."""
        return self.to_record().to_dict()


def _ridges(profile: Any) -> dict[str, float]:
    if profile is None:
        return {}
    peak = profile.peak("float32").flop_per_s
    out = {}
    for key, level in (("off_chip", profile.off_chip_level()), ("on_chip", profile.on_chip_level())):
        if level is not None:
            out[key] = peak / level.bandwidth_bytes_per_s
    return out


def _capacity(profile: Any, capacity_bytes: float | None) -> float | None:
    if capacity_bytes is not None or profile is None:
        return capacity_bytes
    on = [lv.capacity_bytes for lv in profile.memory if lv.on_chip and lv.capacity_bytes]
    level = profile.on_chip_level()
    return level.capacity_bytes if level is not None else max(on, default=None)


def solve_dag(
    source: str | Path | Iterable[Mapping[str, Any]] | Sequence[HandNode],
    *,
    hw: Any = None,
    pes: int = 2,
    priority: str | Sequence[str] | None = None,
    capacity_bytes: float | None = None,
) -> DagResult:
    """Firing steps, critical path and a list schedule on ``pes`` processors of a hand-made DAG.

    Parameters
    ----------
    source : path, rows or HandNodes
        See :func:`read_dag`.
    hw : str or HardwareProfile, optional
        Times the rows that give ``flops`` and ``bytes`` (a shipped id, a profile file or a quick
        profile such as ``"peak=200T,bw=2T,onchip=32M"``); its on-chip capacity is what the live
        bytes are compared with.
    pes : int
        Identical processors, >= 1.
    priority : ``"rank"`` (default), ``"file"`` or a list of node names
        Which ready node a free processor takes first: the highest upward rank (longest path to
        the exit, its own time included; ties by table order), the table's order, or the order
        listed (unlisted nodes after, by rank).
    capacity_bytes : float, optional
        On-chip capacity to compare the live bytes with; overrides ``hw``'s.

    Returns
    -------
    DagResult

    Raises
    ------
    DfxError
        A bad table (:class:`DagFileError`), a cycle, ``pes`` below 1 or above the simulator's
        budget (:data:`dfx.sim.api.MAX_PES`), an unknown priority name, or
        a row with flops and bytes but no ``hw``.
    """
    if isinstance(pes, bool) or not isinstance(pes, int) or pes < 1:
        raise DfxError(f"--pes must be an integer >= 1, got {pes!r}")
    from dfx.sim.api import MAX_PES  # the simulator's budget: one schedule row per processor

    if pes > MAX_PES:
        raise DfxError(f"--pes {pes:,} is beyond the simulator's budget of {MAX_PES:,}; give fewer")
    nodes = (
        tuple(source)
        if isinstance(source, (list, tuple)) and source and isinstance(source[0], HandNode)
        else read_dag(source)
    )
    profile = None
    if hw is not None:
        from dfx.hardware import load_profile

        profile = hw if hasattr(hw, "on_chip_level") else load_profile(hw)
    times = tuple(_time(n, profile) for n in nodes)
    g = nx.DiGraph()
    for n, t in zip(nodes, times):
        g.add_node(n.name, duration_s=t.time_s, time_s=t.time_s, output_bytes=n.output_bytes or 0.0)
    for n in nodes:
        g.add_edges_from((src, n.name) for src in n.inputs)
    if not nx.is_directed_acyclic_graph(g):
        cycle = " -> ".join(u for u, _ in nx.find_cycle(g))
        raise DagFileError(f"the DAG has a cycle ({cycle}); a dataflow graph cannot wait on itself")
    from dfx.schedule import critical_path

    cp = critical_path(g, "time_s")
    dag = from_networkx(g)
    rank = upward_rank(dag)
    order = _order(dag, rank, priority, [n.name for n in nodes])
    schedule = run_dynamic(dag, pes, order, dag.duration_s)
    capacity = _capacity(profile, capacity_bytes)
    memory = live_bytes(dag, schedule, capacity)
    return DagResult(
        nodes=nodes,
        times=times,
        hardware=None if profile is None else profile.id,
        pes=pes,
        priority=tuple(dag.names[v] for v in order),
        firing_steps=tuple(
            tuple(sorted(gen, key=[n.name for n in nodes].index)) for gen in nx.topological_generations(g)
        ),
        critical_path=CriticalPathDoc(cp.time_s, tuple(str(v) for v in cp.nodes)),
        work_s=lower_bounds(dag, pes, rank).work_s,
        schedule=schedule,
        names=dag.names,
        steps=tuple(firing_steps(dag, schedule)),
        peak_live_bytes=memory.peak_bytes,
        capacity_bytes=capacity,
        ridges_flop_per_byte=_ridges(profile),
    )
