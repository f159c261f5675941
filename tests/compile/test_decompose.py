"""Decompositions per target (issue 35): Spyre splits softmax, norms and SiLU into kernels; the compiled
program keeps intermediates in LX where they fit, the eager one sends every one through LPDDR5.

A softmax over a (512, 1024) fp16 tensor on one Spyre core: x is 512 x 1024 x 2 B = 1,048,576 B, one
value per row is 512 x 2 B = 1,024 B. The steps (torch-spyre scratchpad_planning.md: max -> sub ->
exp -> sum -> div) and what each moves:

    amax  reads x               writes a row vector     1 MiB + 1 KiB
    sub   reads x, amax         writes a full tensor    2 MiB + 1 KiB
    exp   reads sub             writes a full tensor    2 MiB
    sum   reads exp             writes a row vector     1 MiB + 1 KiB
    div   reads exp, sum        writes the output       2 MiB + 1 KiB

Eager: all of it off chip, 8 MiB + 4 KiB = 8,392,704 B (the document's baseline, "8 passes").
Compiled: x read once and the output written once off chip, 2 MiB = 2,097,152 B; the rest
(6 MiB + 4 KiB = 6,295,552 B) in LX, since x (1 MiB) and then sub and exp (in place) fit one core's
~1.55 MB of usable LX.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import dfx  # noqa: E402
from dfx.targets import compile_for, eager_program, target_for  # noqa: E402
from dfx.compile.decompose import SPYRE_LX_USABLE_FRACTION  # noqa: E402
from dfx.hardware import load_profile, restrict_to_cores  # noqa: E402

MIB, KIB = 1 << 20, 1 << 10


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Norms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(64)
        self.rms = torch.nn.RMSNorm(64)

    def forward(self, x):
        return torch.nn.functional.silu(self.rms(self.ln(x)))


def _costed(module, *shape, dtype=torch.float16):
    return dfx.analyze(module, (torch.zeros(*shape, dtype=dtype),), hardware=[]).costed


@pytest.fixture(scope="module")
def one_core():
    return restrict_to_cores(load_profile("ibm-spyre"), 1)


@pytest.fixture(scope="module")
def softmax_512():
    return _costed(Softmax(), 512, 1024)


def _passes(hw: str):
    profile = load_profile(hw)
    return target_for(profile).passes(profile)


def test_spyre_pipeline_splits_after_fusion_and_gpus_do_not():
    assert [p.name for p in _passes("ibm-spyre")][:3] == ["fusion", "decompose", "tiling"]
    assert "decompose" not in [p.name for p in _passes("h100")]
    assert "decompose" not in [p.name for p in _passes("groq-lpu")]


def test_softmax_is_five_kernels_with_the_node_flops_split_evenly(softmax_512, one_core):
    program = compile_for(softmax_512, one_core)
    split = [k for k in program.kernels if k.nodes == ("softmax",)]
    assert [k.name.split(".")[-1] for k in split] == ["amax", "sub", "exp", "sum", "div"]
    assert [k.kind.value for k in split] == ["reduction", "pointwise", "pointwise", "reduction", "pointwise"]
    # 5 FLOPs per element (docs/cost-model.md), one per step: 524,288 each, 2,621,440 in all
    assert [k.flops for k in split] == [524_288] * 5
    assert sum(k.compute_share for k in split) == pytest.approx(1.0)
    # each step waits for the steps whose output it reads
    amax, sub, exp, sum_, div = (k.name for k in split)
    assert dict((k.name, k.deps) for k in split)[div] == (exp, sum_)


def test_eager_sends_every_intermediate_off_chip_and_compiled_keeps_them_in_lx(softmax_512, one_core):
    eager = eager_program(softmax_512, one_core)
    compiled = compile_for(softmax_512, one_core)
    assert eager.offchip_bytes == 8 * MIB + 4 * KIB  # 8,392,704 B
    assert sum(k.onchip_bytes for k in eager.kernels) == 0
    assert compiled.offchip_bytes == 2 * MIB
    assert sum(k.onchip_bytes for k in compiled.kernels) == 6 * MIB + 4 * KIB
    notes = " ".join(next(s for s in compiled.stages if s.name == "decompose").notes)
    for tensor, nbytes in (("x", MIB), ("amax", KIB), ("sub", MIB), ("exp", MIB), ("sum", KIB)):
        assert f"{tensor} {nbytes:,} B in LX" in notes


def test_too_big_for_one_core_spills_the_full_size_intermediates(one_core):
    # (2048, 1024) fp16: x 4 MiB > 1,625,600 B of usable LX, so x is read twice off chip, sub and exp
    # are written and read back off chip; the row vectors (4 KiB) stay in LX.
    # off chip: x 2 x 4 + sub 2 x 4 + exp 2 x 4 (written, then read by sum and by div: 3 x 4) ...
    #   amax: x 4;  sub: x 4 + sub 4;  exp: sub 4 + exp 4;  sum: exp 4;  div: exp 4 + out 4  = 32 MiB
    costed = _costed(Softmax(), 2048, 1024)
    assert 4 * MIB > 2_000_000 * SPYRE_LX_USABLE_FRACTION
    compiled = compile_for(costed, one_core)
    assert compiled.offchip_bytes == 32 * MIB
    notes = " ".join(next(s for s in compiled.stages if s.name == "decompose").notes)
    assert f"sub {4 * MIB:,} B in LPDDR5" in notes and f"amax {4 * KIB:,} B in LX" in notes
    # on all 32 cores (64 MB of LX) the same softmax fits: 8 MiB off chip, as the document's stage 4
    whole = compile_for(costed, load_profile("ibm-spyre"))
    assert whole.offchip_bytes == 8 * MIB


def test_norms_and_silu_split_as_torch_spyre_lowers_them():
    costed = _costed(Norms(), 8, 64, dtype=torch.float32)
    program = compile_for(costed, load_profile("ibm-spyre"))
    steps = {}
    for k in program.kernels:
        steps.setdefault(k.nodes[0], []).append(k.name.split(".")[-1])
    by_kind = {tuple(v) for v in steps.values()}
    assert ("exx2", "layernormscale", "layernormnorm") in by_kind
    assert ("pow", "mean", "add", "rsqrt", "mul", "mul_weight") in by_kind
    assert ("sigmoid", "mul") in by_kind
    for node in steps:  # the steps' FLOPs add up to the node's
        assert sum(k.flops for k in program.kernels if k.nodes == (node,)) == costed[node].cost.flops


def test_makespans_follow_the_bytes_on_one_core(softmax_512, one_core):
    off = one_core.off_chip_level().bandwidth_bytes_per_s  # 150 GB/s
    lx = one_core.level("LX").bandwidth_bytes_per_s
    compute = 524_288 / one_core.peak_flop_per_s["float16"]  # one step's FLOPs at 75 / 32 TFLOP/s
    eager = dfx.analyze(
        Softmax(), (torch.zeros(512, 1024, dtype=torch.float16),), hardware=[one_core], execution_model="eager"
    ).hardware[0]
    compiled = dfx.analyze(Softmax(), (torch.zeros(512, 1024, dtype=torch.float16),), hardware=[one_core]).hardware[0]
    # eager: every step memory-bound off chip (op_overhead_s is 0 on Spyre): 8,392,704 B / 150 GB/s
    assert compute < MIB / off
    assert eager.latency_s == pytest.approx((8 * MIB + 4 * KIB) / off)
    # compiled, step by step: max(off-chip bytes / 150 GB/s, LX bytes / LX bandwidth)
    expected = (
        max(MIB / off, KIB / lx)  # amax
        + (2 * MIB + KIB) / lx  # sub
        + 2 * MIB / lx  # exp
        + (MIB + KIB) / lx  # sum
        + max(MIB / off, (MIB + KIB) / lx)  # div
    )
    assert compiled.latency_s == pytest.approx(expected)
    assert compiled.latency_s != pytest.approx(eager.latency_s)


SOFTMAX_FILE = "import torch\n\nclass Softmax(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n"


def _dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=600)


def test_cli_cores_1_eager_and_compiled_differ_and_compile_names_kernels_and_residency(tmp_path):
    model = tmp_path / "sm.py"
    model.write_text(SOFTMAX_FILE)
    spec = f"{model}:Softmax"
    common = ("--input-shape", "512,1024", "--dtype", "fp16", "--hw", "ibm-spyre", "--cores", "1", "--no-cache")
    times = {}
    for em in ("eager", "compiled"):
        result = _dfx("analyze", spec, *common, "--execution-model", em, "--json")
        assert result.returncode == 0, result.stderr
        hw = json.loads(result.stdout)["hardware"]
        assert list(hw) == ["ibm-spyre-1of32"]
        times[em] = hw["ibm-spyre-1of32"]["makespan_s"]
    assert times["eager"] == pytest.approx((8 * MIB + 4 * KIB) / 150e9)
    assert times["compiled"] < times["eager"] / 2  # 2 of the 8 passes off chip, the rest in LX
    result = _dfx(
        "compile", spec, "--input-shape", "512,1024", "--dtype", "fp16", "--hw", "ibm-spyre", "--cores", "1", "--json"
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [k["name"] for k in doc["kernels"]] == [f"k0_softmax.{s}" for s in ("amax", "sub", "exp", "sum", "div")]
    assert "writes sub (1,048,576 B) to LX" in doc["kernels"][1]["reason"]
    assert any("exp 1,048,576 B in LX" in n for s in doc["stages"] for n in s["notes"])
