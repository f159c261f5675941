"""The main job through the Python API: dfx.analyze on the built-in default, and the export document."""

import json
import re
from pathlib import Path

import pytest

import dfx
from dfx.errors import DfxError

DOCS = Path(__file__).resolve().parents[1] / "docs" / "export-format.md"


@pytest.fixture(scope="module")
def gpt2_bf16():
    return dfx.analyze("gpt2-block", dtype="bf16")


def test_default_hardware_is_a_gpu_and_a_dataflow_accelerator(gpt2_bf16):
    doc = gpt2_bf16.to_dict()
    assert doc["schema"] == "dfx.analysis/1"
    assert list(doc["hardware"]) == ["nvidia-h100-sxm", "ibm-spyre"]
    assert doc["model"]["seq"] == 1024 and doc["model"]["dtype"] == "bfloat16"


def test_gpt2_block_matmul_flops_by_hand(gpt2_bf16):
    # B=1, S=1024, d=768, 12 heads of 64:
    # QKV 2*1024*768*2304 = 3,623,878,656; scores 2*12*1024*1024*64 = 1,610,612,736;
    # AV the same 1,610,612,736; out proj 2*1024*768*768 = 1,207,959,552;
    # MLP 2 * (2*1024*768*3072) = 9,663,676,416. Sum 17,716,740,096.
    assert gpt2_bf16.to_dict()["totals"]["flops_by_category"]["matmul"] == 17_716_740_096


def test_gpt2_block_bounds_on_h100_and_spyre(gpt2_bf16):
    doc = gpt2_bf16.to_dict()
    h100 = doc["hardware"]["nvidia-h100-sxm"]["nodes"]
    # The FFN matmuls: 2*1024*768*3072 FLOPs = 4,831,838,208 each; bf16 bytes read
    # 1024*768*2 + 768*3072*2 (+ bias) ~ 6.3 MB, written 1024*3072*2 ~ 6.3 MB, so the intensity is
    # ~384 FLOP/B, above the H100's bf16 ridge of 989.4e12 / 3.35e12 = 295.3 FLOP/B.
    # Each node's FLOPs also hold its bias add: 1024*3072 (c_fc) or 1024*768 (c_proj).
    ffn_flops = {2 * 1024 * 768 * 3072 + 1024 * 3072, 2 * 1024 * 768 * 3072 + 1024 * 768}
    ffn = [n for n in doc["nodes"] if n["category"] == "matmul" and n["flops"] in ffn_flops]
    assert len(ffn) == 2
    assert all(h100[n["name"]]["bound"] == "compute" for n in ffn)
    # Norms and pointwise ops do a few FLOPs per element they move: memory-bound.
    for n in doc["nodes"]:
        if n["category"] in ("normalization", "elementwise") and n["flops"]:
            assert h100[n["name"]]["bound"] == "memory", n["name"]
    assert doc["hardware"]["ibm-spyre"]["partition_shift"]


def test_h100_bf16_ridge(gpt2_bf16):
    ridge = gpt2_bf16.to_dict()["hardware"]["nvidia-h100-sxm"]["ridge_flop_per_byte"]
    # 989.4 TFLOP/s / 3.35 TB/s = 295.34 FLOP/B
    assert ridge["HBM3"] == pytest.approx(989.4e12 / 3.35e12)


def test_critical_path_of_a_block_is_its_serial_chain(gpt2_bf16):
    # A transformer block is one chain of dependent ops (the residual adds join it back), so its
    # critical path is close to the serial time; it can never exceed it.
    for hw in gpt2_bf16.to_dict()["hardware"].values():
        assert hw["critical_path"]["time_s"] <= hw["serial_time_s"] * (1 + 1e-12)
        assert hw["critical_path"]["nodes"][-1] == "output"


def test_costs_only_and_graph_input():
    a = dfx.analyze("mlp", hardware=[])
    assert a.to_dict()["hardware"] == {}
    again = dfx.analyze(a.graph, hardware=["h100"])
    assert again.costed.total == a.costed.total
    assert list(again.to_dict()["hardware"]) == ["nvidia-h100-sxm"]


def test_module_with_args():
    import torch

    a = dfx.analyze(torch.nn.Linear(8, 16), (torch.randn(4, 8),), hardware=[])
    # F.linear(x(4,8), W(16,8), b(16)): 2*4*8*16 = 1,024 matmul FLOPs, + 4*16 = 64 bias adds (PB-03 #4)
    assert a.to_dict()["totals"]["flops_by_category"]["matmul"] == 1_024
    assert a.costed.total.flops == 1_088
    with pytest.raises(DfxError, match="dtype= applies to model names"):
        dfx.analyze(torch.nn.Linear(8, 16), (torch.randn(4, 8),), dtype="bf16", hardware=[])


def test_bad_dtype_and_hardware_fail_before_capture():
    with pytest.raises(DfxError, match="unknown dtype 'fp12'"):
        dfx.analyze("mlp", dtype="fp12", hardware=[])
    with pytest.raises(DfxError, match="nvidia-h100-sxm"):
        dfx.analyze("mlp", hardware=["nvidia-h100-sxn"])


def test_a_storage_dtype_given_as_the_model_dtype_points_to_its_flags():
    from dfx.analysis import normalize_dtype_or_fail

    assert normalize_dtype_or_fail("fp64") == "float64"  # accepted, so the message lists it
    with pytest.raises(DfxError, match=r"unknown dtype 'float8'; expected fp32, bf16, fp16 or fp64 .* --weight-dtype"):
        normalize_dtype_or_fail("float8")
    with pytest.raises(DfxError, match=r"dtype 'fp8' is not a model dtype; .* use --weight-dtype or --kv-dtype"):
        normalize_dtype_or_fail("fp8")
    with pytest.raises(DfxError, match=r"unknown dtype 'fp12'; expected fp32, bf16, fp16 or fp64 \(or [^;]*\)$"):
        normalize_dtype_or_fail("fp12")  # no storage hint for a name that is not one


def test_every_exported_field_is_documented(gpt2_bf16):
    doc = gpt2_bf16.to_dict()
    documented = set(re.findall(r"^\| `([a-z_0-9]+)`", DOCS.read_text(), flags=re.M))
    documented |= {
        w
        for cell in re.findall(r"^\| `([^|]+)` \|", DOCS.read_text(), flags=re.M)
        for w in re.findall(r"[a-z_0-9]+", cell)
    }
    keys = set(doc) | set(doc["model"]) | set(doc["totals"]) | set(doc["coverage"]) | set(doc["nodes"][0])
    for hw in doc["hardware"].values():
        keys |= set(hw)
        keys |= set(next(iter(hw["nodes"].values())))
    missing = sorted(k for k in keys if k not in documented)
    assert not missing, f"fields missing from docs/export-format.md: {missing}"
    json.dumps(doc)  # plain JSON, no NaN or objects


def test_nodes_csv_has_a_row_per_node(gpt2_bf16):
    lines = gpt2_bf16.nodes_csv().strip().splitlines()
    assert len(lines) == 1 + len(gpt2_bf16.graph.nodes)
    assert lines[0].endswith("nvidia-h100-sxm:bound,nvidia-h100-sxm:time_s,ibm-spyre:bound,ibm-spyre:time_s")


def test_a_contraction_is_timed_at_its_operands_dtype():
    # bf16 operands with an fp32 output (out_dtype): the bf16 tensor-core peak applies.
    # 2*1024^3 = 2,147,483,648 FLOPs / 989.4e12 = 2.17 us of compute on an H100, not the
    # 32.1 us the fp32 (66.9 TFLOP/s) peak would give; under the H100's default runtime
    # (back-to-back: matmuls at 83.0% of peak, the profile's runtimes entry) 2.17 / 0.83 = 2.62 us.
    import torch

    class MixedMM(torch.nn.Module):
        def forward(self, a, b):
            return torch.mm(a, b, out_dtype=torch.float32)

    a = torch.randn(1024, 1024, dtype=torch.bfloat16)
    doc = dfx.analyze(MixedMM(), (a, a), hardware=["h100"]).to_dict()
    (mm,) = [n for n in doc["nodes"] if n["category"] == "matmul"]
    assert mm["dtype"] == "bfloat16"
    timing = doc["hardware"]["nvidia-h100-sxm"]["nodes"][mm["name"]]
    assert timing["compute_time_s"] == pytest.approx(2 * 1024**3 / (989.4e12 * 0.83))


def test_duplicate_profile_ids_are_refused(tmp_path):
    from dfx.hardware import load_profile

    with pytest.raises(DfxError, match="'nvidia-h100-sxm' is given twice"):
        dfx.analyze("mlp", hardware=[load_profile("h100"), "nvidia-h100-sxm"])
    # a bare string is one profile, not its characters
    assert list(dfx.analyze("mlp", hardware="h100").to_dict()["hardware"]) == ["nvidia-h100-sxm"]


def test_file_models_take_shapes_not_batch(tmp_path):
    net = tmp_path / "net.py"
    net.write_text(
        "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = torch.nn.Linear(8, 4)\n    def forward(self, x):\n        return self.l(x)\n"
    )
    with pytest.raises(DfxError, match="--batch and --seq apply to built-in and hf: models"):
        dfx.analyze(f"{net}:Net", batch=4, input_shapes=[(2, 8)], hardware=[])
    doc = dfx.analyze(f"{net}:Net", input_shapes=[(2, 8)], hardware=[]).to_dict()
    assert doc["model"]["input_shapes"] == [[2, 8]] and "batch" not in doc["model"]
    # 2*2*8*4 = 128 matmul FLOPs; as MACs, 64
    assert doc["totals"]["matmul_macs"] == 64


def test_execution_model_is_selectable_and_a_gpu_shows_both():
    compiled = dfx.analyze("mlp", hardware=["h100", "google-tpu-v4"]).to_dict()  # compiled is the default
    eager = dfx.analyze("mlp", hardware=["h100", "google-tpu-v4"], execution_model="eager").to_dict()
    h100, tpu = compiled["hardware"]["nvidia-h100-sxm"], compiled["hardware"]["google-tpu-v4"]
    assert h100["execution_model"] == tpu["execution_model"] == "compiled"  # TPU v4: XLA, not eager
    assert eager["hardware"]["google-tpu-v4"]["execution_model"] == "eager"
    # the GPU's compiled result carries its eager numbers, equal to an eager analysis's: both are the
    # eager program (one kernel per operator) on the same kernel model as the compiled one
    e100 = eager["hardware"]["nvidia-h100-sxm"]
    for key in ("serial_time_s", "makespan_s"):
        assert h100["eager"][key] == e100[key]
    assert e100["program"]["target"] == "eager" and h100["program"]["target"] == "inductor"
    # the mlp (linear, relu, linear, relu, linear): eager is 5 kernels; Inductor fuses nothing into a
    # library GEMM and each relu has no other pointwise neighbour, so compiled is the same 5 kernels,
    # and one kernel model times them alike
    assert h100["eager"]["kernels"] == e100["program"]["kernel_count"] == h100["program"]["kernel_count"] == 5
    assert h100["eager"]["makespan_s"] == pytest.approx(h100["makespan_s"])
    assert "eager" not in tpu
    # a runtime times the eager program's kernels too: under pytorch-eager-timed each of the 5 kernels pays
    # its 20 us fixed cost where the default runtime (back-to-back) pays 1.5 us, so the chain of 5 takes
    # 5 x 18.5 us = 92.5 us more
    timed = dfx.analyze("mlp", hardware=["h100"], execution_model="eager", runtime="pytorch-eager-timed").to_dict()
    timed = timed["hardware"]["nvidia-h100-sxm"]
    assert timed["program"]["target"] == "eager" and timed["runtime"] == "pytorch-eager-timed"
    assert [k["overhead_s"] for k in timed["program"]["kernels"]] == [20e-6] * 5
    assert timed["makespan_s"] == pytest.approx(e100["makespan_s"] + 5 * 18.5e-6)
    for hw in compiled["hardware"].values():
        assert hw["critical_path"]["time_s"] <= hw["makespan_s"] * (1 + 1e-12)
        assert hw["makespan_s"] <= hw["serial_time_s"] * (1 + 1e-12)
    from dfx.viz import render_report

    html = render_report(compiled).files["report.html"]
    assert "makespan (the latency to quote)" in html and "infinite-resource lower bound" in html
    assert "eager: serial / makespan" in html
    with pytest.raises(DfxError, match="unknown execution model 'jit'"):
        dfx.analyze("mlp", hardware=[], execution_model="jit")


def test_an_analysis_survives_pickle():
    # its results keep their mappings read-only (MappingProxyType), which pickle could not take:
    # "cannot pickle 'mappingproxy' object" for multiprocessing, joblib or a pickle file
    import pickle
    from types import MappingProxyType

    a = dfx.analyze("mlp", hardware=["h100", "groq"])
    b = pickle.loads(pickle.dumps(a))
    assert b.to_dict() == a.to_dict()
    assert isinstance(b.hardware[0].extras, MappingProxyType)  # still read-only after the trip


def test_an_unknown_dtype_names_the_widths_analyze_re_prices_too():
    # `dfx analyze --dtype fp6` said "expected fp32, bf16, fp16 or fp64", yet analyze takes fp8, int8,
    # fp4 and mxfp4 as --dtype (a bf16 capture re-priced, docs/inference.md); refused before any profile
    with pytest.raises(
        DfxError, match=r"unknown dtype 'fp6'; expected fp32, bf16, fp16 or fp64 .*or fp8, int8, fp4 or mxfp4"
    ):
        dfx.analyze("mlp", dtype="fp6", hardware=["no-such-profile"])
