"""Capture: every method, the modes users run in, and one-line errors when capture is impossible."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dfx
from dfx.capture import capture
from dfx.errors import CaptureError
from dfx.ir import Graph


class Block(nn.Module):
    """Linear -> SDPA -> LayerNorm on (1, 16, 64): small enough to reason about by hand."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)
        self.norm = nn.LayerNorm(64)

    def forward(self, x):
        q = self.proj(x).view(1, 16, 4, 16).transpose(1, 2)  # (B, H, S, D) = (1, 4, 16, 16)
        y = F.scaled_dot_product_attention(q, q, q)
        return self.norm(y.transpose(1, 2).reshape(1, 16, 64))


def _ops(g: Graph) -> list[str]:
    return [c.op for n in g.nodes for c in n.aten_calls]


@pytest.mark.parametrize("method", ["export", "fx", "dynamo"])
def test_every_method_on_the_meta_device(method):
    with torch.device("meta"):
        model = Block()
    g = capture(model, (torch.empty(1, 16, 64, device="meta"),), method=method)
    assert g.capture_method == method
    out_node = g.nodes[-1]
    assert out_node.op == "output"
    (final,) = g.input_specs(out_node)
    assert final.shape == (1, 16, 64) and final.dtype == "float32"
    # the linear layer dispatched to one addmm; attention (on meta: the math backend's two bmm)
    # and layer norm are there too
    assert sum(op.startswith("aten.addmm") for op in _ops(g)) == 1
    assert any("attention" in op for op in _ops(g)) or sum(op.startswith("aten.bmm") for op in _ops(g)) == 2
    assert any("layer_norm" in op for op in _ops(g))
    # parameters by the user's names, whatever the tracer called them
    assert {p.name for p in g.parameters} == {"proj.weight", "proj.bias", "norm.weight", "norm.bias"}
    readers = [n for n in g.nodes if "proj.weight" in n.params]
    assert len(readers) == 1 and readers[0].module_path == "proj"


def test_node_records_everything_the_ir_promises():
    g = capture(Block(), (torch.randn(1, 16, 64),), method="export")
    linear = next(n for n in g.nodes if n.params and n.params[0] == "proj.weight")
    assert linear.op == "call_function" and linear.target == "aten.linear.default"
    assert {e.src for e in linear.inputs} >= {"x"}
    assert linear.outputs[0].shape == (1, 16, 64) and linear.outputs[0].stride == (1024, 64, 1)
    assert "%x" in linear.args_repr
    assert Graph.from_json(g.to_json()) == g


def test_dfx_capture_is_callable_and_accepts_a_bare_tensor():
    g = dfx.capture(nn.Linear(3, 4), torch.randn(2, 3))
    assert g.capture_method == "export"


@pytest.mark.parametrize("method", ["export", "fx", "dynamo"])
def test_kwargs_only_inputs(method):
    class Embeds(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, input_ids=None, inputs_embeds=None):
            return self.lin(inputs_embeds)

    g = capture(Embeds(), (), {"inputs_embeds": torch.randn(2, 8)}, method=method)
    assert sum(op.startswith(("aten.addmm", "aten.mm")) for op in _ops(g)) == 1


def _encoder():
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=64, batch_first=True)
    return nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)


@pytest.mark.parametrize(
    "mode",
    ["train", "eval", "eval_frozen", "eval_frozen_no_grad", "eval_frozen_inference_mode"],
)
def test_fast_path_layers_are_seen_through(mode):
    # PB-10: eval + frozen weights (or no_grad) makes PyTorch run the whole layer as one fused
    # native op. Capture must still see in_proj, out_proj and the two FFN matmuls, plus attention.
    torch.manual_seed(0)
    enc = _encoder()
    if mode != "train":
        enc.eval()
    if "frozen" in mode:
        for p in enc.parameters():
            p.requires_grad_(False)
    x = torch.randn(1, 8, 64)
    if mode.endswith("no_grad"):
        with torch.no_grad():
            g = capture(enc, (x,))
    elif mode.endswith("inference_mode"):
        with torch.inference_mode():
            g = capture(enc, (x,))
    else:
        g = capture(enc, (x,))
    ops = _ops(g)
    assert not any("native_multi_head_attention" in op or "transformer_encoder_layer" in op for op in ops)
    assert sum(op.startswith(("aten.addmm", "aten.mm")) for op in ops) == 4
    assert any("attention" in op or op.startswith("aten.bmm") for op in ops)
    # the user's fast-path setting is restored
    assert torch.backends.mha.get_fastpath_enabled()


def test_tied_weights_are_one_parameter():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 16)
            self.head = nn.Linear(16, 100, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, ids):
            return self.head(self.emb(ids))

    g = capture(Tied(), (torch.randint(0, 100, (2, 5)),))
    (p,) = g.parameters
    assert p.name == "emb.weight" and p.aliases == ("head.weight",)
    # two nodes read it: the lookup and the head
    assert sum("emb.weight" in n.params for n in g.nodes) == 2


def test_shape_assert_specialises_under_export():
    # PB-20 case 1: fx cannot trace `assert x.shape == y.shape`; auto falls through to export,
    # which specialises and keeps the add.
    class AssertAdd(nn.Module):
        def forward(self, x, y):
            assert x.shape == y.shape
            return x + y

    g = capture(AssertAdd(), (torch.randn(4, 8), torch.randn(4, 8)))
    assert [op for op in _ops(g) if op.startswith("aten.add")] == ["aten.add.Tensor"]


def test_parameter_shape_branch_takes_the_true_branch():
    # PB-20 case 2: p is (5, 3); 5 < 10 so forward is x @ p with no relu.
    class Branch(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(torch.randn(5, 3))

        def forward(self, x):
            if self.p.shape[0] < 10:
                return x @ self.p
            return torch.relu(x @ self.p)

    for method in ("auto", "export", "dynamo"):
        g = capture(Branch(), (torch.randn(10, 5),), method=method)
        ops = _ops(g)
        assert any(op.startswith("aten.mm") for op in ops), method
        assert not any("relu" in op for op in ops), method
    # symbolic_trace proxies the parameter's shape too (pytorch#61733): a clear error, no dropped branch
    with pytest.raises(
        CaptureError, match="fx: TraceError: symbolically traced variables cannot be used as inputs to control flow"
    ):
        capture(Branch(), (torch.randn(10, 5),), method="fx")


def test_data_dependent_branch_names_the_line():
    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x + 1
            return x - 1

    with pytest.raises(CaptureError) as info:
        capture(DataDependent(), (torch.randn(3),))
    message = str(info.value)
    assert "\n" not in message
    assert "export:" in message and "fx:" in message and "dynamo:" in message
    # every tracer's reason names the line in the user's code (fx's through the traceback)
    for part in message.split("; "):
        assert "test_capture.py:" in part, part


class _RFFT(nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x)


def test_a_bf16_fft_names_the_op_and_the_dtype_to_give():
    # torch's FFTs take float32 and float64 (torch/_refs/fft.py, _promote_type_fft): a bf16 model
    # with one cannot be captured, and torch's own "Unsupported dtype BFloat16" said nothing of --dtype
    with pytest.raises(CaptureError) as info:
        capture(_RFFT(), (torch.randn(8, 16, dtype=torch.bfloat16),))
    message = str(info.value)
    assert message.startswith(
        "could not capture the model: torch has no bf16 kernel for fft_rfft (torch's FFTs take fp32 and fp64); "
        "give --dtype fp32 (export: "
    )
    assert "\n" not in message
    # the fix it names works: (8, 16) fp32 -> (8, 16 // 2 + 1) = (8, 9) complex64
    out = [n for n in capture(_RFFT(), (torch.randn(8, 16),)).nodes if n.op == "call_function"][-1]
    assert (out.outputs[0].shape, out.outputs[0].dtype) == ((8, 9), "complex64")


def test_a_failure_that_is_not_a_dtype_gets_no_dtype_hint():
    class Branchy(nn.Module):
        def forward(self, x):
            return x + 1 if x.sum() > 0 else x - 1

    with pytest.raises(CaptureError) as info:
        capture(Branchy(), (torch.randn(3),))
    assert str(info.value).startswith("could not capture the model (export: ")


def test_not_a_module_and_mismatched_args():
    with pytest.raises(CaptureError, match="expected a torch.nn.Module, got function"):
        capture(lambda x: x, (torch.randn(2),))
    with pytest.raises(CaptureError, match="do not match Linear.forward"):
        capture(nn.Linear(2, 2), (torch.randn(2), torch.randn(2)))
    with pytest.raises(CaptureError, match="unknown capture method 'jit'"):
        capture(nn.Linear(2, 2), (torch.randn(2),), method="jit")


def test_real_weights_are_not_run():
    # A module whose forward would allocate 4 GiB for real: fake tensors allocate nothing.
    class Huge(nn.Module):
        def forward(self, x):
            return x.expand(1024, 1024, 1024).contiguous()

    g = capture(Huge(), (torch.randn(1, 1, 1024),))
    (out,) = g.input_specs(g.nodes[-1])
    assert out.nbytes == 4 * 1024**3


def test_fx_fixes_non_tensor_arguments_at_their_values():
    # symbolic_trace must not bind defaults to None: use_proj=True keeps the projection,
    # 2*8*64*64 + 8*64 = 66,048 FLOPs for the linear, + 8*64 = 512 for the scale.
    class Optional(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 64)

        def forward(self, x, use_proj=True, scale=1.0):
            return self.lin(x) * scale if use_proj else x

    x = torch.randn(8, 64)
    on = dfx.annotate(capture(Optional(), (x,), method="fx"))
    assert on.total.flops == 66_048 + 512
    off = dfx.annotate(capture(Optional(), (x,), {"use_proj": False}, method="fx"))
    assert off.total.flops == 0


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_attention_is_one_fused_call_on_every_device(device):
    # On meta, SDPA lowers to its math backend; dfx records the one fused call every GPU and
    # accelerator backend runs, so its traffic is q, k, v in and the output out:
    # 4 tensors of (1, 4, 16, 16) fp32 = 4 * 1024 * 4 B = 16,384 B (q, k, v are one tensor here,
    # read three times).
    with torch.device(device):
        model = Block()
    g = capture(model, (torch.empty(1, 16, 64, device=device),))
    (attn,) = [n for n in g.nodes if "attention" in n.target]
    assert [c.op for c in attn.aten_calls] == ["aten.scaled_dot_product_attention.default"]
    cost = dfx.annotate(g)[attn.name].cost
    assert cost.bytes_read + cost.bytes_written == 16_384


@pytest.mark.parametrize("method", ["export", "fx", "dynamo"])
def test_data_dependent_size_is_costed_at_its_bound_and_reported(method):
    # PB-22 case 2: x[mask] with mask (4,) gives [u0, 16, 256], 0 <= u0 <= 4; Linear 256 -> 3072.
    # Per row of u0: 2*16*256*3072 = 25,165,824 FLOPs; input 16*256*4 = 16,384 B; output
    # 16*3072*4 = 196,608 B; the weight 3072*256*4 = 3,145,728 B once. Costed at the bound u0 = 4.
    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(256, 3072, bias=False)

        def forward(self, x, mask):
            return self.lin(x[mask])

    mask = torch.tensor([True, False, True, False])
    with pytest.warns(UserWarning, match=r"data-dependent sizes costed at their upper bounds \(u0 <= 4\)"):
        g = capture(Masked(), (torch.randn(4, 16, 256), mask), method=method)
    assert dict(g.meta)["data_dependent_sizes"] == "u0 <= 4"
    costed = dfx.annotate(g)
    assert costed.flops_by_category()["matmul"] == 25_165_824 * 4
    (mm,) = [n for n in costed.nodes if n.category.value == "matmul"]
    assert mm.cost.bytes_read == 16_384 * 4 + 3_145_728
    assert mm.cost.bytes_written == 196_608 * 4


def test_attention_output_has_the_fused_kernels_layout():
    # Fused kernels write [B, H, S, D] over [B, S, H, D] memory, so the transpose(1, 2).contiguous()
    # that follows attention in GPT-style blocks is free; on meta the math backend's plain layout
    # would make it a copy of 1*16*64*4 = 4,096 B read and written.
    class Heads(nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q).transpose(1, 2).contiguous()

    g = capture(Heads(), (torch.empty(1, 4, 16, 16, device="meta"),))
    costed = dfx.annotate(g)
    (contig,) = [n for n in costed.nodes if "contiguous" in n.node.target]
    assert contig.cost.bytes_read + contig.cost.bytes_written == 0
