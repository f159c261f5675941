"""The built-in model zoo and the model resolver; every model builds on the meta device.

>>> import dfx.models
>>> spec = dfx.models.build("gpt2-block", batch=1, seq=1024)
>>> spec.args[0].shape
torch.Size([1, 1024, 768])

``resolve`` also takes ``path/to/file.py:Class`` (with input shapes) and ``hf:CONFIG`` (a shipped
Hugging Face config such as ``hf:llama-2-7b``, or a path to a ``config.json``). See ``docs/models.md``.
"""

from dfx.models.hf import build_hf, describe_config, shipped_configs
from dfx.models.registry import PRESETS, Preset, available, build, describe
from dfx.models.resolve import resolve
from dfx.models.spec import ModelSpec

__all__ = [
    "PRESETS",
    "ModelSpec",
    "Preset",
    "available",
    "build",
    "build_hf",
    "describe",
    "describe_config",
    "resolve",
    "shipped_configs",
]
