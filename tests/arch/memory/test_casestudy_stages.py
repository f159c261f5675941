"""`dfx casestudy attention`: the block through the compiler stages on TPU and Spyre."""

from dfx.arch.memory.casestudy import AttentionBlock, compiler_stages, render_stages
from dfx.hardware import load_profile


def _stages():
    # batch 1, 2 heads of 4, N = 8, bf16: x and each projection [8, 8], weights [8, 8]
    block = AttentionBlock(seq=8, heads=2, head_dim=4, batch=1, dtype="bfloat16")
    return compiler_stages(block, [load_profile("google-tpu-v4"), load_profile("ibm-spyre")])


def test_every_stage_is_walked_in_order_on_both_machines():
    stages = _stages()
    order = ["lower", "fusion", "decompose", "tiling", "placement", "schedule", "evaluate"]
    assert [s["stage"] for s in stages] == order
    # Spyre's compiler splits softmax and norms (dfx.compile.decompose); XLA has no such pass
    assert all(set(s["machines"]) == {"google-tpu-v4", "ibm-spyre"} for s in stages if s["stage"] != "decompose")
    assert set(stages[2]["machines"]) == {"ibm-spyre"}


def test_lowering_is_the_same_and_its_bytes_are_the_operators():
    lower = _stages()[0]
    assert not lower["differs"]
    # four projections each read x (8*8*2 = 128 B) and a weight (128 B) and write 128 B: 4 * 384 = 1,536;
    # attention reads q, k, v (1*2*8*4*2 = 128 B each) and writes 128 B: 512. Total 2,048 B.
    assert {m["offchip_bytes"] for m in lower["machines"].values()} == {2048}
    assert {m["kernels"] for m in lower["machines"].values()} == {5}


def test_placement_differs_by_the_core_counts_and_schedules_agree():
    stages = {s["stage"]: s for s in _stages()}
    placement = stages["placement"]
    assert placement["differs"]
    assert placement["machines"]["ibm-spyre"]["cause"] == "compute.cores = 32"  # 32 AI cores
    assert placement["machines"]["google-tpu-v4"]["cause"] == "compute.cores = 2"  # 2 TensorCores
    assert not stages["schedule"]["differs"]  # both compilers fix the order (static commitment)
    assert "LPDDR5 150 GB/s" in stages["evaluate"]["machines"]["ibm-spyre"]["cause"]
    text = render_stages(list(stages.values()))
    assert "### placement (differs)" in text and "### schedule (same on every machine)" in text
