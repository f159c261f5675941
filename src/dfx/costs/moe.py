"""Mixture-of-experts layers in a graph, and the routing distribution that prices them.

Costs, compile and parallel all ask the same questions of an MoE layer: which nodes are its expert
GEMMs, how many experts E, top-k, tokens T. :func:`find_moe_layers` answers them from the graph
alone (torch-free): every grouped GEMM (``aten._grouped_mm`` of ``[S, K] x [E, K, N]``, the form
transformers 5 and dfx's own families emit) is tied to the nearest ``topk`` upstream of it (the
router; DeepSeek-V3's group-limited routing has two, the one nearest the experts picks them), E is
the weight's leading dim, k the ``topk``'s k, and T = S / k.

:class:`Routing` is the request's distribution of the T*k routed slots over the E experts:
``uniform`` (balanced, the default), ``zipf:S`` (expected share of the expert of rank r
proportional to ``1 / r**S``) or per-expert token counts from a file. It gives

- per-expert slot counts (:meth:`Routing.expert_counts`: the shares times T*k, rounded by largest
  remainder so they sum to T*k exactly);
- the expected number of distinct experts a step touches (:meth:`Routing.expected_experts`), whose
  weights it reads: a token picks k distinct experts, so expert e is among a token's picks with
  probability ``q_e = min(1, k * p_e)`` (its expected slots per token; capped at 1, as a token
  picks an expert at most once), tokens pick independently, and
  ``E[distinct] = sum_e 1 - (1 - q_e)**T``. Uniform (``p_e = 1/E``) gives ``E * (1 - (1 - k/E)**T)``:
  k experts for one token, all E for a large batch.

:func:`apply_routing` sets each expert GEMM's weight bytes to that expectation (the cost rule alone
charges ``min(E, S)`` experts, :mod:`dfx.costs.rules_moe`); FLOPs do not change, as every routing
fills exactly T*k slots. :func:`dfx.costs.annotate` applies uniform routing.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dfx.costs.record import EXPERT_READ_SHARE, CallCost, Cost, CostedGraph
from dfx.costs.rules_moe import grouped_gemm, grouped_mm_cost
from dfx.errors import DfxError
from dfx.ir import Graph, Node

__all__ = [
    "GROUPED_OPS",
    "MoeLayer",
    "Routing",
    "RoutingError",
    "UNIFORM",
    "apply_routing",
    "find_moe_layers",
    "parse_routing",
    "reprice_experts",
]

# The op packets of a grouped expert GEMM (rules_moe registers a rule for each).
GROUPED_OPS = ("aten._grouped_mm", "aten._scaled_grouped_mm", "transformers.grouped_mm_fallback")
_ROUTER_OPS = ("aten.topk",)
_SEARCH_LIMIT = 64  # nodes visited upstream of an expert GEMM looking for its router's topk


class RoutingError(DfxError):
    """A ``--routing`` value or file dfx cannot read."""


@dataclass(frozen=True)
class MoeLayer:
    """One MoE layer: its router, its expert GEMM nodes and its sizes.

    Attributes
    ----------
    router : str
        The ``topk`` node choosing the experts.
    experts : tuple of str
        The grouped GEMM nodes of the forward pass (gate/up and down projections), in graph order.
    num_experts, top_k, tokens : int
        E, k and T: T tokens each routed to k of E experts (T*k routed slots).
    weight_bytes_per_expert : int
        One expert's weights over all its GEMMs (bytes at the captured dtype).
    expert_flops : int
        FLOPs of the experts' GEMMs over the T*k routed rows (``2*S*K*N`` summed).
    """

    router: str
    experts: tuple[str, ...]
    module_path: str
    num_experts: int
    top_k: int
    tokens: int
    weight_bytes_per_expert: int
    expert_flops: int

    @property
    def routed_slots(self) -> int:
        """T*k: the (token, expert) pairs the layer computes."""
        return self.tokens * self.top_k

    @property
    def weight_bytes(self) -> int:
        """All E experts' weights."""
        return self.weight_bytes_per_expert * self.num_experts

    def to_dict(self) -> dict[str, Any]:
        return {
            "router": self.router,
            "experts": list(self.experts),
            "module_path": self.module_path,
            "num_experts": self.num_experts,
            "top_k": self.top_k,
            "tokens": self.tokens,
            "weight_bytes_per_expert": self.weight_bytes_per_expert,
            "expert_flops": self.expert_flops,
        }


def _packet(op: str) -> str:
    return ".".join(op.split(".")[:2])


def _grouped_call(node: Node):
    return next((c for c in node.aten_calls if c.packet in GROUPED_OPS), None)


def _router_of(graph: Graph, node: Node) -> Node | None:
    """The nearest ``topk`` node upstream of ``node`` (breadth first), or ``None``."""
    seen, frontier = {node.name}, [e.src for e in node.inputs]
    while frontier and len(seen) < _SEARCH_LIMIT:
        nxt = []
        for name in frontier:
            if name in seen:
                continue
            seen.add(name)
            src = graph.node(name)
            if any(c.packet in _ROUTER_OPS for c in src.aten_calls):
                return src
            nxt.extend(e.src for e in src.inputs)
        frontier = nxt
    return None


def find_moe_layers(graph: Graph) -> tuple[MoeLayer, ...]:
    """The MoE layers of ``graph``: each forward grouped GEMM (``[S, K] x [E, K, N]``) grouped by its router.

    A grouped GEMM with no ``topk`` upstream (a hand-made grouped matmul) is not a layer. Weight
    gradients (2D x 2D) and batched (3D x 3D) forms are not forward expert GEMMs and are skipped.

    Examples
    --------
    >>> from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec
    >>> logits, ids = TensorSpec((4, 8), "float32"), TensorSpec((4, 2), "int64")
    >>> topk = Node("topk", "call_function", "aten.topk.default",
    ...             aten_calls=(AtenCall("aten.topk.default", (logits, 2), (), (logits, ids)),))
    >>> a, w, offs = TensorSpec((8, 16), "bfloat16"), TensorSpec((8, 16, 32), "bfloat16"), TensorSpec((8,), "int32")
    >>> mm = Node("mm", "call_function", "aten._grouped_mm.default", inputs=(Edge("topk", 1),),
    ...           aten_calls=(AtenCall("aten._grouped_mm.default", (a, w, offs), (), (TensorSpec((8, 32), "bfloat16"),)),))
    >>> layer, = find_moe_layers(Graph((topk, mm)))
    >>> (layer.num_experts, layer.top_k, layer.tokens, layer.weight_bytes_per_expert)  # 16 * 32 * 2 B
    (8, 2, 4, 1024)
    """
    layers: dict[str, dict[str, Any]] = {}
    for node in graph.nodes:
        call = _grouped_call(node)
        if call is None:
            continue
        try:
            g = grouped_gemm(call)
        except ValueError:
            continue
        a = call.inputs[0] if call.inputs else None
        if g.weight is None or a is None or a.ndim != 2:  # only [S, K] x [E, K, N]
            continue
        router = _router_of(graph, node)
        if router is None:
            continue
        entry = layers.setdefault(router.name, {"router": router, "nodes": [], "bytes": 0, "flops": 0, "E": g.groups})
        entry["nodes"].append(node)
        entry["bytes"] += g.bytes_per_group
        entry["flops"] += g.flops
        entry["S"] = g.rows
    out = []
    for name, e in layers.items():
        topk = next(c for c in e["router"].aten_calls if c.packet in _ROUTER_OPS)
        k = topk.arg(1, "k")
        k = k if isinstance(k, int) and k > 0 else 1
        out.append(
            MoeLayer(
                name,
                tuple(n.name for n in e["nodes"]),
                e["nodes"][0].module_path,
                e["E"],
                k,
                e["S"] // k,
                e["bytes"],
                e["flops"],
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Routing:
    """How routed slots spread over experts (see the module docstring).

    Attributes
    ----------
    kind : {"uniform", "zipf", "counts"}
    skew : float
        Zipf's exponent S (``kind="zipf"``).
    counts : tuple of float
        Per-expert token counts read from ``source`` (``kind="counts"``); only their ratios are used.
    source : str
        The file the counts came from.
    """

    kind: str = "uniform"
    skew: float = 0.0
    counts: tuple[float, ...] = ()
    source: str = ""

    def __str__(self) -> str:
        return {"uniform": "uniform", "zipf": f"zipf:{self.skew:g}"}.get(self.kind, self.source)

    def shares(self, num_experts: int) -> tuple[float, ...]:
        """Each expert's expected share of the routed slots (sum 1), most loaded first for zipf.

        Raises
        ------
        RoutingError
            If a counts file lists a different number of experts than the layer has.

        Examples
        --------
        >>> Routing().shares(4)
        (0.25, 0.25, 0.25, 0.25)
        >>> [round(s, 4) for s in Routing("zipf", 1.0).shares(3)]  # 1, 1/2, 1/3 over 11/6
        [0.5455, 0.2727, 0.1818]
        """
        if self.kind == "uniform":
            return (1.0 / num_experts,) * num_experts
        if self.kind == "zipf":
            weights = [1.0 / (rank**self.skew) for rank in range(1, num_experts + 1)]
        else:
            if len(self.counts) != num_experts:
                raise RoutingError(
                    f"routing file {self.source} lists {len(self.counts)} experts but the model's MoE layer has "
                    f"{num_experts}; give one count per expert"
                )
            weights = list(self.counts)
        total = sum(weights)
        return tuple(w / total for w in weights)

    def expert_counts(self, num_experts: int, slots: int) -> tuple[int, ...]:
        """Per-expert slot counts summing to ``slots`` (largest remainder of ``share * slots``).

        Examples
        --------
        >>> Routing().expert_counts(8, 1024)
        (128, 128, 128, 128, 128, 128, 128, 128)
        >>> Routing("zipf", 1.0).expert_counts(3, 11)  # 6, 3, 2 of 11
        (6, 3, 2)
        """
        exact = [s * slots for s in self.shares(num_experts)]
        counts = [math.floor(x) for x in exact]
        order = sorted(range(num_experts), key=lambda e: (counts[e] - exact[e], e))
        for e in order[: slots - sum(counts)]:
            counts[e] += 1
        return tuple(counts)

    def expected_experts(self, num_experts: int, top_k: int, tokens: int) -> float:
        """Expected distinct experts T tokens touch, each picking ``top_k`` distinct experts.

        ``sum_e 1 - (1 - min(1, k * p_e))**T``; uniform: ``E * (1 - (1 - k/E)**T)``.

        Examples
        --------
        >>> Routing().expected_experts(8, 2, 1)  # batch-1 decode reads k experts
        2.0
        >>> round(Routing().expected_experts(8, 2, 256), 6)  # a large batch reads all of them
        8.0
        """
        p = self.shares(num_experts)
        return sum(1.0 - (1.0 - min(1.0, top_k * pe)) ** tokens for pe in p)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "skew": self.skew, "counts": list(self.counts), "source": self.source}


UNIFORM = Routing()


def parse_routing(value: str | Routing | None) -> Routing:
    """A :class:`Routing` from ``uniform``, ``zipf:S`` or a path to a JSON/CSV file of per-expert counts.

    A JSON file holds a list of numbers or ``{"counts": [...]}``; a CSV file one count per row (its
    last column; a header row is skipped) or one row of counts.

    Raises
    ------
    RoutingError
        An unknown value, a bad zipf exponent, or a file that is missing or holds no non-negative
        counts (the message names the file).

    Examples
    --------
    >>> parse_routing("zipf:1.2")
    Routing(kind='zipf', skew=1.2, counts=(), source='')
    >>> parse_routing(None) == UNIFORM
    True
    """
    if value is None or isinstance(value, Routing):
        return value or UNIFORM
    text = str(value).strip()
    if text == "uniform":
        return UNIFORM
    if text.startswith("zipf:"):
        try:
            skew = float(text[5:])
        except ValueError:
            skew = -1.0
        if not math.isfinite(skew) or skew < 0:
            raise RoutingError(f"--routing {text!r}: zipf's exponent must be a number >= 0, e.g. zipf:1.2")
        return Routing("zipf", skew)
    path = Path(text)
    if not path.is_file():
        raise RoutingError(
            f"--routing {text!r} is neither 'uniform', 'zipf:S' nor a file of per-expert token counts (JSON or CSV)"
        )
    return Routing("counts", counts=_read_counts(path), source=str(path))


def _read_counts(path: Path) -> tuple[float, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RoutingError(f"routing file {path}: cannot read it ({exc})") from None
    values: list[Any]
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RoutingError(f"routing file {path} is not valid JSON: {exc}") from None
        values = data["counts"] if isinstance(data, dict) and "counts" in data else data
        if not isinstance(values, list):
            raise RoutingError(f'routing file {path}: expected a list of per-expert counts or {{"counts": [...]}}')
    else:
        rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
        values = rows[0] if len(rows) == 1 else [r[-1] for r in rows]
        if values and not _is_number(values[0]):
            values = values[1:]  # a header row
    return _check_counts(path, values)


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _check_counts(path: Path, values: Sequence[Any]) -> tuple[float, ...]:
    if not values or isinstance(values, (str, bytes)):
        raise RoutingError(f"routing file {path} holds no per-expert counts")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not _is_number(v) or not math.isfinite(float(v)) or float(v) < 0:
            raise RoutingError(f"routing file {path}: count {i} is {v!r}; counts are numbers >= 0")
        out.append(float(v))
    if sum(out) <= 0:
        raise RoutingError(f"routing file {path}: the counts sum to 0; at least one expert must receive tokens")
    return tuple(out)


def apply_routing(costed: CostedGraph, routing: Routing | str | None = None) -> CostedGraph:
    """``costed`` with each expert GEMM's weight bytes those of the experts ``routing`` expects a step to touch.

    FLOPs are unchanged (T*k routed rows under any routing). The result's ``meta["moe"]`` holds the
    layers found and the routing; a graph without MoE layers is returned as it is.

    Raises
    ------
    RoutingError
        If a counts file does not match a layer's number of experts.
    """
    routing = parse_routing(routing)
    layers = find_moe_layers(costed.graph)
    if not layers:
        return costed
    touched, share = {}, {}
    for layer in layers:
        expected = routing.expected_experts(layer.num_experts, layer.top_k, layer.tokens)
        touched.update(dict.fromkeys(layer.experts, expected))
        share.update(dict.fromkeys(layer.experts, expected / layer.num_experts))
    repriced = reprice_experts(costed, {name: (experts, None) for name, experts in touched.items()})
    # EXPERT_READ_SHARE: the share of its expert weights each expert GEMM reads (parameter_traffic_bytes)
    meta = {**costed.meta, "moe": {"routing": routing, "layers": layers}, EXPERT_READ_SHARE: share}
    return replace(repriced, meta=meta)


def _at_precision(call: Any, captured: Cost, precision: Any) -> Cost:
    """A grouped GEMM's ``captured``-width cost with its weights and activations at ``precision``'s widths.

    The call's costs stay at the captured width (as :func:`dfx.costs.precision.apply_precision`
    leaves them); the node's total is what is re-priced.
    """
    if precision is None or precision.is_identity:
        return captured
    g = grouped_gemm(call)
    rows = captured.flops // (2 * g.k * g.n) if g.k and g.n else None  # the rows it computes: 2*rows*K*N
    acts = grouped_mm_cost(call, 0, rows)  # no expert weights: activations, offsets
    act, wgt, _ = precision.ratios()
    weights = captured.bytes_read - acts.bytes_read
    return Cost(
        captured.flops, math.ceil(acts.bytes_read * act + weights * wgt), math.ceil(captured.bytes_written * act)
    )


def reprice_experts(costed: CostedGraph, experts: dict[str, tuple[float, int | None]]) -> CostedGraph:
    """``costed`` with the grouped GEMMs of each node in ``experts`` re-priced.

    ``experts[name] = (experts_read, rows)``: the experts whose weights the node reads, and the rows
    it computes (``None``: the routed rows). Weights and activations keep the widths
    :func:`dfx.costs.precision.apply_precision` gave them (``costed.meta["precision"]``); the
    node's ``matmul`` FLOPs follow its rows.
    """
    precision = costed.meta["precision"] if "precision" in costed.meta else None
    nodes = []
    for cn in costed.nodes:
        grouped_calls = [c for c in cn.node.aten_calls if c.packet in GROUPED_OPS]
        positions = [i for i, cc in enumerate(cn.calls) if _packet(cc.op) in GROUPED_OPS]
        if cn.name not in experts or len(grouped_calls) != len(positions):
            nodes.append(cn)  # not an expert GEMM (or its rule failed: nothing to re-price)
            continue
        touched, rows = experts[cn.name]
        calls, cost = list(cn.calls), cn.cost
        for i, call in zip(positions, grouped_calls):
            new = grouped_mm_cost(call, touched, rows)
            priced, old = _at_precision(call, new, precision), _at_precision(call, calls[i].cost, precision)
            cost = Cost(
                cost.flops - old.flops + priced.flops,
                cost.bytes_read - old.bytes_read + priced.bytes_read,
                cost.bytes_written - old.bytes_written + priced.bytes_written,
            )
            split = tuple((cat, new.flops if cat == "matmul" else f) for cat, f in calls[i].flops_by_category)
            calls[i] = CallCost(calls[i].op, calls[i].category, new, split)
        by_category = dict(cn.flops_by_category)
        if cost.flops != cn.cost.flops:
            by_category["matmul"] = (
                (by_category["matmul"] if "matmul" in by_category else 0) + cost.flops - cn.cost.flops
            )
        nodes.append(replace(cn, cost=cost, calls=tuple(calls), flops_by_category=tuple(by_category.items())))
    return replace(costed, nodes=tuple(nodes))
