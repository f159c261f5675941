"""Guards read from TorchDynamo's own guard manager, checked against real recompiles."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo as dynamo

from dfx.errors import DfxError
from dfx.shapes import guards


class Branchy(torch.nn.Module):
    """forward branches on dim 1: a dynamic dim 1 gets the guard x.size()[1] >= 101."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > 100:
            return x * 2
        return x + 1


def _recompiles(model, example, new, dynamic_dims=()):
    """Compile ``model`` on ``example`` with a counting backend, call it on ``new``: graphs compiled after the first."""
    compiled = []

    def backend(gm, example_inputs):
        compiled.append(gm)
        return gm.forward

    dynamo.reset()
    x = example.clone()
    for d in dynamic_dims:
        dynamo.mark_dynamic(x, d)
    fn = torch.compile(model, backend=backend)
    fn(x)
    fn(new)
    return len(compiled) - 1


def test_branch_on_dynamic_dim_names_that_dim():
    r = guards(Branchy(), (torch.randn(2, 128, 4),), dynamic=["x:1"])
    (sym,) = r.symbols
    assert sym.source == "x.size()[1]" and sym.min == 101 and sym.max is None
    assert r.inputs[0].shape == (2, sym.symbol, 4)
    shape_texts = [g.text for g in r.by_group("shape")]
    assert "101 <= L['args'][0].size()[1]" in shape_texts
    assert f"101 <= {sym.symbol}" in [g.symbolic for g in r.by_group("shape")]  # the branch x.shape[1] > 100
    assert "symbols" in r.to_dict() and r.to_dict()["schema"] == "dfx.guards/1"


@pytest.mark.parametrize(
    "new_shape, passes",
    [((2, 300, 4), True), ((2, 50, 4), False), ((3, 128, 4), False)],
)
def test_check_agrees_with_counted_recompiles(new_shape, passes):
    example = torch.randn(2, 128, 4)
    r = guards(Branchy(), (example,), dynamic=["x:1"], check=[new_shape])
    assert r.check.passes is passes
    assert _recompiles(Branchy(), example, torch.randn(new_shape), dynamic_dims=(1,)) == (0 if passes else 1)
    if new_shape[1] == 50:
        assert r.check.failed == ("101 <= L['args'][0].size()[1]",)  # the branch's guard, named


def test_changed_dtype_fails_tensor_match():
    example = torch.randn(4, 8)
    r = guards(torch.nn.ReLU(), (example,), check=["4,8:float64"])
    assert not r.check.passes
    assert any("dtype mismatch" in f for f in r.check.failed)
    assert _recompiles(torch.nn.ReLU(), example, torch.randn(4, 8, dtype=torch.float64)) == 1


def test_new_static_shape_fails_named_guard():
    example = torch.randn(4, 8)
    r = guards(torch.nn.ReLU(), (example,), check=[(4, 9)])
    assert not r.check.passes and any("size mismatch at index 1" in f for f in r.check.failed)
    assert _recompiles(torch.nn.ReLU(), example, torch.randn(4, 9)) == 1
    same = guards(torch.nn.ReLU(), (example,), check=[(4, 8)])
    assert same.check.passes and same.check.failed == ()


def test_pb22_batch_one_is_specialised_and_warned():
    # PB-22 case 1: Conv2d(3,16,3,padding=1) on (1,3,32,32) with the batch marked dynamic
    conv = torch.nn.Conv2d(3, 16, 3, padding=1)
    r = guards(conv, (torch.randn(1, 3, 32, 32),), dynamic=["0:0"], check=["4,3,32,32"])
    (inp,) = r.inputs
    assert inp.shape[0] == 1 and inp.specialized == (0,)  # never reported as a symbolic batch
    assert r.symbols == ()
    assert any("specialised to 1" in w and "size >= 2" in w for w in r.warnings)
    assert not r.check.passes  # batch 4 needs a recompile: the batch-1 graph is not general
    assert _recompiles(conv, torch.randn(1, 3, 32, 32), torch.randn(4, 3, 32, 32), dynamic_dims=(0,)) == 1


def test_pb22_batch_two_is_symbolic():
    conv = torch.nn.Conv2d(3, 16, 3, padding=1)
    r = guards(conv, (torch.randn(2, 3, 32, 32),), dynamic=["input:0"], check=["4,3,32,32"])
    assert isinstance(r.inputs[0].shape[0], str) and r.warnings == ()
    assert r.check.passes


def test_global_state_and_graph_breaks():
    class Breaks(torch.nn.Module):
        def forward(self, x):
            y = x + 1
            print("side effect", end="")  # a graph break
            return y * 2

    r = guards(Breaks(), (torch.randn(2, 2),))
    texts = [g.text for g in r.by_group("global")]
    assert "grad_mode == true" in texts
    assert len(r.graph_breaks) == 1 and "print" in r.graph_breaks[0].reason
    assert r.to_dict()["graph_breaks"][0]["count"] >= 1  # Dynamo counts a break once per trace attempt


def test_bad_dynamic_and_check_are_one_line_errors():
    x = (torch.randn(2, 3),)
    for kwargs, match in [
        ({"dynamic": ["y:0"]}, "no tensor input 'y'"),
        ({"dynamic": ["input:5"]}, "has 2 dimensions"),
        ({"dynamic": ["x"]}, "INPUT:DIM"),
        ({"check": ["2,3", "4,4"]}, "one per input"),
        ({"check": ["2,a"]}, "bad --check"),
        ({"check": ["2,3:notadtype"]}, "unknown dtype"),
    ]:
        with pytest.raises(DfxError, match=match) as err:
            guards(torch.nn.ReLU(), x, **kwargs)
        assert "\n" not in str(err.value)


def test_builtin_model_on_meta():
    r = guards("mlp", batch=2, check=["4,1,28,28"])
    assert r.inputs[0].device == "meta" and r.inputs[0].shape == (2, 1, 28, 28)
    assert not r.check.passes and "size mismatch at index 0" in r.check.failed[0]
