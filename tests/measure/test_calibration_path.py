"""--calibration given a folder or a device is named as such, not as a missing file."""

import os

import pytest

from dfx.errors import DfxError
from dfx.measure.machine import load_calibration


def test_what_the_calibration_path_is_instead(tmp_path):
    fix = r"; write it with `dfx calibrate --json > FILE`$"
    with pytest.raises(DfxError, match=f"--calibration {tmp_path / 'none.json'}: no such file{fix}"):
        load_calibration(tmp_path / "none.json")
    with pytest.raises(DfxError, match=f"--calibration {tmp_path}: a folder{fix}"):  # it said "no such file"
        load_calibration(tmp_path)
    if os.path.exists("/dev/zero"):
        with pytest.raises(DfxError, match=f"--calibration /dev/zero: not a regular file{fix}"):
            load_calibration("/dev/zero")
