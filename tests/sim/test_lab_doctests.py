"""The docstring examples of the lab's modules run: hand-made DAGs, quick profiles, input shapes."""

import doctest

import pytest

import dfx.hardware.quick
import dfx.ir.spec
import dfx.sim.handmade


@pytest.mark.parametrize("module", [dfx.sim.handmade, dfx.hardware.quick, dfx.ir.spec], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
