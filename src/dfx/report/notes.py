"""Notes on a validation document that ``dfx validate`` prints and ``report.html`` shows alike."""

from __future__ import annotations

__all__ = ["drift_notes"]

_DRIFT_NOTE = 0.1  # a reference GEMM more than 10% off its calibrated rate is worth saying


def drift_notes(drift: float | None, overhead_drift: float | None) -> list[str]:
    """The notes ``dfx validate`` prints when the machine moved since its calibration.

    ``drift`` and ``overhead_drift`` are the validation's ``run.drift`` and ``run.overhead_drift``
    (signed fractions; ``None`` without a calibration).

    Examples
    --------
    >>> drift_notes(-0.3, 0.05)
    ['  note: a reference GEMM runs 30% slower than at calibration: the machine moved since, and the errors include that']
    """
    lines = []
    if drift is not None and abs(drift) > _DRIFT_NOTE:
        way = "faster" if drift > 0 else "slower"
        lines.append(
            f"  note: a reference GEMM runs {abs(drift):.0%} {way} than at calibration: the machine moved since, and the errors include that"
        )
    if overhead_drift is not None and abs(overhead_drift) > _DRIFT_NOTE:
        way = "longer" if overhead_drift > 0 else "less time"
        lines.append(
            f"  note: tiny ops take {abs(overhead_drift):.0%} {way} than at calibration: the machine moved since, and the errors include that"
        )
    return lines
