"""Graph text at any size from a grid of sizes (dfx.ir.polytext), checked against closed forms."""

from __future__ import annotations

import pytest

from dfx.ir.polytext import NotPolynomial, poly_text


def _text(b: int, s: int) -> str:
    # what a graph holds: a [B, S, 768] shape, a [B*S, 768] view, a [B, 12, S, S] score's strides
    # (12*S*S, S*S, S, 1) and its bytes 2*B*12*S*S; names and floats that never change
    return (
        f'{{"name": "mul_7", "eps": 1e-05, "shape": [{b}, {s}, 768], "view": [{b * s}, 768], '
        f'"stride": [{12 * s * s}, {s * s}, {s}, 1], "bytes": {2 * b * 12 * s * s}}}'
    )


def test_every_integer_of_degree_one_in_batch_and_two_in_seq_is_exact_off_the_grid():
    grid = [[2, 3], [8, 16, 24]]
    at = poly_text({(b, s): _text(b, s) for b in grid[0] for s in grid[1]}, grid)
    for b, s in [(16, 128), (4, 9), (2, 1000), (7, 8)]:
        assert at(b, s) == _text(b, s)


def test_a_higher_degree_than_the_grid_carries_comes_out_wrong_which_is_why_callers_check():
    # s**3 through s = 1, 2, 3 by a quadratic: at 4 it gives 64 - (4-1)(4-2)(4-3) = 58, not 64
    at = poly_text({(s,): f"[{s**3}]" for s in (1, 2, 3)}, [[1, 2, 3]])
    assert at(4) == "[58]"


def test_refusals():
    with pytest.raises(NotPolynomial):  # the texts differ in more than integers
        poly_text({(1,): '{"op": "mm"}', (2,): '{"op": "bmm"}'}, [[1, 2]])
    with pytest.raises(NotPolynomial):  # a grid point without a sample
        poly_text({(1,): "[1]"}, [[1, 2]])
    half = poly_text({(2,): "[1]", (4,): "[2]"}, [[2, 4]])  # s // 2 read as the line s / 2
    assert half(6) == "[3]"
    with pytest.raises(NotPolynomial):  # 5 / 2 is not whole
        half(5)
