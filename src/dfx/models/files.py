"""Models from the user's own Python file: ``path/to/file.py:ClassOrFactory``.

The file is imported by path (it need not be on ``sys.path`` or in a package); the named class is
instantiated with no arguments, or the named function is called with none, on the requested device.
Example inputs are float tensors of the shapes the user gives, one per positional input.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch
import torch.nn as nn

from dfx.errors import ModelSpecError, user_code
from dfx.ir.spec import InputShape
from dfx.models.spec import ModelSpec, check_input_numel, close_matches, parse_dtype

__all__ = ["build_from_file", "check_not_a_path", "is_file_spec"]


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a Python file: ``net.py:Net``, or a bare ``net.py`` (an error later)."""
    path = spec.rpartition(":")[0] if ":" in spec else spec
    return path.endswith(".py")


def build_from_file(
    spec: str,
    *,
    input_shapes: list[tuple[int, ...]] | None,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "meta",
) -> ModelSpec:
    """Import ``path.py``, build ``Attr`` from ``path.py:Attr``, and make inputs from ``input_shapes``.

    Raises
    ------
    ModelSpecError
        When the attribute is not named, the file is missing or fails to import, the attribute is
        missing or does not give an ``nn.Module``, or no input shapes are given.
    """
    path_text, _, attr = spec.rpartition(":")
    if not attr or not path_text:
        raise ModelSpecError(f"name the model in {spec!r} as path/to/file.py:ClassOrFactory")
    path = Path(path_text).expanduser()
    if path.is_dir():
        raise ModelSpecError(
            f"model file {str(path)!r} is a folder; give the Python file in it: path/to/file.py:{attr}"
        )
    if not path.is_file():
        raise ModelSpecError(f"model file {str(path)!r} not found; give an existing path/to/file.py:{attr}")
    torch_dtype = parse_dtype(dtype)
    module = _import_file(path)
    factory = getattr(module, attr, None)
    if factory is None:
        names = [n for n in vars(module) if not n.startswith("_")]
        near = close_matches(attr, names)
        if not near:  # no close name: list the modules it defines, the usual things to name
            defined = [
                n
                for n, v in vars(module).items()
                if not n.startswith("_")
                and isinstance(v, type)
                and issubclass(v, nn.Module)
                and v.__module__ == module.__name__
            ]
            near = f"; its nn.Module classes: {', '.join(defined)}" if defined else "; it defines no nn.Module class"
        raise ModelSpecError(f"{str(path)!r} has no attribute {attr!r}{near} (give path/to/file.py:ClassOrFactory)")
    shapes = _check_shapes(spec, input_shapes)
    with torch.device(device), user_code(f"building {spec}"):
        try:
            model = factory()
        except Exception as exc:
            raise ModelSpecError(
                f"{spec} could not be built with no arguments ({_one_line(exc)}); "
                "give a class or factory that needs none"
            ) from None
    if not isinstance(model, nn.Module):
        raise ModelSpecError(f"{spec} gave a {type(model).__name__}, not a torch.nn.Module")
    model = model.to(dtype=torch_dtype).eval()
    args = tuple(_example_input(s, torch_dtype, device) for s in shapes)
    shown = ", ".join(str(tuple(s)) + (f" {s.dtype}" if getattr(s, "dtype", None) else "") for s in shapes)
    return ModelSpec(spec, model, args, {}, f"{type(model).__name__} from {path}; inputs {shown}")


def _example_input(shape: tuple[int, ...], float_dtype: torch.dtype, device: str | torch.device) -> torch.Tensor:
    """The input for one shape: random in the model's float dtype, or zeros (valid token ids) in an
    integer or bool dtype given as ``--input-shape 4,128:int64`` (an :class:`~dfx.ir.spec.InputShape`)."""
    name = getattr(shape, "dtype", None)
    if name is None:
        return torch.randn(shape, dtype=float_dtype, device=device)
    dtype = getattr(torch, name)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(tuple(shape), dtype=dtype, device=device)
    return torch.zeros(tuple(shape), dtype=dtype, device=device)


def _check_shapes(spec: str, input_shapes: list[tuple[int, ...]] | None) -> list[tuple[int, ...]]:
    if not input_shapes:
        raise ModelSpecError(
            f"{spec} needs its input shapes: pass --input-shape once per positional input, "
            "e.g. --input-shape 1,3,224,224"
        )
    shapes = [s if isinstance(s, InputShape) else tuple(s) for s in input_shapes]
    for s in shapes:
        if not s or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in s):
            raise ModelSpecError(f"input shape {s!r} for {spec} must be positive integers, e.g. 1,3,224,224")
        check_input_numel(f"input shape of {spec}", s)
    return shapes


def _import_file(path: Path) -> ModuleType:
    """Import ``path`` as a fresh module, named uniquely so two files called ``model.py`` don't clash."""
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"dfx_user_model_{resolved.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise ModelSpecError(f"{str(path)!r} cannot be imported as Python; give a .py file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up here
    try:
        with user_code(f"importing {str(path)!r}"):
            module_spec.loader.exec_module(module)
    except ModelSpecError:
        sys.modules.pop(name, None)
        raise
    except Exception as exc:
        sys.modules.pop(name, None)
        line = _user_line(exc, resolved)
        raise ModelSpecError(f"importing {str(path)!r} failed{line}: {_one_line(exc)}") from None
    return module


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


def _user_line(exc: BaseException, path: Path) -> str:
    tb = exc.__traceback__
    lineno = None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    if lineno is None and isinstance(exc, SyntaxError):
        lineno = exc.lineno
    return f" at line {lineno}" if lineno else ""


def check_not_a_path(spec: str) -> None:
    """Refuse, with the fix, a model spec that names an existing file or folder other than a ``.py`` file.

    ``notes.txt`` or ``notes.txt:Net`` is a path, not a built-in name: say what dfx reads instead of
    "unknown model" or a hint about ``--input-shape``.

    Raises
    ------
    ModelSpecError
        If ``spec`` (or its part before the last ``:``) is an existing file or folder.
    """
    for text in dict.fromkeys((spec, spec.rpartition(":")[0])):
        if not text:
            continue
        path = Path(text).expanduser()
        if path.is_dir():
            raise ModelSpecError(
                f"model {spec!r} names the folder {text!r}; give a Python file and the model in it: path/to/file.py:Class"
            )
        if path.is_file():
            raise ModelSpecError(
                f"model {spec!r} names the file {text!r}, which is not a Python file (.py); give path/to/file.py:Class "
                "(a file defining the model), or hf:path/to/config.json for a Hugging Face config"
            )
