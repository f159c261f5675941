"""The docstring examples of the loss, FFT, linalg and reduction rules run."""

import doctest

import pytest

import dfx.costs.rules_fft
import dfx.costs.rules_linalg
import dfx.costs.rules_loss
import dfx.costs.rules_reduce


@pytest.mark.parametrize(
    "module",
    [dfx.costs.rules_fft, dfx.costs.rules_linalg, dfx.costs.rules_loss, dfx.costs.rules_reduce],
    ids=lambda m: m.__name__,
)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
