"""One symbolic export gives, by substitution, the very graph a concrete capture gives at each size."""

import pytest

from dfx.capture import capture
from dfx.capture.symbolic import GuardFailure, capture_symbolic
from dfx.errors import CaptureError
from dfx.models import resolve


def _symbolic(name: str, symbolic_seq: bool = True):
    spec = resolve(name, batch=2, seq=16, dtype="bfloat16")
    sc = capture_symbolic(
        spec.model, spec.args, spec.kwargs, batch=2, seq=16, symbolic_seq=symbolic_seq, name=spec.name
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
