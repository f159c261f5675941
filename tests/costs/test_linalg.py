"""Dense linear algebra: textbook operation counts (LAWN 41, Golub and Van Loan), batched, ``matmul``.

Counts are leading terms per matrix, times the batch, rounded once per call. FlopCounterMode has no
formula for any linalg op (it counts 0); the tests accept 0 or our value.
"""

from fractions import Fraction

import pytest
import torch
import torch.nn as nn

from dfx.costs import Cost, rule_for
from dfx.costs.rules_linalg import householder_flops, lu_flops, svd_flops

from ._helpers import call, cost, costed, flop_counter_total, spec

A = spec(3, 6, 4)  # 3 matrices of 6 x 4
S = spec(3, 4, 4)  # 3 square matrices of 4 x 4
I32 = "int32"


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _spd(*batch: int, n: int = 4) -> torch.Tensor:
    a = torch.randn(*batch, n, n)
    return a @ a.mT + n * torch.eye(n)


def test_textbook_counts():
    assert lu_flops(4, 4) == Fraction(2, 3) * 64  # 2/3 n^3
    assert lu_flops(6, 4) == lu_flops(4, 6) == 6 * 16 - Fraction(64, 3)  # m n^2 - n^3/3
    assert householder_flops(6, 4, 4) == 2 * 6 * 16 - Fraction(2, 3) * 64  # geqrf: 2 m n^2 - 2/3 n^3
    # complete Q of a 6 x 4 A: 4 (m^2 n - m n^2 + n^3/3) = 4 (144 - 96 + 64/3) (GVL section 5.1.6)
    assert householder_flops(6, 6, 4) == 4 * (144 - 96 + Fraction(64, 3))


@pytest.mark.parametrize(
    "m, n, vectors, full, expected",
    [
        # values only, 6 x 4: Golub-Reinsch 4*6*16 - 4/3*64 = 298.67 < R-SVD 2*6*16 + 2*64 = 320
        (6, 4, False, False, 384 - Fraction(256, 3)),
        # reduced U, V, 6 x 4: GR 14*6*16 + 8*64 = 1856, R-SVD 6*6*16 + 20*64 = 1856 (m = 1.5 n: a tie)
        (6, 4, True, False, 1856),
        # reduced, tall 8 x 2: GR 14*8*4 + 8*8 = 512 > R-SVD 6*8*4 + 20*8 = 352
        (8, 2, True, False, 352),
        # square 4 x 4: GR 22 n^3 = 1408 < R-SVD 26 n^3; full is the same for a square A
        (4, 4, True, False, 1408),
        (4, 4, True, True, 1408),
        # full U, V, 6 x 4: GR 4*36*4 + 8*6*16 + 9*64 = 1920 < R-SVD 576 + 22*64 = 1984
        (6, 4, True, True, 1920),
        # a wide 4 x 6 is the SVD of its 6 x 4 transpose
        (4, 6, True, True, 1920),
    ],
)
def test_svd_counts(m, n, vectors, full, expected):
    assert svd_flops(m, n, vectors=vectors, full=full) == expected


def test_batched_svd_call():
    # _linalg_svd of (3, 6, 4), reduced with vectors: 3 * 1856 = 5568 matmul FLOPs. Reads A, 72 * 4 B;
    # writes U (3, 6, 4) 288 B, S (3, 4) 48 B, Vh (3, 4, 4) 192 B
    svd = call("aten._linalg_svd.default", A, outputs=(spec(3, 6, 4), spec(3, 4), spec(3, 4, 4)))
    c = cost(svd)
    assert c.cost == Cost(5568, 288, 288 + 48 + 192)
    assert c.category.value == "matmul"
    # values only: U and Vh are empty; 3 * 896/3 = 896
    values = call("aten._linalg_svd.default", A, False, False, outputs=(spec(0), spec(3, 4), spec(0)))
    assert cost(values).cost == Cost(896, 288, 48)


@pytest.mark.parametrize(
    "mode, flops",
    [
        # geqrf 2*6*16 - 2/3*64 = 149.33; thin Q (orgqr 6 x 4 from 4 reflectors) the same: 3 * 298.67 = 896
        ("reduced", 896),
        # complete Q: 149.33 + 277.33 = 426.67 per matrix, 3 * 426.67 = 1280
        ("complete", 1280),
        # R only: 3 * 149.33 = 448
        ("r", 448),
    ],
)
def test_batched_qr(mode, flops):
    assert cost(call("aten.linalg_qr.default", A, mode, outputs=(A, spec(3, 4, 4)))).cost.flops == flops


def test_batched_eigh():
    # 3 x 9 n^3 = 3 * 576 = 1728 with vectors; 3 x 4/3 n^3 = 3 * 85.33 = 256 values only
    out = (spec(3, 4), S)
    assert cost(call("aten._linalg_eigh.default", S, outputs=out)).cost.flops == 1728
    assert cost(call("aten._linalg_eigh.default", S, "L", False, outputs=(spec(3, 4), spec(0)))).cost.flops == 256


@pytest.mark.parametrize(
    "a, b, x, flops",
    [
        # LU 3 * 2/3 * 64 = 128; 2 n^2 per column: 2 * 16 * (3 * 2 columns) = 192 -> 320
        (S, spec(3, 4, 2), spec(3, 4, 2), 320),
        # vector right-hand sides, one column per matrix: 128 + 2 * 16 * 3 = 224
        (S, spec(3, 4), spec(3, 4), 224),
        # one A, broadcast over 3 right-hand-side batches: LU once, 42.67, + 192 = 234.67 -> 235
        (spec(4, 4), spec(3, 4, 2), spec(3, 4, 2), 235),
    ],
)
def test_batched_solve(a, b, x, flops):
    outs = (x, spec(*a.shape), spec(*a.shape[:-1], dtype=I32), spec(*a.shape[:-2], dtype=I32))
    assert cost(call("aten._linalg_solve_ex.default", a, b, outputs=outs)).cost.flops == flops


def test_triangular_and_lu_solves():
    lu, b, x = S, spec(3, 4, 2), spec(3, 4, 2)
    # two triangular solves, 2 n^2 per column: 2 * 16 * 6 = 192
    assert cost(call("aten.linalg_lu_solve.default", lu, spec(3, 4, dtype=I32), b, outputs=(x,))).cost.flops == 192
    # one triangular solve, n^2 per column: 16 * 6 = 96
    assert cost(call("aten.linalg_solve_triangular.default", lu, b, outputs=(x,), upper=True)).cost.flops == 96
    # getrf of 2 x (6 x 4): 2 * (6 * 16 - 64/3) = 149.33 -> 149
    factor = call(
        "aten.linalg_lu_factor_ex.default",
        spec(2, 6, 4),
        outputs=(spec(2, 6, 4), spec(2, 4, dtype=I32), spec(2, dtype=I32)),
    )
    assert cost(factor).cost.flops == 149


def test_batched_inverse_determinant_cholesky():
    info = spec(3, dtype=I32)
    # inverse as PyTorch computes it, solve(A, I): 3 * (2/3 * 64 + 2 * 64) = 3 * 170.67 = 512
    assert cost(call("aten.linalg_inv_ex.default", S, outputs=(S, info))).cost.flops == 512
    # det: LU 3 * 42.67 = 128 (matmul) + the product of U's diagonal, 3 * 4 = 12 (elementwise)
    det = cost(call("aten._linalg_det.default", S, outputs=(spec(3), S, spec(3, 4, dtype=I32))))
    assert dict(det.flops_by_category) == {"matmul": 128, "elementwise": 12}
    assert det.category.value == "matmul"
    # slogdet: abs, log, add per diagonal element: 3 * 3 * 4 = 36
    slogdet = cost(call("aten._linalg_slogdet.default", S, outputs=(spec(3), spec(3), S, spec(3, 4, dtype=I32))))
    assert dict(slogdet.flops_by_category) == {"matmul": 128, "elementwise": 36}
    # Cholesky: 3 * 64/3 = 64
    assert cost(call("aten.linalg_cholesky_ex.default", S, outputs=(S, info))).cost.flops == 64


def test_captured_batched_linalg():
    # A model using each op on a batch of 3 SPD 4 x 4 matrices (and a 3 x 6 x 4 batch):
    #   solve(S, B[3, 4, 2]) 320, inv 512, det 128 + 12, cholesky 64, eigh 1728,
    #   qr reduced 896, svd reduced 5568; _linalg_check_errors is bookkeeping (0)
    #   matmul: 320 + 512 + 128 + 64 + 1728 + 896 + 5568 = 9216; elementwise: 12
    def fn(s, b, a):
        q, r = torch.linalg.qr(a)
        u, sv, vh = torch.linalg.svd(a, full_matrices=False)
        w, v = torch.linalg.eigh(s)
        return (
            torch.linalg.solve(s, b),
            torch.linalg.inv(s),
            torch.linalg.det(s),
            torch.linalg.cholesky(s),
            w,
            v,
            q,
            r,
            u,
            sv,
            vh,
        )

    args = (_spd(3), torch.randn(3, 4, 2), torch.randn(3, 6, 4))
    cg = costed(Fn(fn), args)  # fails on any unknown op
    by = cg.flops_by_category()
    assert (by["matmul"], by["elementwise"]) == (9216, 12)
    assert flop_counter_total(fn, *args) in (0, 9216 + 12)  # FlopCounterMode: no linalg formula (0)
    assert rule_for("aten._linalg_check_errors.default").category.value == "none"
