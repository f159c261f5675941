"""Speculative decoding (``dfx serve --speculative K,ACCEPT``): a draft model or MTP head proposes
``K`` tokens a sequence, and one step of the target model verifies them.

With each proposed token accepted with probability ``a`` (independently: the i.i.d. assumption of
Leviathan et al., "Fast Inference from Transformers via Speculative Decoding", ICML 2023, eq. 1),
a verify step yields the accepted prefix plus the target's own next token, in expectation::

    E[tokens per step] = (1 - a^(K + 1)) / (1 - a)        (K + 1 where a = 1)

The verify step is a decode step whose every sequence brings ``K + 1`` query tokens
(:meth:`dfx.serve.steps.IterationCost.iteration_s` prices the ``B K`` extra tokens as tokens joining
the decode pass, as it prices a prompt chunk). What is not priced: the draft's own steps (an MTP
head is one extra layer a proposed token, a draft model a small model's decode), and the
rejected tokens' KV slots, written and then freed within the step.
"""

from __future__ import annotations

import math

from dfx.errors import DfxError

__all__ = ["expected_tokens_per_step", "parse_speculative"]


def expected_tokens_per_step(k: int, accept: float) -> float:
    """Tokens a verify step yields in expectation: ``(1 - a^(K+1)) / (1 - a)`` (Leviathan et al.
    2023, eq. 1; ``K + 1`` where ``a = 1``).

    >>> expected_tokens_per_step(4, 0.5)  # 1 + 0.5 + 0.25 + 0.125 + 0.0625
    1.9375
    >>> expected_tokens_per_step(3, 1.0), expected_tokens_per_step(0, 0.7)
    (4.0, 1.0)
    """
    if accept >= 1.0:
        return float(k + 1)
    return (1.0 - accept ** (k + 1)) / (1.0 - accept)


def parse_speculative(text: str | None) -> tuple[int, float] | None:
    """``"K,ACCEPT"`` -> ``(K, ACCEPT)``: ``K >= 1`` proposed tokens, acceptance rate in ``[0, 1]``.

    >>> parse_speculative("4,0.7")
    (4, 0.7)

    Raises
    ------
    DfxError
        Not two numbers, ``K < 1`` or an acceptance rate outside ``[0, 1]``.
    """
    if text is None:
        return None
    parts = [p.strip() for p in str(text).split(",")]
    try:
        k, accept = int(parts[0]), float(parts[1])
        ok = len(parts) == 2 and k >= 1 and math.isfinite(accept) and 0.0 <= accept <= 1.0
    except (ValueError, IndexError):
        ok = False
    if not ok:
        raise DfxError(
            f"--speculative {text!r}: expected K,ACCEPT: K >= 1 tokens proposed a step and an acceptance "
            "rate in [0, 1], e.g. 4,0.7"
        )
    return k, accept
