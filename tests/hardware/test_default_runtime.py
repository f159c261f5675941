"""Each profile's default runtime (``default_runtime``): validated, sourced, resolved, shown by ``dfx hw show``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dfx.hardware import HardwareProfileError, Kind, list_profiles, load_profile, parse_profile

GPUS = [p.id for p in list_profiles() if p.kind is Kind.GPU]


def test_every_gpu_profile_has_a_sourced_default_runtime():
    # a GPU is run from a framework or a serving engine that queues its kernels (the profiles' source:
    # PyTorch's CUDA semantics, asynchronous execution), so each names one of its runtimes as the default
    assert GPUS, "no GPU profile shipped"
    for pid in GPUS:
        p = load_profile(pid)
        assert p.default_runtime == "back-to-back", pid
        assert p.default_runtime in p.runtimes
        assert "Asynchronous execution" in p.source_of("default_runtime")


def test_the_default_runtime_of_every_gpu_profile_is_named_in_hw_show():
    for pid in GPUS:
        result = subprocess.run(
            [sys.executable, "-m", "dfx.cli", "hw", "show", pid], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        flat = " ".join(result.stdout.split())  # the table may wrap
        assert f"Runtimes (--runtime NAME; default: {load_profile(pid).default_runtime})" in flat, pid
        for name in (*load_profile(pid).runtimes, "ideal"):
            assert name in flat, (pid, name)


def test_runtime_name_resolves_default_ideal_and_named():
    a100 = load_profile("a100")
    assert a100.runtime_name(None) == "back-to-back"
    assert a100.runtime_name("ideal") is None
    assert a100.runtime_name("pytorch-eager-timed") == "pytorch-eager-timed"
    groq = load_profile("groq-lpu")  # no runtimes: the ideal roofline by default
    assert groq.runtime_name(None) is None and groq.runtime_name("ideal") is None
    with pytest.raises(
        HardwareProfileError, match="no runtime 'tensorrt'; its runtimes: back-to-back, pytorch-eager-timed, ideal"
    ):
        a100.runtime_name("tensorrt")


def test_a_default_runtime_must_name_a_runtime_and_have_a_source(h100_data):
    data = dict(h100_data, default_runtime="tensorrt")
    with pytest.raises(HardwareProfileError, match="default_runtime 'tensorrt' names no entry of runtimes"):
        parse_profile(data, "mine")
    data = dict(h100_data, default_runtime="pytorch-eager-timed")
    data["sources"] = {k: v for k, v in h100_data["sources"].items() if k != "default_runtime"}
    with pytest.raises(HardwareProfileError, match="default_runtime has no source"):
        parse_profile(data, "mine")
    data = dict(h100_data, runtimes={**h100_data["runtimes"], "ideal": h100_data["runtimes"]["back-to-back"]})
    with pytest.raises(HardwareProfileError, match="'ideal' is reserved"):
        parse_profile(data, "mine")
