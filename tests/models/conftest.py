"""Fixtures shared by the model-zoo tests."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a whole multi-billion-parameter model (seconds, not milliseconds)")


def _flop_counter_total(spec) -> int:
    """FlopCounterMode's count for one forward of ``spec`` on the meta device.

    The math SDPA backend is forced: FlopCounterMode has no formula for the CPU flash kernel and
    counts it as 0 (case PB-01). On meta tensors SDPA lowers to the math path's two bmm anyway.
    """
    counter = FlopCounterMode(display=False)
    with sdpa_kernel(SDPBackend.MATH), torch.no_grad(), counter:
        spec.model(*spec.args, **spec.kwargs)
    return counter.get_total_flops()


@pytest.fixture
def flop_counter_total():
    """The independent reference: ``flop_counter_total(spec) -> int``."""
    return _flop_counter_total


@pytest.fixture
def dfx_matmul_flops():
    """``dfx_matmul_flops(graph) -> int`` from ``dfx.costs.annotate``; skips while it is not written."""
    try:
        from dfx.costs import annotate
    except ImportError as exc:
        pytest.skip(f"dfx.costs.annotate is not importable yet ({exc}); the cost annotator lands separately")
    return lambda graph: annotate(graph).flops_by_category()["matmul"]
