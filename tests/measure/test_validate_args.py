"""dfx validate's arguments refused in one line, before any warning and before the model runs."""

import warnings

import pytest
import torch

from dfx.errors import DfxError
from dfx.measure.validation import validate


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_no_gpu_is_refused_before_the_profile_warning():
    # `dfx validate --device cuda` printed "warning: --hw host-cpu is a cpu profile, ..." above the error
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(DfxError, match="--device cuda asked for, but torch sees no CUDA GPU"):
            validate("mlp", "host-cpu", device="cuda")
    assert [str(w.message) for w in seen] == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"warmup": -1}, "--warmup must be at least 0, got -1$"),  # it named --repeat too
        ({"repeat": 0}, "--repeat must be at least 1, got 0$"),
        ({"device": "tpu"}, "unknown --device 'tpu'; expected cpu or cuda"),
    ],
)
def test_bad_counts_and_devices_name_their_flag(kwargs, message):
    with pytest.raises(DfxError, match=message):
        validate("mlp", "host-cpu", **kwargs)
