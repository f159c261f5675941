"""Export documents for the picture tests: a real one (the built-in MLP) and hand-built ones."""

from __future__ import annotations

import copy
from typing import Any

import pytest

PROFILES = ["nvidia-h100-sxm", "ibm-spyre"]


@pytest.fixture(scope="session")
def mlp_analysis():
    """``dfx.analyze("mlp", dtype="fp32")`` on a GPU and a dataflow accelerator.

    fp32 because the roofline tests read Spyre's fallback from fp32 (it lists no fp32 peak) and the
    H100's own fp32 peak (66.9 TFLOP/s).
    """
    from dfx.analysis import analyze

    return analyze("mlp", hardware=PROFILES, dtype="fp32")


@pytest.fixture(scope="session")
def mlp_doc(mlp_analysis) -> dict[str, Any]:
    """The MLP's export document."""
    return mlp_analysis.to_dict()


@pytest.fixture(scope="session")
def mlp_pictures(mlp_doc):
    from dfx.viz import render_pictures

    return render_pictures(copy.deepcopy(mlp_doc))
