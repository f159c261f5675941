"""A graph's JSON at any size from its JSON at a grid of sizes: every integer a polynomial in the sizes.

A captured graph's text differs between two sizes only in its integers (shapes, strides, byte
counts); each is a polynomial in the sizes of low degree: ``[B, S, H]`` is degree 1 in ``B`` and
``S``, a ``[B, H, S, S]`` score tensor's stride ``S * S`` degree 2 in ``S``. Given the text at
every point of a grid ``xs[0] x xs[1] x ...`` (``len(xs[d])`` values of size ``d``), each integer
is the tensor-product Lagrange interpolant through its grid values, of degree ``len(xs[d]) - 1`` in
size ``d`` (Lagrange's formula, e.g. Press et al., *Numerical Recipes*, 3rd ed., section 3.2):

    v(x) = sum over grid points g of  v(g) * prod_d  prod_{j != g_d} (x_d - xs[d][j]) / (xs[d][g_d] - xs[d][j])

computed in exact integers (a common denominator, then a division that must leave no remainder).
The rule is a claim about the graph, not a fact of it: callers check it against a capture at a
point off the grid before trusting it (:mod:`dfx.inference.kv_range`, :mod:`dfx.sweep.graphs`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from itertools import product
from typing import Callable, Mapping, Sequence

from dfx.ir.graph import Graph

__all__ = ["NotPolynomial", "graph_of_text", "poly_text"]

_INT = re.compile(r"-?\d+")  # "05" of "1e-05" is a token too: equal in every sample, it is kept as written


class NotPolynomial(ValueError):
    """The texts differ by more than integers, or an integer is not whole at the point asked."""


def _weights(xs: Sequence[int], x: int) -> tuple[list[int], int]:
    """Lagrange basis values at ``x`` over nodes ``xs``, as integer numerators over one denominator."""
    nums, dens = [], []
    for i, xi in enumerate(xs):
        num = den = 1
        for j, xj in enumerate(xs):
            if j != i:
                num *= x - xj
                den *= xi - xj
        nums.append(num)
        dens.append(den)
    common = math.lcm(*(abs(d) for d in dens))
    return [n * (common // d) for n, d in zip(nums, dens)], common


def poly_text(samples: Mapping[tuple[int, ...], str], xs: Sequence[Sequence[int]]) -> Callable[..., str]:
    """A function ``(*sizes) -> text`` interpolating every integer that differs between the samples.

    Parameters
    ----------
    samples : mapping
        ``sizes -> text`` for every point of the grid ``xs[0] x xs[1] x ...`` (more are ignored).
    xs : sequence of sequences of int
        Per size, its distinct grid values; ``k`` values give degree ``k - 1`` in that size.

    Returns
    -------
    callable
        ``at(*sizes)``: the text at ``sizes``; raises :class:`NotPolynomial` where an integer
        comes out fractional there.

    Raises
    ------
    NotPolynomial
        A grid point missing, or the texts differing elsewhere than in their integers.

    Examples
    --------
    >>> at = poly_text({(2,): '{"s": [2, 4]}', (3,): '{"s": [3, 9]}', (4,): '{"s": [4, 16]}'}, [[2, 3, 4]])
    >>> at(10)
    '{"s": [10, 100]}'
    """
    grid = list(product(*xs))
    missing = [g for g in grid if g not in samples]
    if missing:
        raise NotPolynomial(f"no sample at {missing[0]}")
    texts = [samples[g] for g in grid]
    parts = _INT.split(texts[0])
    tokens = [_INT.findall(t) for t in texts]
    if any(_INT.split(t) != parts for t in texts[1:]) or any(len(t) != len(tokens[0]) for t in tokens):
        raise NotPolynomial("the texts differ in more than their integers")
    moving = [(i, [int(t[i]) for t in tokens]) for i in range(len(tokens[0])) if len({t[i] for t in tokens}) > 1]
    index = [{x: k for k, x in enumerate(axis)} for axis in xs]

    def at(*sizes: int) -> str:
        per_axis = [_weights(axis, x) for axis, x in zip(xs, sizes)]
        weights = [math.prod(per_axis[d][0][index[d][g[d]]] for d in range(len(xs))) for g in grid]
        denominator = math.prod(d for _, d in per_axis)
        values = list(tokens[0])
        for i, vs in moving:
            total = sum(w * v for w, v in zip(weights, vs))
            if total % denominator:
                raise NotPolynomial(f"integer {i} of the text is not whole at {sizes}")
            values[i] = str(total // denominator)
        out = [parts[0]]
        for v, p in zip(values, parts[1:]):
            out += (v, p)
        return "".join(out)

    return at


def graph_of_text(text: str) -> Graph:
    """The :class:`Graph` of its JSON text (``Graph.to_json``), its meta kept in the text's order
    (the order the capture made it, which ``Graph.from_dict`` does not promise)."""
    doc = json.loads(text)
    return replace(Graph.from_dict(doc), meta=tuple(doc["meta"].items()))
