"""einsum: contractions written as an index equation, costed by pairwise contraction.

NB: the operands are contracted left to right, as ``torch.einsum`` does without opt_einsum: each
step multiplies every point of the union of its two operands' indices (1 FLOP), and accumulates
(1 more) when it sums an index away, so ``ij,jk->ik`` is ``2*I*J*K`` like ``mm``. A single
operand costs one add per input element it sums over, nothing when it only permutes.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import FMA_FLOPS, input_specs, io_cost, numel

__all__ = ["einsum_flops"]


def _expand_ellipsis(terms: list[str], ndims: list[int]) -> tuple[list[str], str]:
    """Replace ``...`` with one private letter per broadcast dim, right-aligned across operands."""
    widths = [nd - (len(t) - 3) if "..." in t else 0 for t, nd in zip(terms, ndims)]
    width = max(widths, default=0)
    letters = "".join(chr(0x100 + i) for i in range(width))  # outside every equation's alphabet
    out = [t.replace("...", letters[width - w :]) for t, w in zip(terms, widths)]
    return out, letters


def _parse(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms, ellipsis = _expand_ellipsis(lhs.split(","), ndims)
    if arrow:
        return terms, rhs.replace("...", ellipsis)
    counts = {c: "".join(terms).count(c) for c in "".join(terms)}
    return terms, ellipsis + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ellipsis))


def einsum_flops(equation: str, shapes: list[tuple[int, ...]]) -> int:
    """FLOPs of ``torch.einsum(equation, *operands)`` for operands of ``shapes``.

    Raises
    ------
    ValueError
        If the equation names a different number of dims than an operand has.

    Examples
    --------
    >>> einsum_flops("ij,jk->ik", [(4, 8), (8, 5)])  # mm: 2 * 4 * 8 * 5
    320
    >>> einsum_flops("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)])  # 2 * 1*2*3*5*4
    240
    """
    terms, output = _parse(equation, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        if len(term) != len(shape):
            raise ValueError(f"einsum {equation!r}: term {term!r} does not match an operand of shape {shape}")
        for letter, size in zip(term, shape):
            sizes[letter] = max(sizes.get(letter, 1), size)  # size-1 dims broadcast
    current = set(terms[0])
    if len(terms) == 1:
        return numel(sizes[c] for c in current) if current - set(output) else 0
    flops = 0
    for i, term in enumerate(terms[1:], start=1):
        union = current | set(term)
        keep = set(output).union(*terms[i + 1 :])  # indices still needed later
        summed = union - keep
        flops += numel(sizes[c] for c in union) * (FMA_FLOPS if summed else 1)
        current = union & keep
    return flops


@register_cost(["aten.einsum"], category=Category.MATMUL)
def einsum(call) -> Cost:
    equation = call.arg(0, "equation")
    shapes = [s.shape for s in input_specs(call)]
    return io_cost(call, einsum_flops(str(equation), shapes))
