"""The docstring examples of the hardware, roofline and schedule modules run."""

import doctest

import pytest

import dfx.hardware
import dfx.hardware.loader
import dfx.hardware.units
import dfx.roofline.bound
import dfx.schedule.dag


@pytest.mark.parametrize(
    "module",
    [dfx.hardware, dfx.hardware.loader, dfx.hardware.units, dfx.roofline.bound, dfx.schedule.dag],
    ids=lambda m: m.__name__,
)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
