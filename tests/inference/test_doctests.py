"""The Examples in the inference, precision and decode-step docstrings run as written."""

import doctest

import pytest

import dfx.costs.precision
import dfx.inference.phases
import dfx.models.decode


@pytest.mark.parametrize("module", [dfx.inference.phases, dfx.costs.precision, dfx.models.decode])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
