"""``resolve``: built-in names, ``path/to/file.py:ClassOrFactory``, and its one-line errors."""

import textwrap

import pytest
import torch

from dfx.capture import capture
from dfx.errors import ModelSpecError
from dfx.models import resolve

NET = """
import torch
import torch.nn as nn


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 16)

    def forward(self, x, y):
        return self.proj(x) + y  # (B, 8) -> (B, 16), plus y (B, 16)


def make_mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


class NeedsArgs(nn.Module):
    def __init__(self, width):
        super().__init__()


def not_a_module():
    return 42
"""


@pytest.fixture
def net_file(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(textwrap.dedent(NET))
    return path


def one_line(info) -> str:
    message = str(info.value)
    assert "\n" not in message
    return message


def test_builtin_name_resolves_like_build():
    spec = resolve("vit-block", batch=2, seq=None, dtype="bfloat16", input_shapes=None)
    assert spec.name == "vit-block"
    assert spec.args[0].shape == (2, 197, 768) and spec.args[0].dtype == torch.bfloat16


def test_class_from_a_file_with_two_inputs(net_file):
    spec = resolve(f"{net_file}:TwoInputs", batch=1, seq=None, dtype="float32", input_shapes=[(3, 8), (3, 16)])
    assert [tuple(a.shape) for a in spec.args] == [(3, 8), (3, 16)]
    assert all(a.device.type == "meta" for a in spec.args)
    assert all(p.device.type == "meta" for p in spec.model.parameters())
    assert not spec.model.training
    g = capture(spec.model, spec.args, spec.kwargs)
    assert any("linear" in n.target or "addmm" in n.target for n in g.nodes)


def test_factory_from_a_file_in_bf16(net_file):
    spec = resolve(f"{net_file}:make_mlp", batch=1, seq=None, dtype="bf16", input_shapes=[(5, 4)])
    assert spec.args[0].dtype == torch.bfloat16
    assert {p.dtype for p in spec.model.parameters()} == {torch.bfloat16}
    capture(spec.model, spec.args, spec.kwargs)


def test_two_files_with_the_same_name_do_not_clash(tmp_path, net_file):
    other = tmp_path / "sub"
    other.mkdir()
    (other / "net.py").write_text("import torch.nn as nn\n\ndef make_mlp():\n    return nn.Linear(3, 3)\n")
    a = resolve(f"{net_file}:make_mlp", input_shapes=[(1, 4)])
    b = resolve(f"{other / 'net.py'}:make_mlp", input_shapes=[(1, 3)])
    assert isinstance(a.model, torch.nn.Sequential) and isinstance(b.model, torch.nn.Linear)


def test_missing_file(tmp_path):
    with pytest.raises(ModelSpecError) as info:
        resolve(f"{tmp_path / 'nope.py'}:Net", input_shapes=[(1, 4)])
    assert "not found" in one_line(info) and "nope.py" in str(info.value)


def test_missing_attribute_suggests_close_names(net_file):
    with pytest.raises(ModelSpecError) as info:
        resolve(f"{net_file}:TwoInput", input_shapes=[(1, 8)])
    message = one_line(info)
    assert "no attribute 'TwoInput'" in message and "did you mean TwoInputs" in message


def test_missing_input_shape(net_file):
    with pytest.raises(ModelSpecError) as info:
        resolve(f"{net_file}:TwoInputs", input_shapes=None)
    assert "--input-shape" in one_line(info)


def test_bad_input_shape(net_file):
    with pytest.raises(ModelSpecError, match="positive integers"):
        resolve(f"{net_file}:TwoInputs", input_shapes=[(1, 0)])


def test_attribute_not_named(net_file):
    with pytest.raises(ModelSpecError) as info:
        resolve(str(net_file), input_shapes=[(1, 8)])
    assert "file.py:ClassOrFactory" in one_line(info)


def test_class_that_needs_arguments(net_file):
    with pytest.raises(ModelSpecError) as info:
        resolve(f"{net_file}:NeedsArgs", input_shapes=[(1, 8)])
    assert "no arguments" in one_line(info)


def test_factory_that_returns_no_module(net_file):
    with pytest.raises(ModelSpecError, match="not a torch.nn.Module"):
        resolve(f"{net_file}:not_a_module", input_shapes=[(1, 8)])


def test_file_that_fails_to_import_names_the_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import torch\n\nx = 1 / 0\n")
    with pytest.raises(ModelSpecError) as info:
        resolve(f"{path}:Net", input_shapes=[(1, 8)])
    message = one_line(info)
    assert "at line 3" in message and "ZeroDivisionError" in message


def test_syntax_error_in_the_file(tmp_path):
    path = tmp_path / "typo.py"
    path.write_text("def f(:\n    pass\n")
    with pytest.raises(ModelSpecError) as info:
        resolve(f"{path}:f", input_shapes=[(1, 8)])
    assert "SyntaxError" in one_line(info)


def test_input_shapes_are_refused_for_builtins():
    with pytest.raises(ModelSpecError, match="--input-shape applies to"):
        resolve("gpt2-block", input_shapes=[(1, 8)])


@pytest.mark.parametrize("spec", ["", "   "])
def test_empty_spec(spec):
    with pytest.raises(ModelSpecError, match="give a model"):
        resolve(spec)


def test_unknown_builtin_through_resolve():
    with pytest.raises(ModelSpecError, match="did you mean llama-layer"):
        resolve("llama-layr")
