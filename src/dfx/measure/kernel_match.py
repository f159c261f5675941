"""dfx's compiled kernels beside the kernels a real compiler generated, paired through the nodes they compute.

Torch-free: both sides come in as plain names. dfx's side is a :class:`dfx.compile.Program`'s
kernels (name -> the graph nodes it runs); the compiler's side is each *call* of a generated kernel
in the order the compiled module makes them, with the graph nodes its provenance names
(:mod:`dfx.measure.compiled` reads them from Inductor's ``inductor_provenance_mapping_str``).

Pairing: a kernel of either side is linked to every kernel of the other side that computes one of
its nodes; a connected group of linked kernels is one **unit**, and the unit is what is compared
(predicted: the sum of its dfx kernels' times; measured: the sum of its compiler calls' times).
One kernel for one kernel is a unit of two; where dfx fuses two of Inductor's kernels into one, or
the other way round, the unit holds all three.

A node the compiler recomputes in several of its kernels (Inductor inlines a cheap pointwise node
into each user, ``docs/compile.md``) links only the kernel dfx put it in: it would otherwise join
unrelated kernels into one unit. A call none of whose nodes does work in dfx (a copy of a view) is
a unit of its own, with nothing predicted; a dfx kernel the compiler never runs (a copy it folded
away) is a unit with nothing measured. Both are listed and left out of the per-unit figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["KernelUnit", "match_kernels"]

# dfx's kernel kinds -> the cost categories dfx.measure.comparison explains misses by
CATEGORY_OF_KIND = {
    "gemm": "matmul",
    "attention": "matmul",
    "pointwise": "elementwise",
    "reduction": "normalization",
    "memory": "memory",
    "collective": "memory",
}


@dataclass(frozen=True)
class KernelUnit:
    """A group of dfx kernels and compiler calls that compute the same nodes.

    ``name`` is its dfx kernels' names joined by ``+`` (the compiler's calls' when dfx has none);
    ``category`` the cost category of its first dfx kernel's kind (``"none"`` without one).
    """

    name: str
    dfx_kernels: tuple[str, ...]
    compiler_calls: tuple[str, ...]
    nodes: tuple[str, ...]
    category: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dfx_kernels": list(self.dfx_kernels),
            "compiler_kernels": list(self.compiler_calls),
            "nodes": list(self.nodes),
            "category": self.category,
        }


class _Groups:
    """Union-find over string keys."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def match_kernels(
    dfx_kernels: Mapping[str, Sequence[str]],
    calls: Sequence[tuple[str, Sequence[str]]],
    kinds: Mapping[str, str] | None = None,
) -> tuple[KernelUnit, ...]:
    """Pair dfx's kernels with the compiler's calls through shared nodes (module docstring).

    Parameters
    ----------
    dfx_kernels : mapping of kernel name -> its node names, in program order
    calls : sequence of (call name, its node names), in the order the compiled code makes them
    kinds : mapping of dfx kernel name -> its kind (``gemm``, ``pointwise``, ...), optional

    Returns
    -------
    tuple of KernelUnit
        In the order of each unit's first compiler call; units without one (nothing measured) last.

    Examples
    --------
    >>> units = match_kernels({"k0": ["mm"], "k1": ["add", "relu"]}, [("addmm:1", ["mm"]), ("relu:2", ["add", "relu"])])
    >>> [(u.name, u.compiler_calls) for u in units]
    [('k0', ('addmm:1',)), ('k1', ('relu:2',))]
    """
    kinds = kinds or {}
    holder = {n: k for k, nodes in dfx_kernels.items() for n in nodes}
    copies: dict[str, int] = {}
    for _, nodes in calls:
        for n in set(nodes):
            copies[n] = copies.get(n, 0) + 1
    groups = _Groups()
    for k in dfx_kernels:
        groups.find("d:" + k)
    for call, nodes in calls:
        groups.find("c:" + call)
        linked = [n for n in nodes if n in holder]
        own = [n for n in linked if copies[n] == 1] or linked  # a recomputed node links only when nothing else does
        for n in own:
            groups.join("c:" + call, "d:" + holder[n])
    members: dict[str, list[str]] = {}
    for key in ["c:" + c for c, _ in calls] + ["d:" + k for k in dfx_kernels]:
        members.setdefault(groups.find(key), []).append(key)
    units = []
    for keys in members.values():
        mine = tuple(k[2:] for k in keys if k.startswith("d:"))
        theirs = tuple(k[2:] for k in keys if k.startswith("c:"))
        nodes = tuple(
            dict.fromkeys([n for k in mine for n in dfx_kernels[k]] + [n for c, ns in calls if c in theirs for n in ns])
        )
        category = CATEGORY_OF_KIND.get(kinds.get(mine[0], ""), "none") if mine else "none"
        units.append(KernelUnit("+".join(mine) or "+".join(theirs), mine, theirs, nodes, category))
    return tuple(units)
