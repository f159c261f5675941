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

from typing import Any, Callable

from dfx.ir.polytext import NotPolynomial, graph_of_text, poly_text

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
        self._at: Callable[[int], str] | None = None
        self._ends: tuple[Any, Any] | None = None
        self.affine: bool | None = None if hi - lo >= _MIN_SPAN else False

    def _check(self) -> None:
        first, last = self._capture(self.lo), self._capture(self.hi)
        probe = self.lo + (self.hi - self.lo) // 3
        try:
            at = affine_text(first.graph.to_json(), last.graph.to_json(), self.lo, self.hi)
            self.affine = at(probe) == self._capture(probe).graph.to_json()
        except NotAffine:
            self.affine = False
        self._at, self._ends = (at if self.affine else None), (first, last)

    def step(self, k: int):
        """The step at KV length ``k`` (``lo <= k <= hi``): a :class:`dfx.inference.steps.Step`."""
        from dataclasses import replace

        from dfx.costs import annotate

        if self.affine is None:
            self._check()
        if not self.affine or k in (self.lo, self.hi):
            return self._capture(k)
        graph = graph_of_text(self._at(k))
        return replace(self._ends[0], graph=graph, costed=annotate(graph), kv_len=k)
