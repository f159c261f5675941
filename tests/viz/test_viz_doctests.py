"""The docstring examples of dfx.viz run."""

import doctest

import pytest

import dfx.viz.document
import dfx.viz.graph
import dfx.viz.layers


@pytest.mark.parametrize("module", [dfx.viz.document, dfx.viz.graph, dfx.viz.layers], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
