"""dfx's GPU fusion against Inductor's own kernel grouping (torch.compile's scheduler, on the CPU)."""

import pytest

from dfx.capture import capture
from dfx.capture.inductor import inductor_kernels
from dfx.targets import compile_for
from dfx.compile.compare import compare_groups
from dfx.costs import annotate
from dfx.hardware import load_profile

from .inductor_cases import small_models

MODELS = small_models()


@pytest.fixture(scope="module")
def comparisons():
    out = {}
    for name, (model, args) in MODELS.items():
        costed = annotate(capture(model, args, name=name))
        program = compile_for(costed, load_profile("h100"))
        kernels = inductor_kernels(model, args)
        groups = [k.sources for k in kernels if k.kind != "extern"]
        out[name] = (program, compare_groups(program, costed, groups), kernels)
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_dfx_fusion_groups_agree_with_inductor_on_90_percent_of_non_gemm_operators(comparisons, name):
    program, comparison, kernels = comparisons[name]
    assert len(comparison.nodes) >= 5  # every model has norms, activations and residual adds to compare
    assert comparison.fraction >= 0.9, [d.explain() for d in comparison.disagreements]
    # the same number of library calls on both sides: every GEMM/conv/SDPA stands alone in dfx and Inductor
    dfx_library = sum(k.kind.value in ("gemm", "attention") for k in program.kernels)
    inductor_library = sum(k.kind == "extern" and "MultiOutput" not in k.ops[0] for k in kernels)
    assert dfx_library == inductor_library


def test_llama_rope_fuses_q_and_k_only_when_they_have_the_same_size(comparisons):
    # Llama-2 (MHA): q and k RoPE iterate over the same elements and share cos/sin reads: one kernel.
    # Llama-3 (GQA, 2 KV heads of 4): k is half q's size: Inductor keeps two kernels, and so does dfx.
    def rope_kernels(name):
        program = comparisons[name][0]
        return [k.nodes for k in program.kernels if "cat" in k.nodes or "cat_1" in k.nodes]

    assert len(rope_kernels("llama-layer")) == 1
    assert len(rope_kernels("llama3-8b-layer")) == 2
