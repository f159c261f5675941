"""dfx's fusion groups against a real compiler's kernel grouping, operator by operator.

The compiler's groups come in as plain sets of dfx node names (for Inductor,
:func:`dfx.capture.inductor.inductor_kernels` reads them from its scheduler), so this module is
torch-free. Only *non-GEMM* operators are compared (pointwise, reductions, normalizations, memory
ops): GEMMs, convolutions and attention are library calls on both sides.

Granularity: a dfx node is an fx node of the exported graph, which may lower to several aten ops
(``layer_norm`` is one node; Inductor sees ``var_mean``, ``sub``, ``mul``, ``add``, ``rsqrt``). The
compiler's kernels are mapped back to dfx nodes through their provenance, so the comparison is at
the dfx node's granularity. A node agrees when one of the compiler's kernels holding it holds
exactly the non-GEMM nodes of dfx's kernel holding it.

Recomputation: Inductor inlines a cheap pointwise node with several users into *each* user's
kernel instead of writing it once (``StorageBox.mark_reuse``: a buffer is realized only when it
reads more than ``config.realize_reads_threshold = 4`` inputs or its body is large). dfx assigns
every node to one kernel. A node found in several of the compiler's kernels is therefore compared
by whether dfx put it in one of them, and left out when the other nodes' groups are compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from dfx.compile.dataflow import dataflow
from dfx.compile.program import Program
from dfx.costs.record import CostedGraph

__all__ = ["GroupComparison", "NodeAgreement", "compare_groups"]


@dataclass(frozen=True)
class NodeAgreement:
    """One non-GEMM operator: its dfx group, the compiler's groups holding it, and whether they agree."""

    node: str
    dfx_group: tuple[str, ...]
    compiler_groups: tuple[tuple[str, ...], ...]
    agree: bool

    def explain(self) -> str:
        if self.agree:
            return f"{self.node}: agree {list(self.dfx_group)}"
        theirs = [list(g) for g in self.compiler_groups] or "in no kernel (folded away or into a library call)"
        return f"{self.node}: dfx {list(self.dfx_group)} vs compiler {theirs}"


@dataclass(frozen=True)
class GroupComparison:
    """Per-operator agreement over a graph's non-GEMM operators."""

    nodes: tuple[NodeAgreement, ...]

    @property
    def fraction(self) -> float:
        """Agreeing operators over all compared ones (1.0 when there are none)."""
        return sum(n.agree for n in self.nodes) / len(self.nodes) if self.nodes else 1.0

    @property
    def disagreements(self) -> tuple[NodeAgreement, ...]:
        return tuple(n for n in self.nodes if not n.agree)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operators": len(self.nodes),
            "agree": sum(n.agree for n in self.nodes),
            "fraction": self.fraction,
            "disagreements": [n.explain() for n in self.disagreements],
        }


def compare_groups(program: Program, costed: CostedGraph, compiler_groups: Sequence[Iterable[str]]) -> GroupComparison:
    """Compare ``program``'s kernels with ``compiler_groups`` (sets of dfx node names, library calls left out).

    Examples
    --------
    >>> from dfx.costs import annotate
    >>> from dfx.hardware import load_profile
    >>> from dfx.ir import Graph
    >>> from dfx.targets import compile_for
    >>> costed = annotate(Graph(name="empty", nodes=()))
    >>> compare_groups(compile_for(costed, load_profile("h100")), costed, []).fraction
    1.0
    """
    ops = dataflow(costed).ops
    compared = {n for n, op in ops.items() if not op.extern}
    dfx_of: dict[str, frozenset[str]] = {}
    for k in program.kernels:
        members = frozenset(n for n in k.nodes if n in compared)
        for n in members:
            dfx_of[n] = members
    theirs = [frozenset(g) & compared for g in compiler_groups]
    copies: dict[str, int] = {}
    for g in theirs:
        for n in g:
            copies[n] = copies.get(n, 0) + 1
    recomputed = frozenset(n for n, c in copies.items() if c > 1)
    out = []
    for n in sorted(compared, key=lambda n: ops[n].pos):
        mine = dfx_of.get(n, frozenset({n}))
        holding = [g for g in theirs if n in g]
        # a recomputed node is compared by where its copies are, and left out of the other groups
        agree = any(g - recomputed == mine - recomputed for g in holding)
        order = lambda g: tuple(sorted(g, key=lambda m: ops[m].pos))  # noqa: E731
        out.append(NodeAgreement(n, order(mine), tuple(order(g) for g in holding), agree))
    return GroupComparison(tuple(out))
