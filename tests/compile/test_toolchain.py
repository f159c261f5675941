"""The toolchain below dfx's compile stage: torch.compile's path to SASS for a GPU (dfx.compile.toolchain)."""

from __future__ import annotations

import json
import subprocess
import sys

from dfx.compile.toolchain import TORCH_COMPILE_AMD_GPU, TORCH_COMPILE_GPU
from dfx.targets import target_for
from dfx.hardware import load_profile
from dfx.schema.compile import read_compile


def _toolchain(hw: str):
    profile = load_profile(hw)
    return target_for(profile).toolchain(profile)


def test_the_gpu_path_runs_from_python_bytecode_to_sass_in_order():
    names = [s.stage for s in _toolchain("h100")]
    order = ["TorchDynamo", "AOTAutograd", "TorchInductor", "Triton frontend", "TritonGPU", "LLVM IR", "PTX", "SASS"]
    positions = [next(i for i, n in enumerate(names) if n.startswith(o)) for o in order]
    assert positions == sorted(positions) and len(set(positions)) == len(order)


def test_each_stage_takes_what_the_one_before_gives():
    # the artefact that links each pair, as torch's and Triton's docs name it
    links = {
        ("TorchDynamo", "AOTAutograd"): "FX graph",
        ("AOTAutograd", "TorchInductor"): "ATen FX graph",
        ("TorchInductor", "Triton frontend (make_ttir)"): "@triton.jit",
        ("Triton frontend (make_ttir)", "TritonGPU (make_ttgir)"): "TTIR",
        ("TritonGPU (make_ttgir)", "LLVM IR (make_llir)"): "TTGIR",
        ("LLVM IR (make_llir)", "PTX (make_ptx)"): "LLVM IR",
        ("PTX (make_ptx)", "SASS in a cubin (make_cubin)"): "PTX",
        ("SASS in a cubin (make_cubin)", "CUDA driver launch"): "cubin",
    }
    stages = {s.stage: s for s in TORCH_COMPILE_GPU}
    pairs = list(zip(TORCH_COMPILE_GPU, TORCH_COMPILE_GPU[1:]))
    assert [(a.stage, b.stage) for a, b in pairs] == list(links)
    for (a, b), artefact in links.items():
        assert artefact in stages[a].gives and artefact in stages[b].takes, (a, b, artefact)
    assert all(s.source for s in TORCH_COMPILE_GPU)


def test_the_amd_path_shares_the_front_and_ends_in_amdgcn_and_an_hsa_code_object():
    # Triton's AMD backend: make_ttir, make_ttgir, make_llir, make_amdgcn, make_hsaco, then HIP
    names = [s.stage for s in _toolchain("amd-mi300x")]
    assert names[:4] == [s.stage for s in TORCH_COMPILE_GPU[:4]]  # Dynamo to Triton's frontend: one path
    assert [n.split(" (")[0] for n in names[4:]] == [
        "TritonGPU",
        "LLVM IR",
        "AMDGCN",
        "HSA code object",
        "HIP runtime launch",
    ]
    links = ["TTIR", "TTGIR", "LLVM IR", "AMDGCN", "HSA code object"]  # what each stage hands the next
    for (a, b), artefact in zip(zip(TORCH_COMPILE_AMD_GPU[3:], TORCH_COMPILE_AMD_GPU[4:]), links):
        assert artefact in a.gives and artefact in b.takes, (a.stage, b.stage, artefact)
    assert not any("PTX" in s.gives or "SASS" in s.gives for s in TORCH_COMPILE_AMD_GPU)
    assert "64" in TORCH_COMPILE_AMD_GPU[4].gives  # wavefronts of 64 lanes, not warps of 32


def test_a_machine_without_torch_compiles_gpu_path_lists_none():
    assert _toolchain("groq-lpu") == () and _toolchain("tpu-v4") == ()


def test_dfx_compile_json_carries_the_toolchain_for_a_gpu_only():
    def doc(hw: str) -> dict:
        run = subprocess.run(
            [sys.executable, "-m", "dfx.cli", "compile", "mlp", "--hw", hw, "--json"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    gpu = doc("h100")
    assert [s["stage"] for s in gpu["toolchain"]] == [s.stage for s in TORCH_COMPILE_GPU]
    assert read_compile(gpu).to_dict() == gpu  # the typed record reads and writes the key back
    assert "toolchain" not in doc("groq-lpu")
