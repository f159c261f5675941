"""The user's files the hostile cases point dfx at: written once into a folder, checked unchanged after."""

from __future__ import annotations

import json
from pathlib import Path

MODELS = '''
import sys
import torch


class Interrupts(torch.nn.Module):
    def forward(self, x):
        raise KeyboardInterrupt


class ExitsInForward(torch.nn.Module):
    def forward(self, x):
        sys.exit(3)


class ExitsZeroInForward(torch.nn.Module):
    def forward(self, x):
        sys.exit(0)


class ReturnsText(torch.nn.Module):
    def forward(self, x):
        return "hello"


class ReturnsNone(torch.nn.Module):
    def forward(self, x):
        return None


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Star(torch.nn.Module):
    def forward(self, *args):
        return args[0] * 2


def exits_when_built():
    sys.exit(0)
'''

EXITS_AT_IMPORT = "import sys\nsys.exit()\n"


def write_user_files(folder: Path) -> None:
    """The model files, configs, profiles, documents and lengths files of the hostile cases."""
    (folder / "models.py").write_text(MODELS)
    (folder / "exits.py").write_text(EXITS_AT_IMPORT)
    (folder / "profiles[old]").mkdir()
    (folder / "lengths.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "lengths.txt").write_text("10\n20\n30\n")
    (folder / "user.gif").write_bytes(b"GIF89a mine")
    _hf_configs(folder)


def _hf_configs(folder: Path) -> None:
    base = {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 64,
    }
    variants = {
        "neg": {"hidden_size": -64}, "frac": {"num_hidden_layers": 2.5}, "text": {"num_attention_heads": "4"},
        "zero": {"vocab_size": 0}, "bool": {"num_hidden_layers": True}, "deep": {"num_hidden_layers": 100_000},
        "wide": {"hidden_size": 2**40, "intermediate_size": 2**40}, "null_layers": {"num_hidden_layers": None},
        "inf": {"hidden_size": 1e400},
    }
    for name, change in variants.items():
        (folder / f"{name}.json").write_text(json.dumps({**base, **change}))
