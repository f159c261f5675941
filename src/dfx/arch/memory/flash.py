"""FlashAttention's off-chip access count versus standard attention (concepts.md (j)).

Dao et al., "FlashAttention", NeurIPS 2022 (arXiv 2205.14135), Algorithm 1 and Theorem 2, per
(batch, head), in elements. N tokens, head size d, on-chip memory M elements, ``d <= M <= N*d``::

    B_c = ceil(M / 4d),  B_r = min(ceil(M / 4d), d),  T_c = ceil(N / B_c)

    standard:  read Q, K (2Nd), write S (N^2); read S, write P (2N^2); read P, V, write O
               (N^2 + 2Nd)                              = 4Nd + 4N^2          Theta(Nd + N^2)
    flash:     K and V once (2Nd); per outer step j: all of Q (Nd), O read and written (2Nd),
               l and m read and written (4N)            = 2Nd + T_c (3Nd + 4N) Theta(N^2 d^2 / M)

With T_c ~ 4Nd/M the flash count is ~ 12 N^2 d^2 / M: doubling M halves it while T_c >> 1.
"""

from __future__ import annotations

import math

__all__ = ["flash_accesses", "flash_accesses_with_blocks", "flash_blocks", "standard_accesses"]

_STATS_PER_ROW = 2  # l (row sum) and m (row max), each read and written per outer step


def flash_blocks(n: int, d: int, m_elems: float) -> tuple[int, int]:
    """``(B_r, B_c)``: FlashAttention's row and column block sizes, capped at N.

    Examples
    --------
    >>> flash_blocks(4096, 64, 65536)  # B_c = 65536 / 256 = 256, B_r = min(256, 64)
    (64, 256)
    """
    bc = math.ceil(m_elems / (4 * d))
    return min(bc, d, n), min(bc, n)


def standard_accesses(n: int, d: int) -> int:
    """Off-chip element accesses of standard attention for one head: ``4Nd + 4N^2``.

    Examples
    --------
    >>> standard_accesses(4, 2)  # 4*4*2 + 4*16
    96
    """
    return 4 * n * d + 4 * n * n


def flash_accesses(n: int, d: int, m_elems: float) -> int:
    """Off-chip element accesses of FlashAttention (Algorithm 1) for one head.

    Examples
    --------
    >>> flash_accesses(4096, 64, 65536)  # T_c = 16: 2*4096*64 + 16*(3*4096*64 + 4*4096)
    13369344
    """
    return flash_accesses_with_blocks(n, d, flash_blocks(n, d, m_elems)[1])


def flash_accesses_with_blocks(n: int, d: int, block_cols: int) -> int:
    """``2Nd + T_c (3Nd + 4N)`` with ``T_c = ceil(N / block_cols)``: for a B_c a machine rounded.

    Examples
    --------
    >>> flash_accesses_with_blocks(8, 2, 8)  # one outer step: 2*8*2 + (3*8*2 + 4*8)
    112
    """
    tc = math.ceil(n / block_cols)
    return 2 * n * d + tc * (3 * n * d + 2 * _STATS_PER_ROW * n)
