"""One symbolic export gives, by substitution, the very graph a concrete capture gives at each size."""

import pytest

from dfx.capture import capture
from dfx.capture.symbolic import GuardFailure, capture_symbolic, seq_sized_buffers
from dfx.errors import CaptureError
from dfx.models import resolve


def _symbolic(name: str, symbolic_seq: bool = True, seq_buffers: tuple[str, ...] = ()):
    spec = resolve(name, batch=2, seq=16, dtype="bfloat16")
    sc = capture_symbolic(
        spec.model,
        spec.args,
        spec.kwargs,
        batch=2,
        seq=16,
        symbolic_seq=symbolic_seq,
        seq_buffers=seq_buffers,
        name=spec.name,
    )
    # node names come from a concrete capture at the export's own sizes; then it must match exactly
    assert sc.align(capture(spec.model, spec.args, spec.kwargs, name=spec.name), 2, 16)
    return sc


def _concrete(name: str, batch: int, seq: int):
    spec = resolve(name, batch=batch, seq=seq, dtype="bfloat16")
    return capture(spec.model, spec.args, spec.kwargs, name=spec.name)


@pytest.mark.parametrize("name", ["gpt2-block", "bert-layer"])
def test_substituted_graph_equals_concrete_capture(name):
    sc = _symbolic(name)
    assert sc.batch_symbolic and sc.seq_symbolic
    for batch, seq in [(4, 16), (3, 40), (5, 8)]:
        g = sc.graph_at(batch, seq)
        assert g.to_json() == _concrete(name, batch, seq).to_json(), (batch, seq)
        # the QKV projection's output is [batch, seq, 3 * 768], from the substituted sizes
        assert any(o.shape == (batch, seq, 3 * 768) for n in g.nodes for o in n.outputs) or name == "bert-layer"


def test_a_model_sized_by_seq_is_symbolic_in_batch_only():
    # llama3-8b-layer's rotary table is built to max_seq_len=seq: the export specialises seq
    spec = resolve("llama3-8b-layer", batch=2, seq=16, dtype="bfloat16")
    with pytest.raises(CaptureError, match="symbolic export failed"):
        capture_symbolic(spec.model, spec.args, spec.kwargs, batch=2, seq=16)
    sc = _symbolic("llama3-8b-layer", symbolic_seq=False)
    assert sc.batch_symbolic and not sc.seq_symbolic
    assert sc.graph_at(5, 16).to_json() == _concrete("llama3-8b-layer", 5, 16).to_json()


def test_seq_sized_buffers_exported_as_inputs_keep_seq_symbolic():
    # The rotary tables are (seq, head_dim) buffers; exported as inputs whose dim 0 is the seq
    # symbol and put back as buffers, one export covers every seq: the graph at (batch, seq) is the
    # concrete capture of the model *built* at that seq (its tables have seq rows), byte for byte.
    tables = seq_sized_buffers(
        resolve("llama3-8b-layer", batch=2, seq=16, dtype="bfloat16").model,
        resolve("llama3-8b-layer", batch=2, seq=24, dtype="bfloat16").model,
        16,
        24,
    )
    assert tables == ("rotary.cos", "rotary.sin")
    sc = _symbolic("llama3-8b-layer", seq_buffers=tables)
    assert sc.batch_symbolic and sc.seq_symbolic
    for batch, seq in [(3, 40), (5, 8), (2, 100)]:
        g = sc.graph_at(batch, seq)
        assert g.to_json() == _concrete("llama3-8b-layer", batch, seq).to_json(), (batch, seq)
        # the buffers keep their kind and take the new length: 2 tables x seq x 128 head dim
        tables_of = [p for p in g.parameters if p.name in tables]
        assert [p.kind for p in tables_of] == ["buffer", "buffer"]
        assert all(p.spec.shape == (seq, 128) for p in tables_of)
    # the model is left as it was: no forward of the export's left on the instance
    spec = resolve("llama3-8b-layer", batch=2, seq=16, dtype="bfloat16")
    capture_symbolic(spec.model, spec.args, spec.kwargs, batch=2, seq=16, seq_buffers=tables)
    assert "forward" not in vars(spec.model)
    with pytest.raises(CaptureError, match="not a buffer"):
        capture_symbolic(spec.model, spec.args, spec.kwargs, batch=2, seq=16, seq_buffers=("layer.nope",))
    assert "forward" not in vars(spec.model)


def test_a_forward_set_on_the_instance_runs_in_the_lifted_export_and_stays():
    import torch

    class Table(torch.nn.Module):
        def __init__(self, seq):
            super().__init__()
            self.register_buffer("pe", torch.zeros(seq, 8))

        def forward(self, x):
            return x + self.pe[: x.shape[1]]

    model = Table(16)
    inner = model.forward

    def doubled(x):  # a user's wrapper on the instance: the model computes 2 * (x + pe)
        return inner(x) * 2

    model.forward = doubled
    x = torch.zeros(2, 16, 8)
    sc = capture_symbolic(model, (x,), {}, batch=2, seq=16, seq_buffers=("pe",))
    # the graph at (3, 24): an add then a mul of (3, 24, 8), as model(x) runs; the wrapper is left in place
    g = sc.graph_at(3, 24)
    ops = [n.target for n in g.nodes if n.op == "call_function"]
    assert any("add" in t for t in ops) and any("mul" in t for t in ops), ops
    assert [n.outputs[0].shape for n in g.nodes if "mul" in str(n.target)] == [(3, 24, 8)]
    assert vars(model)["forward"] is doubled and model.pe.shape == (16, 8)


def test_state_sized_by_seq_elsewhere_is_not_lifted():
    import torch

    class Learned(torch.nn.Module):  # learned positions: a *parameter* of seq rows
        def __init__(self, seq):
            super().__init__()
            self.pos = torch.nn.Parameter(torch.zeros(seq, 4))

    class Wide(torch.nn.Module):  # a buffer sized by seq in dim 1, not in its rows
        def __init__(self, seq):
            super().__init__()
            self.register_buffer("mask", torch.zeros(4, seq))

    assert seq_sized_buffers(Learned(16), Learned(24), 16, 24) is None
    assert seq_sized_buffers(Wide(16), Wide(24), 16, 24) is None
    assert seq_sized_buffers(Wide(16), Wide(16), 16, 24) == ()


def test_sizes_outside_the_bucket_fail_its_guards():
    sc = _symbolic("bert-layer")
    # torch specialises size 1: the symbols range from 2, so batch 1 is another bucket
    assert not sc.holds_at(1, 16)
    with pytest.raises(GuardFailure, match="outside"):
        sc.graph_at(1, 16)
    with pytest.raises(GuardFailure, match="outside"):  # the same checks without building the graph
        sc.check_guards(1, 16)
    assert sc.check_guards(3, 40) is None


def test_example_sizes_must_tell_the_dims_apart():
    spec = resolve("bert-layer", batch=8, seq=8, dtype="bfloat16")
    with pytest.raises(CaptureError, match="differ"):
        capture_symbolic(spec.model, spec.args, batch=8, seq=8)


def test_a_model_that_branches_on_a_size_is_refused_not_guessed():
    import torch

    class Branchy(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[1] > 32 else x + 1  # a different graph above 32 tokens

    with pytest.raises(CaptureError, match="symbolic export failed"):
        capture_symbolic(Branchy(), (torch.zeros(2, 16, 4),), batch=2, seq=16)
    # symbolic in batch only, the branch is decided at seq 16 and the graph holds for every batch
    sc = capture_symbolic(Branchy(), (torch.zeros(2, 16, 4),), batch=2, seq=16, symbolic_seq=False)
    assert sc.align(capture(Branchy(), (torch.zeros(2, 16, 4),)), 2, 16)
    g = sc.graph_at(7, 16)
    assert g.to_json() == capture(Branchy(), (torch.zeros(7, 16, 4),)).to_json()
    assert [n.target for n in g.nodes if n.op == "call_function"] == ["aten.add.Tensor"]
