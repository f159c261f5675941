"""The docstring examples of the measurement modules run (interpolation, reuse gaps, drift, conv factor)."""

import doctest

import pytest

import dfx.measure.cache_model
import dfx.measure.comparison
import dfx.measure.machine
import dfx.measure.microbench
import dfx.measure.timing
import dfx.measure.validation


@pytest.mark.parametrize(
    "module",
    [dfx.measure.cache_model, dfx.measure.comparison, dfx.measure.machine, dfx.measure.microbench, dfx.measure.timing,
     dfx.measure.validation],
    ids=lambda m: m.__name__,
)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
