"""Data parallelism for a training step (dfx.parallel.data): collectives by hand, the step's total.

H100's interconnect (profile): a ring at 450e9 B/s each way, 0.6 us per step, 6.6 us per collective.
Over n = 4 chips (docs/parallel.md, NCCL's factors):

    all-reduce of S bytes:                 6.6 + 2*3*0.6 = 10.2 us  + 2*3/4 * S / 450e9
    all-gather / reduce-scatter of S bytes: 6.6 + 3*0.6  =  8.4 us  +   3/4 * S / 450e9
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dfx
from dfx.errors import DfxError
from dfx.parallel import ParallelPlan, parse_parallel
from dfx.schema.analysis import read_analysis

RING_B_PER_S = 450e9
AR_FIXED_S = 6.6e-6 + 2 * 3 * 0.6e-6  # all-reduce over 4 chips: base + 2(n-1) hops
AG_FIXED_S = 6.6e-6 + 3 * 0.6e-6  # all-gather or reduce-scatter over 4 chips: base + (n-1) hops


class TwoLayers(nn.Module):
    """layers.0, layers.1: Linear(64, 64, bias=False), fp32: 64*64*4 = 16,384 B of weights (and gradient) each."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(64, 64, bias=False) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Wide(nn.Module):
    """One Linear(4096, 2048, bias=False), fp32: 8,388,608 parameters, 32 MiB of gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4096, 2048, bias=False)

    def forward(self, x):
        return self.fc(x)


def _hw(model, x, **kw):
    a = dfx.analyze(model, args=(x,), train=True, hardware=["h100"], **kw)
    return a.hardware[0], read_analysis(a.to_dict()).hardware["nvidia-h100-sxm"]


@pytest.fixture(scope="module")
def two_layers_one_chip():
    hw, _ = _hw(TwoLayers(), torch.randn(8, 64), chips=1)
    return hw.latency_s


def test_ddp_all_reduce_by_hand(two_layers_one_chip):
    hw, rec = _hw(TwoLayers(), torch.randn(8, 64), parallel="dp=4")
    dp = rec.parallel.data_parallel
    assert rec.parallel.plan.dp == 4 and rec.parallel.plan.sharding == "ddp" and rec.chips == 4
    # gradients 2 x 16,384 = 32,768 B, one 25 MiB bucket: each chip sends 2*3/4 * 32,768 = 49,152 B
    assert dp.gradient_bytes == 32768 and dp.collectives == 1
    assert dp.all_reduce_s == pytest.approx(AR_FIXED_S + 49152 / RING_B_PER_S)  # 10.3092 us
    assert dp.all_gather_s == 0 and dp.reduce_scatter_s == 0
    # the step: one replica's step plus what the backward does not hide of the all-reduce
    assert dp.forward_s + dp.backward_s + dp.optimizer_s == pytest.approx(two_layers_one_chip)
    assert dp.exposed_s == pytest.approx(max(0.0, dp.all_reduce_s - dp.backward_s))
    assert hw.latency_s == pytest.approx(two_layers_one_chip + dp.exposed_s)
    assert two_layers_one_chip <= hw.latency_s <= two_layers_one_chip + dp.all_reduce_s
    # model states per chip, replicated: 32,768 B of weights + 32,768 of gradients + Adam's m, v in fp32
    # (2 x 8,192 parameters x 4 B = 65,536): 131,072 B
    assert dp.model_state_bytes == 131072


def test_fsdp_collectives_by_hand(two_layers_one_chip):
    hw, rec = _hw(TwoLayers(), torch.randn(8, 64), parallel="fsdp=4")
    dp = rec.parallel.data_parallel
    assert dp.sharding == "fsdp" and dp.collectives == 6  # per layer: gather (fwd), gather (bwd), reduce-scatter
    per_layer = AG_FIXED_S + 0.75 * 16384 / RING_B_PER_S  # 8.4273 us
    assert dp.all_gather_s == pytest.approx(2 * 2 * per_layer)
    assert dp.reduce_scatter_s == pytest.approx(2 * per_layer)
    assert dp.all_reduce_s == 0
    assert dp.model_state_bytes == 131072 / 4  # sharded 4 ways (ZeRO-3)
    # the optimizer runs on 1/4 of the parameters: 3/4 of its time is saved
    opt_one_chip = 4 * dp.optimizer_s
    assert dp.forward_s + dp.backward_s + opt_one_chip == pytest.approx(two_layers_one_chip)
    exposed = max(0.0, dp.all_gather_s / 2 - dp.forward_s) + max(
        0.0, dp.all_gather_s / 2 + dp.reduce_scatter_s - dp.backward_s
    )
    assert dp.exposed_s == pytest.approx(exposed)
    assert hw.latency_s == pytest.approx(two_layers_one_chip - 0.75 * opt_one_chip + exposed)
    # the tiny step's compute hides little: the exposed part closes the timeline, over all 4 chips
    assert exposed > 0
    last = rec.parallel.more["timeline"][-1]
    assert last["chips"] == [0, 3] and last["kind"] == "communication"
    assert last["end_s"] - last["start_s"] == pytest.approx(exposed)
    assert last["end_s"] == pytest.approx(hw.latency_s)


def test_ddp_buckets_of_25_mib():
    _, rec = _hw(Wide(), torch.randn(4, 4096), parallel="dp=4")
    dp = rec.parallel.data_parallel
    # 32 MiB of gradient: ceil(32 / 25) = 2 buckets of 16 MiB, each 10.2 us + 1.5 * 16 MiB / 450e9 = 66.124 us
    assert dp.gradient_bytes == 32 * 2**20 and dp.collectives == 2
    assert dp.all_reduce_s == pytest.approx(2 * (AR_FIXED_S + 1.5 * 16 * 2**20 / RING_B_PER_S))
    assert dp.all_reduce_s == pytest.approx(132.249e-6, rel=1e-4)


def test_chips_on_a_training_step_is_fsdp():
    _, rec = _hw(TwoLayers(), torch.randn(8, 64), chips=4)
    assert rec.parallel.plan.sharding == "fsdp" and rec.parallel.plan.dp == 4
    assert rec.parallel.plan.tp == 1 and "fsdp" in rec.parallel.plan.source


def test_parse_and_refusals():
    assert parse_parallel("fsdp=256") == ParallelPlan(dp=256, fsdp=True)
    assert parse_parallel("dp=2,tp=4").chips == 8
    with pytest.raises(DfxError, match="not both"):
        parse_parallel("dp=2,fsdp=2")
    with pytest.raises(DfxError, match="add --train"):
        dfx.analyze(TwoLayers(), args=(torch.randn(8, 64),), hardware=["h100"], parallel="dp=2")


def test_cli_table_row(tmp_path):
    from typer.testing import CliRunner

    from dfx.cli import app

    out = CliRunner().invoke(app, ["analyze", "mlp", "--train", "--hw", "h100", "--parallel", "fsdp=4"])
    assert out.exit_code == 0, out.output
    assert "4 = fsdp 4 x tp 1 x pp 1 x ep 1" in out.output
    assert "data-parallel collectives (exposed)" in out.output


def test_dp_with_tensor_parallelism_syncs_each_shard():
    hw, rec = _hw(TwoLayers(), torch.randn(8, 64), parallel="dp=2,tp=2")
    dp = rec.parallel.data_parallel
    assert rec.chips == 4 and rec.parallel.plan.tp == 2 and dp.dp == 2
    # each tp shard all-reduces its half of the 32,768 B: 16,384 B over 2 chips:
    # 6.6 + 2*1*0.6 = 7.8 us, plus 2*1/2 * 16,384 / 450e9
    assert dp.gradient_bytes == 16384
    assert dp.all_reduce_s == pytest.approx(7.8e-6 + 16384 / RING_B_PER_S)
    tp_only, _ = _hw(TwoLayers(), torch.randn(8, 64), parallel="tp=2")
    assert hw.latency_s == pytest.approx(tp_only.latency_s + dp.exposed_s)
    assert dp.exposed_s == pytest.approx(max(0.0, dp.all_reduce_s - dp.backward_s))


# -- a training step's memory per chip (dfx.parallel.plan.training_memory) ---------------------------
# TwoLayers, fp32, batch 8: model state 131,072 B (above: 32,768 weights + 32,768 gradients + 65,536
# of Adam's m and v). Kept for backward: layers.0's output, 8 x 64 x 4 = 2,048 B (layers.1's weight
# gradient reads it; layers.0's reads the input x, counted as an input, and W1 stays resident).
STATE_B = 131072
SAVED_B = 8 * 64 * 4


def _small_h100(capacity_bytes: float):
    """The H100 profile with its HBM cut to ``capacity_bytes`` (every other figure as published)."""
    from dfx.hardware import load_profile

    h100 = load_profile("h100")
    memory = tuple(lv if lv.on_chip else lv.model_copy(update={"capacity_bytes": capacity_bytes}) for lv in h100.memory)
    return h100.model_copy(update={"memory": memory})


def _train(profile, **kw):
    a = dfx.analyze(TwoLayers(), args=(torch.randn(8, 64),), train=True, hardware=[profile], **kw)
    return read_analysis(a.to_dict()).hardware[profile.id]


def test_training_memory_by_hand():
    from dfx.parallel import training_memory

    h100 = _small_h100(40_000)
    # FSDP over 4: 131,072 / 4 = 32,768 of state + 2,048 saved = 34,816 B <= 40,000
    m = training_memory(ParallelPlan(dp=4, fsdp=True), h100, STATE_B, SAVED_B)
    assert (m.model_state_bytes, m.saved_activation_bytes, m.per_chip_bytes) == (32768, 2048, 34816)
    assert m.capacity_bytes == 40_000 and m.fits is True
    # DDP over 4: the whole state on every chip, 133,120 B > 40,000
    m = training_memory(ParallelPlan(dp=4), h100, STATE_B, SAVED_B)
    assert m.per_chip_bytes == 131072 + 2048 and m.fits is False
    # fsdp=2 with tp=2: state / 2 / 2 = 32,768; saved / tp = 1,024
    m = training_memory(ParallelPlan(dp=2, tp=2, fsdp=True), h100, STATE_B, SAVED_B)
    assert (m.model_state_bytes, m.saved_activation_bytes) == (32768, 1024)


def test_default_plan_for_a_training_step_is_the_fewest_fsdp_chips_that_fit():
    # capacity 40,000 B: dp = ceil(131,072 / (40,000 - 2,048)) = ceil(3.454) = 4
    # (fsdp=3 would need 43,691 + 2,048 = 45,739 B per chip)
    rec = _train(_small_h100(40_000))
    plan = rec.parallel.plan
    assert (plan.dp, plan.sharding, plan.tp, plan.pp, rec.chips) == (4, "fsdp", 1, 1, 4)
    mem = rec.parallel.memory
    assert (mem.model_state_bytes, mem.saved_activation_bytes, mem.per_chip_bytes) == (32768, 2048, 34816)
    assert mem.capacity_bytes == 40_000 and mem.fits is True
    # on the real H100 (80 GB) the whole step fits one chip
    rec = _train(_small_h100(80e9))
    assert rec.chips == 1


def test_a_training_plan_that_does_not_fit_is_warned():
    h100 = _small_h100(40_000)
    with pytest.warns(UserWarning, match=r"130.00 KiB per chip under dp=4 .*more than its 39.06 KiB"):
        rec = _train(h100, parallel="dp=4")  # DDP: 131,072 + 2,048 = 133,120 B = 130.00 KiB per chip
    assert rec.parallel.memory.fits is False and rec.parallel.memory.per_chip_bytes == 133120
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _train(h100, parallel="fsdp=4").parallel.memory.fits is True  # 34,816 B: no warning


def test_cli_warns_and_shows_memory_per_chip():
    # mlp --train, fsdp=4 on an H100: fits; the table shows the bytes per chip against 80 GB = 74.51 GiB
    from typer.testing import CliRunner

    from dfx.cli import app

    out = CliRunner().invoke(app, ["analyze", "mlp", "--train", "--hw", "h100", "--parallel", "fsdp=4"])
    assert out.exit_code == 0, out.output
    assert "memory per chip (state + kept for backward)" in out.output and "of 74.51 GiB" in out.output
    assert "does not fit" not in out.output


def test_frozen_parameters_count_in_the_model_state():
    # layers.0 frozen: its 16,384 B of weights stay resident (FSDP shards them too); trained: layers.1's
    # 16,384 B + its gradient 16,384 + Adam's m, v 2 x 4,096 x 4 = 32,768 -> state 81,920 B.
    # Kept for backward: layers.0's output, 2,048 B (layers.1's weight gradient reads it).
    model = TwoLayers()
    model.layers[0].weight.requires_grad_(False)
    a = dfx.analyze(model, args=(torch.randn(8, 64),), train=True, hardware=["h100"], parallel="fsdp=4")
    rec = read_analysis(a.to_dict()).hardware["nvidia-h100-sxm"]
    assert rec.parallel.data_parallel.model_state_bytes == 81920 / 4
    assert rec.parallel.memory.per_chip_bytes == 81920 / 4 + 2048
