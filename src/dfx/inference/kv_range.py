"""Decode steps over a range of KV lengths from three captures: every integer of the graph affine in ``k``.

A decode step at KV length ``k`` differs from the step at ``k + 1`` only in the sizes that hold the
cache: ``[B, H, k, D]`` tensors, ``[B, H, 1, k]`` scores, their bytes and strides. Each is an affine
function of ``k`` (a product in which ``k`` appears once), so the graph at ``k`` is the graph at
``lo`` with every integer that differs between the captures at ``lo`` and ``hi`` moved along its
line::

    v(k) = v(lo) + (v(hi) - v(lo)) * (k - lo) / (hi - lo)          # exact in integers, else refused

:class:`DecodeRange` captures ``lo`` and ``hi`` once, checks the rule against a third capture at
``lo + (hi - lo) // 3`` (off the middle, so no integer that is not affine can pass by symmetry), and
then builds any step in between from the two graphs' JSON text, with no torch export. Where the
check fails (a model whose graph changes otherwise with ``k``) every step is captured, as before.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from dfx.ir import Graph
from dfx.ir.graph import GRAPH_SCHEMA
from dfx.ir.polytext import NotPolynomial, poly_text

__all__ = ["DecodeRange", "affine_text"]

_MIN_SPAN = 3  # fewer steps than this: capturing each is no dearer than the check

NotAffine = NotPolynomial  # the two graphs differ by more than integers affine in ``k``


def affine_text(text_lo: str, text_hi: str, lo: int, hi: int) -> Callable[[int], str]:
    """A function ``k -> text`` moving every integer that differs between the two texts along its line
    (:func:`dfx.ir.polytext.poly_text` of degree 1).

    Raises
    ------
    NotAffine
        If the texts differ elsewhere than in integers (and, from the function, where an integer
        is not whole at ``k``).

    Examples
    --------
    >>> at = affine_text('{"shape": [2, 8, 16]}', '{"shape": [2, 8, 20]}', 16, 20)
    >>> at(17)
    '{"shape": [2, 8, 17]}'
    """
    return poly_text({(lo,): text_lo, (hi,): text_hi}, [[lo, hi]])


def _segments(doc: dict[str, Any]) -> list[tuple[str, int | None, Any]]:
    """The pieces of a graph document that :func:`_Builder` moves separately, in the document's order:
    ``(field, index or None, value)`` for every top-level field and every parameter and node."""
    out: list[tuple[str, int | None, Any]] = []
    for key, value in doc.items():
        if key in ("parameters", "nodes"):
            out += [(key, i, v) for i, v in enumerate(value)]
        else:
            out.append((key, None, value))
    return out


class _Builder:
    """:func:`affine_text` piece by piece: the graph at ``k`` from the pieces of the document that
    move, the others decoded once.

    The graph's JSON text is its top-level fields' texts and its parameters' and nodes' texts
    joined by fixed separators, and no integer token spans a separator (each piece is a JSON value:
    a brace, bracket or quote ends it), so moving each piece's integers along its line gives the
    pieces of the moved whole text, and :meth:`graph` equals ``Graph.from_dict(json.loads(at(k)))``
    (with the document's meta order) whenever ``at(k)`` exists, and raises :class:`NotAffine` where
    it raises. A piece equal at both ends is equal at every ``k``: decoded once and shared (nodes,
    parameters and specs are frozen).

    Raises
    ------
    NotAffine
        If the documents differ in their fields, in their numbers of parameters or nodes, or
        elsewhere than in integers.
    """

    def __init__(self, graph_lo: Graph, graph_hi: Graph, lo: int, hi: int) -> None:
        from dfx.ir import Node, ParameterInfo

        doc_lo, doc_hi = graph_lo.to_dict(), graph_hi.to_dict()
        seg_lo, seg_hi = _segments(doc_lo), _segments(doc_hi)
        if [s[:2] for s in seg_lo] != [s[:2] for s in seg_hi]:
            raise NotAffine("the graphs differ in their fields or their numbers of nodes or parameters")
        self._decode = {"parameters": ParameterInfo.from_dict, "nodes": Node.from_dict}
        self._fixed: dict[tuple[str, int | None], Any] = {}
        self._moving: dict[tuple[str, int | None], Callable[[int], str]] = {}
        for (key, i, a), (_, _, b) in zip(seg_lo, seg_hi):
            text_a, text_b = json.dumps(a), json.dumps(b)
            if text_a == text_b:
                self._fixed[key, i] = self._read(key, text_a)
            else:
                self._moving[key, i] = affine_text(text_a, text_b, lo, hi)
        self._order = [s[:2] for s in seg_lo]

    def _read(self, key: str, text: str) -> Any:
        value = json.loads(text)
        return self._decode[key](value) if key in self._decode else value

    def graph(self, k: int) -> Graph:
        """The graph at KV length ``k``."""
        moved = {where: self._read(where[0], at(k)) for where, at in self._moving.items()}
        parts: dict[str, Any] = {"parameters": [], "nodes": []}
        for where in self._order:
            value = moved[where] if where in moved else self._fixed[where]
            if where[1] is None:
                parts[where[0]] = value
            else:
                parts[where[0]].append(value)
        # every field is there: the pieces come from Graph.to_dict, which writes them all
        if parts["schema"] != GRAPH_SCHEMA:
            raise NotAffine(f"not a dfx graph: schema {parts['schema']!r}")
        return Graph(
            nodes=tuple(parts["nodes"]),
            parameters=tuple(parts["parameters"]),
            name=parts["name"],
            capture_method=parts["capture_method"],
            meta=tuple(parts["meta"].items()),  # the capture's meta order, as step() always kept it
        )


class DecodeRange:
    """The decode steps of one request with KV lengths in ``[lo, hi]``, from three captures.

    Parameters
    ----------
    capture : callable
        ``capture(kv_len) -> Step`` (:func:`dfx.inference.steps.capture_step` at the request's
        model, batch, dtype and method).
    lo, hi : int
        The range of KV lengths.

    :meth:`step` returns the step at ``k``: captured (the ends, the check point, or every step where
    the check failed), else built from the ends' graphs. :attr:`affine` says which.
    """

    def __init__(self, capture: Callable[[int], Any], lo: int, hi: int) -> None:
        self._capture, self.lo, self.hi = capture, lo, hi
        self._ends: tuple[Any, Any] | None = None
        self._builder: _Builder | None = None
        self._costed: Any = None  # the first step built: its nodes that never move are every step's
        self.affine: bool | None = None if hi - lo >= _MIN_SPAN else False

    def _check(self) -> None:
        first, last = self._capture(self.lo), self._capture(self.hi)
        probe = self.lo + (self.hi - self.lo) // 3
        try:
            at = affine_text(first.graph.to_json(), last.graph.to_json(), self.lo, self.hi)
            self.affine = at(probe) == self._capture(probe).graph.to_json()
            self._builder = _Builder(first.graph, last.graph, self.lo, self.hi) if self.affine else None
        except NotAffine:
            self.affine, self._builder = False, None
        self._ends = (first, last)

    def step(self, k: int):
        """The step at KV length ``k`` (``lo <= k <= hi``): a :class:`dfx.inference.steps.Step`."""
        from dataclasses import replace

        from dfx.costs import annotate

        if self.affine is None:
            self._check()
        if not self.affine or k in (self.lo, self.hi):
            return self._capture(k)
        graph = self._builder.graph(k)  # the graph of affine_text's text at k, meta in the capture's order
        costed = annotate(graph, reuse=self._costed)  # the nodes that never move are costed once
        if self._costed is None:
            self._costed = costed
        return replace(self._ends[0], graph=graph, costed=costed, kv_len=k)
