"""One training step (``dfx analyze --train``): the joint graph's costs against hand arithmetic,
FlopCounterMode on a real CPU forward + backward, and eager autograd's saved tensors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import dfx
from dfx.errors import CaptureError, DfxError
from dfx.schema.analysis import read_analysis


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def resnet_train_doc():
    result = _cli("analyze", "resnet-block", "--train", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _node(doc, target: str, param: str) -> dict:
    (node,) = [n for n in doc["nodes"] if n["target"] == target and param in n["params"]]
    return node


def test_resnet_block_conv_gradients_cost_the_forward(resnet_train_doc):
    # ResNet-50 conv2_x bottleneck, batch 1, 56x56 (3,136 positions), C = 256, mid M = 64:
    #   conv1 1x1 256->64: 3,136 * 64*256     = 51,380,224 MACs = 102,760,448 FLOPs
    #   conv2 3x3 64->64:  3,136 * 64*64*9    = 115,605,504 MACs = 231,211,008 FLOPs
    #   conv3 1x1 64->256: 3,136 * 256*64     = 51,380,224 MACs = 102,760,448 FLOPs
    # Backward: the weight gradient costs the forward's FLOPs, the input gradient as many again;
    # conv1's input is the graph input, which needs no gradient: its backward is the weight's only.
    doc = resnet_train_doc
    forward = {"conv1.weight": 102_760_448, "conv2.weight": 231_211_008, "conv3.weight": 102_760_448}
    input_needs_grad = {"conv1.weight": False, "conv2.weight": True, "conv3.weight": True}
    for weight, flops in forward.items():
        assert _node(doc, "aten.convolution.default", weight)["flops"] == flops
        backward = _node(doc, "aten.convolution_backward.default", weight)
        assert backward["category"] == "matmul"
        assert backward["flops"] == flops * (2 if input_needs_grad[weight] else 1), weight
    assert doc["coverage"]["unknown_ops"] == []


def test_resnet_block_adam_state_is_two_fp32_copies(resnet_train_doc):
    # parameters: conv 256*64 + 64*64*9 + 64*256 = 69,632; BN weights and biases 2*(64+64+256) = 768
    training = resnet_train_doc["training"]
    assert training["trainable_parameter_count"] == 70_400
    assert training["optimizer"] == "adam" and training["optimizer_state_dtype"] == "float32"
    assert training["optimizer_state_bytes"] == 2 * 70_400 * 4  # m and v, 4 bytes each
    assert training["trainable_parameter_bytes"] == 70_400 * 2  # bf16, the default dtype
    assert training["optimizer_flops_per_parameter"] == 13  # torch.optim.Adam, rules_optim
    assert training["optimizer_flops"] == 13 * 70_400
    assert resnet_train_doc["totals"]["unique_parameter_count"] == 70_400
    # the footprint holds the state as buffers: parameters 140,800 B (bf16), BN running mean and var
    # 2 * 384 * 2 = 1,536 B, num_batches_tracked 3 * 8 = 24 B, Adam's m and v 563,200 B
    assert resnet_train_doc["totals"]["unique_parameter_bytes"] == 140_800 + 1_536 + 24 + 563_200


def test_the_compile_and_schedule_stages_run_on_the_joint_graph(resnet_train_doc):
    doc = read_analysis(resnet_train_doc)  # the training record reads back through the schema
    assert doc.training is not None and doc.training.optimizer_node == "optimizer_step"
    for hw in doc.hardware.values():
        assert hw.program is not None and hw.makespan_s > 0
        kernels = [k for k in hw.program.kernels if "optimizer_step" in k.nodes]
        assert len(kernels) == 1
        # the step waits for every gradient: it starts after the last backward kernel it depends on
        ends = {k.name: k.end_s for k in hw.program.kernels}
        assert kernels[0].start_s >= max(ends[d] for d in kernels[0].deps)


def _flop_counter(model: nn.Module, x: torch.Tensor) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    return counter.get_total_flops()


def test_mlp_joint_flops_against_flop_counter():
    # FlopCounterMode counts the contractions only (addmm forward, mm backward); dfx's matmul
    # category is the same count. The rest of the joint graph, which FlopCounterMode leaves out,
    # by hand for batch 4 (784 -> 512 -> 512 -> 10):
    #   forward: bias adds 4*(512 + 512 + 10) = 4,136; ReLU 2 * 2,048 = 4,096; loss sum 40
    #   backward: bias gradients (sums over the batch) 40 + 2,048 + 2,048; ReLU backward 2 * 2,048
    #   = 16,504, the whole tolerance.
    spec = dfx.models.resolve("mlp", batch=4, device="cpu")
    reference = _flop_counter(spec.model.train(), torch.randn(spec.args[0].shape))
    training = dfx.analyze("mlp", batch=4, train=True, hardware=[]).to_dict()
    doc = training
    assert doc["totals"]["flops_by_category"]["matmul"] == reference
    t = doc["training"]
    assert t["forward_flops"] + t["backward_flops"] == reference + 16_504


def test_resnet_block_joint_flops_against_flop_counter():
    # batch 2, 8x8: FlopCounterMode's convolutions and convolution_backward equal dfx's matmul
    # FLOPs. Beyond them, by hand (n = elements: 8,192 per mid channel map set, 32,768 at 256):
    #   forward: BN training 7 per element + 11 per channel: 2 * (7*8,192 + 11*64) + 7*32,768
    #   + 11*256 = 348,288; num_batches_tracked += 1: 3; ReLU 8,192*2 + 32,768; residual add
    #   32,768; loss sum 32,768 -> 462,979
    #   backward: ReLU 32,768 + 2*8,192; BN backward 9 per element + 6 per channel:
    #   9*32,768 + 6*256 + 2 * (9*8,192 + 6*64) = 444,672 -> 493,824
    #   = 956,803, 1.9% of FlopCounterMode's count.
    spec = dfx.models.resolve("resnet-block", batch=2, seq=8, device="cpu")
    reference = _flop_counter(spec.model.train(), torch.randn(spec.args[0].shape))
    doc = dfx.analyze("resnet-block", batch=2, seq=8, train=True, hardware=[]).to_dict()
    assert doc["totals"]["flops_by_category"]["matmul"] == reference
    t = doc["training"]
    assert t["forward_flops"] + t["backward_flops"] == reference + 462_979 + 493_824


@pytest.mark.parametrize("name, batch, seq", [("mlp", 4, None), ("resnet-block", 2, 8)])
def test_kept_for_backward_equals_eager_autograd_saved_tensors(name, batch, seq):
    # Eager autograd's saved tensors (saved_tensors_hooks), each storage once, parameters left
    # out: the same set as the joint graph's forward values that the backward reads.
    spec = dfx.models.resolve(name, batch=batch, seq=seq, device="cpu")
    model = spec.model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.randn(spec.args[0].shape)).sum().backward()
    t = dfx.analyze(name, batch=batch, seq=seq, train=True, hardware=[], dtype="fp32").to_dict()["training"]
    assert t["saved_activation_bytes"] + t["saved_input_bytes"] == sum(saved.values())
    assert t["saved_input_bytes"] == torch.Size(spec.args[0].shape).numel() * 4  # the input is kept (fp32)


def test_mlp_kept_for_backward_by_hand():
    # batch 4: the input [4, 1, 784] (12,544 B, kept for the first weight's gradient) and the two
    # ReLU outputs [4, 1, 512] (8,192 B each, kept for the next weight's gradient and ReLU's backward)
    t = dfx.analyze("mlp", batch=4, train=True, hardware=[], dtype="fp32").to_dict()["training"]
    assert t["saved_input_bytes"] == 4 * 784 * 4
    assert t["saved_activation_bytes"] == 2 * 4 * 512 * 4


def test_sgd_steps():
    # mlp parameters: 784*512 + 512 + 512*512 + 512 + 512*10 + 10 = 669,706
    sgd = dfx.analyze("mlp", train=True, optimizer="sgd", hardware=[]).to_dict()["training"]
    assert (sgd["optimizer_flops"], sgd["optimizer_state_bytes"]) == (2 * 669_706, 0)
    momentum = dfx.analyze("mlp", train=True, optimizer="sgd-momentum", hardware=[]).to_dict()["training"]
    assert (momentum["optimizer_flops"], momentum["optimizer_state_bytes"]) == (4 * 669_706, 669_706 * 4)


def test_attention_backward_is_two_and_a_half_forwards():
    # gpt2-block, batch 1, seq 32, 12 heads of 64, causal: 12*32*32 = 12,288 scores.
    # forward: 2 contractions 4*12*32*32*64 = 3,145,728; scale + mask 2 per score = 24,576;
    #   softmax 5 per score = 61,440 -> 3,231,744
    # backward: 5 contractions (2.5x, FlopCounterMode's sdpa_backward_flop_count) = 7,864,320;
    #   7 per score (recompute: scale, mask, - lse, exp; dS: - D, * P; * scale) = 86,016;
    #   D = rowsum(dO * O): 2 * 12*32*64 = 49,152 -> 7,999,488
    doc = dfx.analyze("gpt2-block", seq=32, train=True, hardware=[]).to_dict()
    fwd = [
        n for n in doc["nodes"] if n["target"].startswith("aten._scaled_dot_product") and "backward" not in n["target"]
    ]
    bwd = [n for n in doc["nodes"] if n["target"].startswith("aten._scaled_dot_product") and "backward" in n["target"]]
    assert len(fwd) == len(bwd) == 1 and doc["coverage"]["unknown_ops"] == []
    assert doc["training"]["loss"] == "sum"
    assert (fwd[0]["flops"], bwd[0]["flops"]) == (3_231_744, 7_999_488)


class _NoParams(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class _Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.lin.requires_grad_(False)

    def forward(self, x):
        return self.lin(x)


@pytest.mark.parametrize("model", [_NoParams(), _Frozen()])
def test_no_trainable_parameters_is_refused(model):
    with pytest.raises(CaptureError, match="no trainable parameters"):
        dfx.analyze(model, (torch.randn(2, 4),), train=True, hardware=[])


def test_no_trainable_parameters_on_the_command_line(tmp_path):
    path = tmp_path / "noparams.py"
    path.write_text(
        "import torch\nclass Act(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    )
    result = _cli("analyze", f"{path}:Act", "--input-shape", "2,4", "--train", "--hw", "h100")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no trainable parameters" in lines[0]


def test_a_model_returning_its_own_loss_is_differentiated_as_is():
    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 3)

        def forward(self, x, y):
            return nn.functional.cross_entropy(self.lin(x), y)

    doc = dfx.analyze(WithLoss(), (torch.randn(4, 8), torch.tensor([0, 1, 2, 0])), train=True, hardware=[]).to_dict()
    assert doc["training"]["loss"] == "model" and doc["coverage"]["unknown_ops"] == []
    assert {"aten.nll_loss_backward.default", "aten._log_softmax_backward_data.default"} <= {
        op for n in doc["nodes"] for op in n["aten_ops"]
    }


class _GridSample(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x, grid):
        return nn.functional.grid_sample(self.conv(x), grid, align_corners=False)


def test_an_uncosted_backward_op_is_listed():
    # grid_sample's backward has no rule (not in the Core ATen opset dfx covers: dfx ops): listed in
    # coverage, never costed as 0 silently
    from dfx.costs import UnknownOpWarning  # a subpackage: not an attribute of dfx until imported

    args = (torch.randn(2, 4, 3, 3), torch.zeros(2, 3, 3, 2))
    with pytest.warns(UnknownOpWarning, match="grid_sampler_2d_backward"):
        doc = dfx.analyze(_GridSample(), args, train=True, hardware=[]).to_dict()
    assert [u["target"] for u in doc["coverage"]["unknown_ops"]] == ["aten.grid_sampler_2d_backward.default"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"optimizer": "adam"}, "add train=True"),
        ({"train": True, "optimizer": "lamb"}, "unknown optimizer 'lamb'"),
        ({"train": True, "phase": "prefill"}, "to inference"),
        ({"train": True, "method": "fx"}, "does not apply with --train"),
    ],
)
def test_train_refuses_what_does_not_apply(kwargs, message):
    with pytest.raises(DfxError, match=message):
        dfx.analyze("mlp", hardware=[], **kwargs)


def test_every_training_field_is_documented(resnet_train_doc):
    from pathlib import Path

    documented = (Path(__file__).resolve().parents[2] / "docs" / "export-format.md").read_text()
    keys = list(resnet_train_doc["training"]) + list(resnet_train_doc["model"])
    missing = [k for k in keys if f"`{k}`" not in documented]
    assert not missing, f"training and model fields missing from docs/export-format.md: {missing}"


def test_a_tied_weight_is_one_parameter_with_one_gradient():
    # GPT-2's lm_head shares wte's weight: AOTAutograd would see two inputs, one never getting a
    # gradient. Trained once: 50 * 16 = 800 parameters, Adam state 2 * 800 * 4 bytes.
    class TiedLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.head = nn.Linear(16, 50, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, ids):
            return self.head(self.emb(ids))

    doc = dfx.analyze(TiedLM(), (torch.zeros(2, 8, dtype=torch.int64),), train=True, hardware=[]).to_dict()
    t = doc["training"]
    assert list(t["gradients"]) == ["emb.weight"]
    assert (t["trainable_parameter_count"], t["optimizer_state_bytes"]) == (800, 2 * 800 * 4)
    # 16 tokens: the head's forward [16, 16] x [16, 50] = 2*16*16*50 = 25,600 FLOPs; backward its
    # weight gradient dY^T X and its input gradient dY W (the embedding output needs one), 25,600 each
    assert doc["totals"]["flops_by_category"]["matmul"] == 3 * 25_600
    assert doc["coverage"]["unknown_ops"] == []
    ops = {op for n in doc["nodes"] for op in n["aten_ops"]}
    assert "aten.embedding_dense_backward.default" in ops


def test_gpt2_block_kept_for_backward_against_korthikanti():
    # Korthikanti et al. 2022 (arXiv:2205.05198, eq. 1): a transformer layer keeps 34*s*b*h +
    # 5*a*s^2*b bytes for backward at 2 bytes per element. The GPT-2 block has no dropout (its two
    # masks, s*b*h each, and the attention dropout go) and runs flash attention (no s^2 scores; it
    # keeps its output, the 2*s*b*h of the output projection's input, and its log-sum-exp):
    # 32*s*b*h at 2 bytes. In fp32, s = 1024, b = 1, h = 768: 2 * 32*1024*768 = 50,331,648, plus
    # the layer norms' mean and rstd 2 * 2 * 1024 * 4 = 16,384 and the log-sum-exp 12*1024*4 = 49,152.
    t = dfx.analyze("gpt2-block", train=True, hardware=[], dtype="fp32").to_dict()["training"]
    assert t["saved_activation_bytes"] + t["saved_input_bytes"] == 50_331_648 + 16_384 + 49_152
    # torch.compile's min-cut partitioner, run on the same joint graph, recomputes nothing here
    assert t["min_cut_saved_bytes"] == 50_331_648 + 16_384 + 49_152


def test_min_cut_partitioner_keeps_less_where_recomputing_is_cheap():
    # llama-layer, seq 64, fp32: the RMSNorms' fp32 upcasts, RoPE and SwiGLU's pointwise ops are
    # cheaper to recompute in the backward than to keep; the min-cut partitioner keeps less than
    # eager autograd, never more
    t = dfx.analyze("llama-layer", seq=64, train=True, hardware=[]).to_dict()["training"]
    eager = t["saved_activation_bytes"] + t["saved_input_bytes"]
    assert 0 < t["min_cut_saved_bytes"] < eager


def test_graph_prints_the_joint_graph():
    result = _cli("graph", "mlp", "--train", "--json")
    assert result.returncode == 0, result.stderr
    graph = json.loads(result.stdout)
    assert graph["capture_method"] == "aot_joint" and graph["meta"]["joint_loss_kind"] == "sum"
    targets = {n["target"] for n in graph["nodes"]}
    # the MLP's backward: ReLU's threshold_backward and the weight gradients' mm
    assert {"aten.threshold_backward.default", "aten.mm.default"} <= targets


class _LSTMNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


def test_an_lstm_training_step_has_its_backward_and_a_schedule_of_every_kernel():
    # The joint capture switches oneDNN off as the forward capture does: the LSTM's joint graph holds
    # its per-step decomposition and backward, not mkldnn_rnn_layer(_backward), which no rule prices
    # (the backward was 0.01x the forward, and a fusion through the unpriced op left 12 of 14 GPU
    # kernels unscheduled, the makespan below the critical path).
    # Forward matmuls by hand, input [2, 5, 8]: 10 rows x (layer 1: 2*8*64 + 2*16*64 = 3,072;
    # layer 2: 2*16*64 + 2*16*64 = 4,096) = 71,680, and the head 2 * 2*16*4 = 256. The weight
    # gradients alone cost the same matmul FLOPs again.
    import warnings

    from dfx.costs import UnknownOpWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownOpWarning)  # every op of the joint graph is priced
        analysis = dfx.analyze(_LSTMNet(), (torch.randn(2, 5, 8),), train=True, hardware=["nvidia-h100-sxm"])
    doc = analysis.to_dict()
    assert doc["training"]["backward_flops"] >= 71_680 + 256
    h100 = doc["hardware"]["nvidia-h100-sxm"]
    assert h100["critical_path"]["time_s"] <= h100["makespan_s"] <= h100["serial_time_s"]


def test_a_tensor_saved_for_backward_is_not_aliased_through_an_op_of_unknown_cost():
    import warnings

    from dfx.costs import annotate
    from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec
    from dfx.training.step import base_tensor as _base

    x = TensorSpec((4, 8), "float32", (8, 1))

    def call(name, op, src):
        return Node(
            name, "call_function", op, inputs=(Edge(src),), outputs=(x,), aten_calls=(AtenCall(op, (x,), (), (x,)),)
        )

    graph = Graph(
        name="g",
        nodes=(
            Node("a", "placeholder", "a", outputs=(x,), input_kind="input"),
            call("v", "aten.view.default", "a"),  # a view: its data is a's
            call("u", "aten.mystery_op.default", "a"),  # no cost rule: a tensor of its own, size unknown
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        costed = annotate(graph)
    assert _base(costed, "v", 0) == ("a", 0)
    assert _base(costed, "u", 0) == ("u", 0)  # before: ("a", 0), as if u were a view of a


class _LinearThenFFT(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return torch.fft.rfft(self.lin(x)).abs()


def test_a_bf16_fft_in_a_training_step_names_the_dtype_to_give():
    # torch's FFTs take float32 and float64 (torch/_refs/fft.py); the advice about gradients and
    # data-dependent sizes that AOTAutograd's other failures get would send the user the wrong way
    from dfx.capture.joint import capture_joint

    model = _LinearThenFFT().to(torch.bfloat16)
    with pytest.raises(CaptureError) as info:
        capture_joint(model, (torch.randn(8, 16, dtype=torch.bfloat16),))
    message = str(info.value)
    assert message.startswith(
        "could not capture the training step: torch has no bf16 kernel for an op of this model "
        "(torch's FFTs take fp32 and fp64); give --dtype fp32 (aot_joint: "
    )
    assert "requires_grad_" not in message
