"""The cost of one graph at a sequence length: exact where analysed, a quadratic fit elsewhere.

A transformer layer's FLOPs at batch 1 are a quadratic in the sequence length s: the projections
and MLP are linear in s, attention's two matmuls ``4*H*s*s*D`` quadratic. dfx analyses the model at
a few lengths (every bucket it reports, plus fit points) with :func:`dfx.analysis.analyze` and fits
``a*s**2 + b*s + c`` by least squares through those points. For FLOPs the fit is exact up to
rounding whenever the model's FLOPs are such a polynomial; predicted time is a roofline ``max`` of
compute and memory per node, so its fit is an approximation (``max_rel_residual`` says how good).
Analysing every candidate bucket instead would cost one capture (seconds) per distinct length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from dfx.errors import DfxError

__all__ = ["SeqCost", "QuadraticFit", "ModelCost", "model_cost", "analyze_seq"]


@dataclass(frozen=True)
class SeqCost:
    """What one graph at ``seq`` costs for one input of that length (batch 1)."""

    seq: int
    flops: float
    time_s: float

    def to_dict(self) -> dict:
        return {"seq": self.seq, "flops": self.flops, "time_s": self.time_s}


@dataclass(frozen=True)
class QuadraticFit:
    """``a*s**2 + b*s + c``, fitted by least squares; ``max_rel_residual`` over the fit points."""

    a: float
    b: float
    c: float
    max_rel_residual: float = 0.0

    def __call__(self, s: float) -> float:
        return self.a * s * s + self.b * s + self.c

    @classmethod
    def through(cls, points: Iterable[tuple[float, float]]) -> QuadraticFit:
        """Least-squares quadratic through ``(s, y)`` points (at least 3 distinct ``s``).

        Examples
        --------
        >>> f = QuadraticFit.through([(1, 6), (2, 17), (3, 34)])  # 3s^2 + 2s + 1
        >>> round(f(4))
        57
        """
        pts = [(float(s), float(y)) for s, y in points]
        if len({s for s, _ in pts}) < 3:
            raise DfxError("a quadratic cost fit needs at least 3 distinct sequence lengths")
        scale = max(abs(s) for s, _ in pts)  # work in x = s/scale so the normal equations stay well conditioned
        rows = [[(s / scale) ** 2, s / scale, 1.0] for s, _ in pts]
        ata = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
        aty = [sum(r[i] * y for r, (_, y) in zip(rows, pts)) for i in range(3)]
        qa, qb, qc = _solve3(ata, aty)
        fit = cls(qa / scale**2, qb / scale, qc)
        resid = max((abs(fit(s) - y) / abs(y) if y else abs(fit(s))) for s, y in pts)
        return cls(fit.a, fit.b, fit.c, resid)

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "c": self.c, "max_rel_residual": self.max_rel_residual}


def _solve3(m: list[list[float]], v: list[float]) -> tuple[float, float, float]:
    """Gaussian elimination with partial pivoting on a 3x3 system."""
    a = [row[:] + [rhs] for row, rhs in zip(m, v)]
    for col in range(3):
        piv = max(range(col, 3), key=lambda r: abs(a[r][col]))
        a[col], a[piv] = a[piv], a[col]
        for r in range(col + 1, 3):
            f = a[r][col] / a[col][col]
            a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    x = [0.0, 0.0, 0.0]
    for r in (2, 1, 0):
        x[r] = (a[r][3] - sum(a[r][k] * x[k] for k in range(r + 1, 3))) / a[r][r]
    return x[0], x[1], x[2]


@dataclass(frozen=True)
class ModelCost:
    """A model's per-input cost at any length: exact at ``analysed`` seqs, the fits elsewhere."""

    model: str
    hardware: str
    analysed: dict[int, SeqCost] = field(default_factory=dict)
    flops_fit: QuadraticFit | None = None
    time_fit: QuadraticFit | None = None

    def flops(self, seq: int) -> float:
        """FLOPs of one input of length ``seq``."""
        return self.analysed[seq].flops if seq in self.analysed else self.flops_fit(seq)

    def time_s(self, seq: int) -> float:
        """Predicted latency (the makespan to quote) of one input of length ``seq`` on ``hardware``."""
        return self.analysed[seq].time_s if seq in self.analysed else self.time_fit(seq)

    def to_dict(self) -> dict:
        return {
            "name": self.model,
            "hardware": self.hardware,
            "analysed": [c.to_dict() for _, c in sorted(self.analysed.items())],
            "flops_fit": self.flops_fit.to_dict() if self.flops_fit else None,
            "time_fit": self.time_fit.to_dict() if self.time_fit else None,
        }


Analyzer = Callable[[str, int, str], SeqCost]


def analyze_seq(model: str, seq: int, hardware: str) -> SeqCost:
    """Analyse ``model`` at batch 1 and length ``seq`` with :func:`dfx.analysis.analyze`."""
    from dfx.analysis import analyze

    doc = analyze(model, seq=seq, hardware=[hardware]).to_dict()
    (hw_doc,) = doc["hardware"].values()
    return SeqCost(seq, float(doc["totals"]["flops"]), float(hw_doc["makespan_s"]))


def model_cost(
    model: str, seqs: Iterable[int], hardware: str, analyzer: Analyzer | None = None, known: ModelCost | None = None
) -> ModelCost:
    """Analyse ``model`` at each of ``seqs`` (plus fit points if fewer than 3) and fit the quadratics.

    ``analyzer(model, seq, hardware) -> SeqCost`` defaults to :func:`analyze_seq`; tests pass their own.
    Lengths already analysed in ``known`` are not analysed again.
    """
    run = analyzer or analyze_seq
    wanted = sorted(set(int(s) for s in seqs))
    if not wanted:
        raise DfxError("no sequence lengths to analyse the model at")
    fit_seqs = _fit_points(wanted)
    done = dict(known.analysed) if known is not None else {}
    analysed = {
        s: done[s] if s in done else run(model, s, hardware) for s in sorted(set(wanted) | set(fit_seqs) | set(done))
    }
    flops_fit = QuadraticFit.through((s, c.flops) for s, c in analysed.items())
    time_fit = QuadraticFit.through((s, c.time_s) for s, c in analysed.items())
    return ModelCost(model, hardware, analysed, flops_fit, time_fit)


def _fit_points(seqs: list[int]) -> list[int]:
    """At least three distinct lengths spanning ``seqs``: its min, max and (if needed) midpoints."""
    lo, hi = seqs[0], seqs[-1]
    pts = {lo, hi, (lo + hi) // 2, max(1, lo // 2), hi * 2}
    chosen = sorted(set(seqs) | {lo, hi})
    for p in sorted(pts, key=lambda p: (p < lo or p > hi, p)):
        if len(chosen) >= 3:
            break
        if p not in chosen:
            chosen.append(p)
    return sorted(chosen)
