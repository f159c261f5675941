"""Dense linear algebra: factorizations, solves, inverses, determinants, eigen- and singular values.

The FLOPs are the textbook operation counts of the algorithm (leading terms, real arithmetic), from
LAPACK Working Note 41 (Blackford and Dongarra, *Installation Guide for LAPACK*, the operation-count
table every LAPACK/MAGMA ``flops.h`` reproduces) and Golub and Van Loan, *Matrix Computations*
(4th ed.): **not** counts measured from the kernels that run (cuSOLVER, MAGMA, LAPACK's blocked and
divide-and-conquer drivers add lower-order work, and iterative phases depend on the values).
Dimension letters: A is [*B, m, n], k = min(m, n); square A is [*B, n, n]; a solve has ``nrhs``
right-hand sides. Every count is per matrix, times B (all leading dims), rounded once per call.

    LU, getrf (m >= n)          m n^2 - n^3/3           square: 2/3 n^3           LAWN 41
    triangular solve, trsm      n^2 per right-hand side                           LAWN 41
    solve (LU + 2 trsm)         2/3 n^3 + 2 n^2 nrhs                              LAWN 41 getrf + getrs
    inverse                     2/3 n^3 + 2 n^3: PyTorch solves A X = I (LAPACK's getri route
                                would be 2/3 n^3 + 4/3 n^3 = 2 n^3)
    det / slogdet               LU + n (product of U's diagonal) / LU + 3n (abs, log, sum)
    Cholesky, potrf             n^3/3                                             LAWN 41
    Householder QR, geqrf       4 m n k - 2 (m + n) k^2 + 4/3 k^3   (m >= n: 2 m n^2 - 2/3 n^3)
    forming Q, orgqr (q cols)   4 m q k - 2 (m + q) k^2 + 4/3 k^3   (thin Q: 2 m n^2 - 2/3 n^3)
    symmetric eigen (QR alg.)   4/3 n^3 values only, 9 n^3 with vectors           GVL section 8.3
    SVD (m >= n, else A^T)      values only     min(4 m n^2 - 4/3 n^3, 2 m n^2 + 2 n^3)
                                reduced U, V    min(14 m n^2 + 8 n^3,   6 m n^2 + 20 n^3)
                                full U, V       min(4 m^2 n + 8 m n^2 + 9 n^3, 4 m^2 n + 22 n^3)
                                GVL section 8.6's work table: the cheaper of Golub-Reinsch and
                                R-SVD (QR first), as LAPACK's drivers switch to QR first for tall
                                matrices; a square A uses the reduced row (U1 = U)

Category ``matmul``: blocked LAPACK factorizations do most of their O(n^3) work in matrix-matrix
updates (gemm, trsm, syrk) and run on the same units as contractions; the roofline's peak is chosen
by the node's dtype alone (its first operand's, for a ``matmul`` node), never by category. NB: the
eigen and singular value reductions (sytrd, gebrd) are half matrix-vector work, so a compute peak is
optimistic for them. FlopCounterMode counts none of these ops (0). Complex inputs are counted as real
ones (LAWN 41 would count about 4x: 6 real FLOPs per complex multiply, 2 per add), the same
undercount as a complex ``mm``.

Bytes: the call reads its matrix arguments and writes every output (factors, pivots, ``info``), as
any fused call; LAPACK's workspace is not traffic.
"""

from __future__ import annotations

from fractions import Fraction

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost, numel, tensor_arg
from dfx.ir import AtenCall, TensorSpec

__all__ = [
    "cholesky_flops",
    "eigh_flops",
    "householder_flops",
    "lu_flops",
    "svd_flops",
]

M, E = Category.MATMUL, Category.ELEMENTWISE

EIGH_VALUES = Fraction(4, 3)  # x n^3: tridiagonal reduction (sytrd); the QR iteration is O(n^2)
EIGH_VECTORS = 9  # x n^3: with the eigenvectors accumulated (GVL section 8.3, symmetric QR algorithm)
DET_DIAGONAL_FLOPS = 1  # per diagonal element of U: det = sign * prod(diag(U)), one multiply
SLOGDET_DIAGONAL_FLOPS = 3  # per diagonal element of U: abs, log, add


def lu_flops(m: int, n: int) -> Fraction:
    """getrf of an m x n matrix: ``M k^2 - k^3/3`` (M = max, k = min), 2/3 n^3 when square."""
    big, k = max(m, n), min(m, n)
    return Fraction(big * k * k) - Fraction(k**3, 3)


def cholesky_flops(n: int) -> Fraction:
    """potrf of an n x n matrix: n^3 / 3."""
    return Fraction(n**3, 3)


def householder_flops(m: int, n: int, k: int) -> Fraction:
    """geqrf of m x n (k = min(m, n)), or orgqr forming m x n Q from k reflectors (LAWN 41).

    Examples
    --------
    >>> householder_flops(6, 3, 3)  # geqrf, m >= n: 2 * 6 * 9 - 2/3 * 27 = 108 - 18
    Fraction(90, 1)
    """
    return Fraction(4 * m * n * k - 2 * (m + n) * k * k) + Fraction(4 * k**3, 3)


def eigh_flops(n: int, *, vectors: bool) -> Fraction:
    """Symmetric eigendecomposition of n x n: 4/3 n^3 (values), 9 n^3 (with vectors)."""
    return (EIGH_VECTORS if vectors else EIGH_VALUES) * n**3


def svd_flops(m: int, n: int, *, vectors: bool, full: bool) -> Fraction:
    """SVD of m x n: the cheaper of Golub-Reinsch and R-SVD (GVL section 8.6).

    Examples
    --------
    >>> svd_flops(6, 4, vectors=False, full=False)  # min(4*6*16 - 4/3*64, 2*6*16 + 2*64) = min(298.67, 320)
    Fraction(896, 3)
    """
    m, n = max(m, n), min(m, n)  # the SVD of A^T: U and V swap
    if not vectors:
        return min(Fraction(4 * m * n * n) - Fraction(4 * n**3, 3), Fraction(2 * m * n * n + 2 * n**3))
    if full and m > n:
        return Fraction(min(4 * m * m * n + 8 * m * n * n + 9 * n**3, 4 * m * m * n + 22 * n**3))
    return Fraction(min(14 * m * n * n + 8 * n**3, 6 * m * n * n + 20 * n**3))


def _matrix(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None or spec.ndim < 2:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a matrix")
    return spec


def _batch(a: TensorSpec) -> int:
    """B: the number of matrices in a [*B, m, n] tensor."""
    return numel(a.shape[:-2])


def _cost(call: AtenCall, per_matrix: Fraction, batch: int, reads: list[TensorSpec]) -> Cost:
    return io_cost(call, round(per_matrix * batch), reads=reads)


def _solution(call: AtenCall, b: TensorSpec) -> TensorSpec:
    return call.outputs[0] if call.outputs else b


@register_cost(["aten.linalg_lu_factor_ex", "aten.linalg_lu"], category=M)
def lu_factor(call: AtenCall) -> Cost:
    a = _matrix(call, 0, "A")
    return _cost(call, lu_flops(*a.shape[-2:]), _batch(a), [a])


@register_cost(["aten._linalg_solve_ex", "aten.linalg_solve"], category=M)
def solve(call: AtenCall) -> Cost:
    # (A [*B, n, n], B [*, n, nrhs] or [*, n]; left): LU of each A, then 2 n^2 per solution column
    # (forward + back substitution). A solution X holds numel(X) / n columns of n, whatever its
    # layout (vector, matrix, left=False), so the solves are 2 n * numel(X).
    a, rhs = _matrix(call, 0, "A"), tensor_arg(call, 1, "B")
    if rhs is None:
        raise ValueError(f"{call.op}: argument 1 (B) is not a tensor")
    n = a.shape[-1]
    flops = lu_flops(n, n) * _batch(a) + 2 * n * _solution(call, rhs).numel
    return io_cost(call, round(flops), reads=[a, rhs])


@register_cost(["aten.linalg_lu_solve"], category=M)
def lu_solve(call: AtenCall) -> Cost:
    # (LU [*, n, n], pivots, B): the two triangular solves only, 2 n^2 per solution column
    lu, pivots, rhs = _matrix(call, 0, "LU"), tensor_arg(call, 1, "pivots"), tensor_arg(call, 2, "B")
    if rhs is None:
        raise ValueError(f"{call.op}: argument 2 (B) is not a tensor")
    reads = [lu, rhs] + ([pivots] if pivots is not None else [])
    return io_cost(call, 2 * lu.shape[-1] * _solution(call, rhs).numel, reads=reads)


@register_cost(["aten.linalg_solve_triangular"], category=M)
def solve_triangular(call: AtenCall) -> Cost:
    # (A [*, n, n] triangular, B; upper, left, unitriangular): n^2 per solution column
    a, rhs = _matrix(call, 0, "self"), tensor_arg(call, 1, "B")
    if rhs is None:
        raise ValueError(f"{call.op}: argument 1 (B) is not a tensor")
    return io_cost(call, a.shape[-1] * _solution(call, rhs).numel, reads=[a, rhs])


@register_cost(["aten.linalg_inv_ex"], category=M)
def inv(call: AtenCall) -> Cost:
    # PyTorch computes A^-1 as linalg_solve(A, I): LU (2/3 n^3) + n right-hand sides (2 n^2 each)
    a = _matrix(call, 0, "A")
    n = a.shape[-1]
    return _cost(call, lu_flops(n, n) + 2 * n**3, _batch(a), [a])


@register_cost(["aten._linalg_det", "aten._linalg_slogdet"], category=M)
def det(call: AtenCall) -> dict[Category, Cost]:
    # LU (matmul), then one pass over U's diagonal (elementwise); the pivots' sign parity is not counted
    a = _matrix(call, 0, "A")
    n, batch = a.shape[-1], _batch(a)
    per_diagonal = SLOGDET_DIAGONAL_FLOPS if call.packet == "aten._linalg_slogdet" else DET_DIAGONAL_FLOPS
    return {M: _cost(call, lu_flops(n, n), batch, [a]), E: Cost(per_diagonal * n * batch)}


@register_cost(["aten.linalg_cholesky_ex"], category=M)
def cholesky(call: AtenCall) -> Cost:
    a = _matrix(call, 0, "self")
    return _cost(call, cholesky_flops(a.shape[-1]), _batch(a), [a])


@register_cost(["aten.linalg_qr"], category=M)
def qr(call: AtenCall) -> Cost:
    # (A [*B, m, n], mode): geqrf, then orgqr forming Q from k = min(m, n) reflectors:
    # "reduced" Q is m x k, "complete" m x m, "r" forms no Q
    a = _matrix(call, 0, "A")
    m, n = a.shape[-2:]
    k = min(m, n)
    mode = call.arg(1, "mode", "reduced")
    flops = householder_flops(m, n, k)
    if mode != "r":
        flops += householder_flops(m, m if mode == "complete" else k, k)
    return _cost(call, flops, _batch(a), [a])


@register_cost(["aten._linalg_eigh"], category=M)
def eigh(call: AtenCall) -> Cost:
    # (A [*B, n, n], UPLO, compute_v). NB: torch.linalg.eigvalsh asks for the vectors too when A may
    # need a gradient or runs under a dispatch mode (as in capture): the graph records, and this
    # costs, what was dispatched
    a = _matrix(call, 0, "A")
    vectors = bool(call.arg(2, "compute_v", True))
    return _cost(call, eigh_flops(a.shape[-1], vectors=vectors), _batch(a), [a])


@register_cost(["aten._linalg_svd"], category=M)
def svd(call: AtenCall) -> Cost:
    # (A [*B, m, n], full_matrices, compute_uv, driver). NB: like eigvalsh, torch.linalg.svdvals asks
    # for U and V when A may need a gradient or runs under a dispatch mode (as in capture)
    a = _matrix(call, 0, "A")
    full, vectors = bool(call.arg(1, "full_matrices", False)), bool(call.arg(2, "compute_uv", True))
    return _cost(call, svd_flops(*a.shape[-2:], vectors=vectors, full=full), _batch(a), [a])
