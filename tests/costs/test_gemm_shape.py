"""The GEMM a contraction runs (dfx.costs.terms.gemm_shape): a weight broadcast over a bmm's batch
(stride 0, as torch's matmul traces ``expand`` + ``bmm``) is one GEMM with the batch in its rows."""

from dfx.arch.spatial.tsp import TspOrganisation, contraction_cycles, mxm_cycles
from dfx.arch.systolic.nodes import Gemm, call_gemms
from dfx.costs.terms import gemm_operands, gemm_shape
from dfx.ir import TensorSpec

from ._helpers import call, spec

# o_proj's bmm in batched decode (batch B = 8, hidden 4096): the attention output after its transpose,
# x[8, 1, 4096] with stride [4096, 128, 1], times weight.t() expanded to [8, 4096, 4096], stride [0, 1, 4096]
X = TensorSpec((8, 1, 4096), "bfloat16", (4096, 128, 1))
W_EXPANDED = TensorSpec((8, 4096, 4096), "bfloat16", (0, 1, 4096))
OUT = TensorSpec((8, 1, 4096), "bfloat16", (4096, 4096, 1))


def test_a_broadcast_weight_folds_the_batch_into_the_rows():
    # one [8 * 1, 4096] @ [4096, 4096]: M = 8, K = 4096, N = 4096, batch 1
    assert gemm_shape(X, W_EXPANDED) == (8, 4096, 4096, 1)


def test_distinct_weights_stay_a_batch():
    # a contiguous [8, 4096, 4096] holds 8 different matrices: 8 x [1, 4096] @ [4096, 4096]
    assert gemm_shape(X, spec(8, 4096, 4096, dtype="bfloat16")) == (1, 4096, 4096, 8)


def test_a_broadcast_left_operand_folds_into_the_columns():
    # a[4, 32] shared by 3 matrices b[3, 32, 16]: [4, 32] @ [32, 3 * 16] = (4, 32, 48, 1)
    assert gemm_shape(spec(4, 32), spec(3, 32, 16)) == (4, 32, 48, 1)
    # a expanded to [3, 4, 32] with stride 0 on the batch: the same
    assert gemm_shape(TensorSpec((3, 4, 32), "float32", (0, 32, 1)), spec(3, 32, 16)) == (4, 32, 48, 1)


def test_size_one_batch_and_unknown_strides():
    assert gemm_shape(spec(1, 4, 8), spec(1, 8, 5)) == (4, 8, 5, 1)  # a batch of 1 is one GEMM
    # no strides recorded: both operands taken as real batches, 2 x [4, 8] @ [8, 5]
    assert gemm_shape(TensorSpec((2, 4, 8), "float32"), TensorSpec((2, 8, 5), "float32")) == (4, 8, 5, 2)
    assert gemm_shape(spec(4, 8), spec(9, 5)) is None  # inner dims differ


def test_the_flops_are_unchanged_by_the_fold():
    m, k, n, batch = gemm_shape(X, W_EXPANDED)
    assert 2 * batch * m * k * n == 2 * 8 * 1 * 4096 * 4096  # 2*B*M*K*N of the bmm


def test_call_gemms_of_a_broadcast_bmm():
    bmm = call("aten.bmm.default", X, W_EXPANDED, outputs=(OUT,))
    assert gemm_operands(bmm) == (X, W_EXPANDED)
    assert call_gemms(bmm) == [Gemm(8, 4096, 4096, 1)]  # as mm([8, 4096], [4096, 4096]) would give
    mm = call("aten.mm.default", spec(8, 4096, dtype="bfloat16"), spec(4096, 4096, dtype="bfloat16"))
    assert call_gemms(bmm) == call_gemms(mm)


def test_groq_mxm_cycles_of_a_broadcast_bmm_equal_the_mm():
    # one weight: ceil(4096/320)^2 = 13 * 13 = 169 tiles on 4 planes = 43 rounds, 8 rows each = 344
    org = TspOrganisation(9e8, 20, 4, 320, 320, 5120, 88, 230686720, 8e13, 4.8e11, 3e-6)
    assert contraction_cycles((8, 4096), (4096, 4096), org) == 43 * 8

    class _Node:  # the two fields mxm_cycles reads
        def __init__(self, calls):
            self.node = type("N", (), {"aten_calls": calls})()
            self.flops_by_category = (("matmul", 2 * 8 * 4096 * 4096),)
            self.dtype = "int8"

    bmm = _Node((call("aten.bmm.default", X, W_EXPANDED, outputs=(OUT,)),))
    assert mxm_cycles(bmm, org) == 43 * 8  # not 8 x 169 tiles of 1 row: ceil(1352 / 4) = 338 rounds
