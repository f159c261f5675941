"""The docstring examples of the systolic modules run."""

import doctest

import pytest

import dfx.arch.systolic.chip
import dfx.arch.systolic.conv_layer
import dfx.arch.systolic.model
import dfx.arch.systolic.shard
import dfx.arch.systolic.stepsim


@pytest.mark.parametrize(
    "module",
    [dfx.arch.systolic.chip, dfx.arch.systolic.conv_layer, dfx.arch.systolic.model, dfx.arch.systolic.shard,
     dfx.arch.systolic.stepsim],
    ids=lambda m: m.__name__,
)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
