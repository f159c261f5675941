"""Placement: how many of a machine's cores each kernel occupies, per machine kind."""

import pytest

from dfx.compile import compile_program, core_count
from dfx.targets import compile_for, target_for
from dfx.compile.placement import kernel_cores
from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec


def mm_graph(m: int, k: int, n: int, *, relu: bool = False, dtype: str = "bfloat16") -> Graph:
    """x [m, k] @ w [k, n] (-> relu) -> output."""
    x, w, y = TensorSpec((m, k), dtype), TensorSpec((k, n), dtype), TensorSpec((m, n), dtype)
    nodes = [
        Node("x", "placeholder", "x", outputs=(x,), input_kind="input"),
        Node("w", "placeholder", "w", outputs=(w,), input_kind="input"),
        Node(
            "mm",
            "call_function",
            "aten.mm.default",
            inputs=(Edge("x"), Edge("w")),
            outputs=(y,),
            aten_calls=(AtenCall("aten.mm.default", (x, w), (), (y,)),),
        ),
    ]
    last = "mm"
    if relu:
        nodes.append(
            Node(
                "relu",
                "call_function",
                "aten.relu.default",
                inputs=(Edge("mm"),),
                outputs=(y,),
                aten_calls=(AtenCall("aten.relu.default", (y,), (), (y,)),),
            )
        )
        last = "relu"
    nodes.append(Node("output", "output", "output", inputs=(Edge(last),)))
    return Graph(name="mm", nodes=tuple(nodes))


def test_core_counts_come_from_the_profiles():
    # H100 132 SMs, A100 108 SMs, Spyre 32 AI cores, TPU v4 2 TensorCores, Groq 20 superlanes,
    # Cerebras WSE-3 900,000 usable cores (each cited in its profile's sources)
    counts = {
        p: core_count(load_profile(p))
        for p in ("nvidia-h100-sxm", "nvidia-a100-sxm-80gb", "ibm-spyre", "google-tpu-v4", "groq-lpu", "cerebras-wse-3")
    }
    assert counts == {
        "nvidia-h100-sxm": 132,
        "nvidia-a100-sxm-80gb": 108,
        "ibm-spyre": 32,
        "google-tpu-v4": 2,
        "groq-lpu": 20,
        "cerebras-wse-3": 900_000,
    }


@pytest.mark.parametrize(
    ("m", "n", "cores"),
    [
        (256, 256, 4),  # (256 / 128) * (256 / 128) = 4 output tiles of 128 x 128: 4 SMs
        (1024, 1024, 64),  # 8 * 8 = 64 tiles
        (2048, 2048, 132),  # 16 * 16 = 256 tiles > 132 SMs: all of them
        (100, 100, 1),  # one partial tile
    ],
)
def test_a_gpu_gemm_occupies_one_sm_per_tile(m, n, cores):
    costed = annotate(mm_graph(m, 64, n))
    program = compile_program(costed, load_profile("h100"), passes=_untiled("h100"))
    (kernel,) = program.kernels
    assert kernel.cores == cores
    # after the GPU tiling pass (Triton programs, docs/gpu.md): one SM per program, at most 132
    (tiled,) = compile_for(costed, load_profile("h100")).kernels
    assert tiled.tile_shape and tiled.cores == min(tiled.tiles, 132)


def _untiled(profile: str):
    """The target's pipeline without its tiling pass: placement estimates the tiles (module docstring)."""
    hw = load_profile(profile)
    return tuple(p for p in target_for(hw).passes(hw) if p.name != "tiling")


def test_a_gpu_pointwise_kernel_occupies_one_sm_per_block_of_1024():
    costed = annotate(mm_graph(128, 64, 128, relu=True))
    program = compile_program(costed, load_profile("h100"), passes=_untiled("h100"))
    relu = next(k for k in program.kernels if k.nodes == ("relu",))
    assert relu.cores == 16  # 128 * 128 = 16,384 elements / 1,024 = 16 blocks


def test_dataflow_and_tpu_kernels_occupy_every_core():
    costed = annotate(mm_graph(128, 64, 128, relu=True))
    for profile, cores in (("ibm-spyre", 32), ("google-tpu-v4", 2), ("groq-lpu", 20)):
        program = compile_for(costed, load_profile(profile))
        assert {k.cores for k in program.kernels} == {cores}, profile


def test_a_dataflow_kernel_occupies_every_core_however_it_is_tiled():
    # Spyre's planner divides every kernel over its 32 cores; the tiles cut each core's share.
    costed = annotate(mm_graph(128, 64, 128))
    spyre = load_profile("ibm-spyre")
    (kernel,) = compile_program(costed, spyre, passes=()).kernels
    assert kernel_cores(kernel.with_(tiles=8, tile_shape=(16, 128)), costed, spyre, target_for(spyre).grain) == 32
    assert kernel_cores(kernel.with_(tiles=100, tile_shape=(1, 128)), costed, spyre, target_for(spyre).grain) == 32


def test_placement_and_schedule_are_recorded_stages():
    program = compile_for(annotate(mm_graph(256, 64, 256)), load_profile("h100"))
    assert [s.name for s in program.stages] == ["lower", "fusion", "tiling", "placement", "schedule"]
    assert program.meta["schedule_policy"] == "dynamic"  # H100: dynamic commitment
    spyre = compile_for(annotate(mm_graph(256, 64, 256)), load_profile("spyre"))
    assert spyre.meta["schedule_policy"] == "static"
