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


class Trained(torch.nn.Module):
    """A model with a parameter, for --train; its mode picks how forward goes wrong."""

    mode = "ok"

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        if self.mode == "interrupt":
            raise KeyboardInterrupt
        if self.mode == "exit":
            sys.exit(0)
        out = self.lin(x)
        return out.argmax(-1) if self.mode == "ints" else out


class TrainedInterrupts(Trained):
    mode = "interrupt"


class TrainedExits(Trained):
    mode = "exit"


class TrainedReturnsInts(Trained):
    mode = "ints"


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
    (folder / "tiny_dag.csv").write_text("node,inputs,time_s\na,,1\nb,a,3\n")
    _hf_configs(folder)
    _profiles(folder)


def _profiles(folder: Path) -> None:
    """Profiles that are each wrong in one way, made from the shipped host-cpu profile."""
    from importlib import resources

    text = (resources.files("dfx.hardware") / "profiles" / "host-cpu.yaml").read_text(encoding="utf-8")
    assert "float32: 6.81 TFLOP/s" in text and "  cores: 56\n" in text
    variants = {
        "huge_int": text.replace("float32: 6.81 TFLOP/s", "float32: 1" + "0" * 400),
        "huge_quantity": text.replace("float32: 6.81 TFLOP/s", "float32: 1e400 TFLOP/s"),
        "duplicate_key": text.replace("  cores: 56\n", "  cores: 56\n  cores: 57\n"),
        "copy": text,
        "copy_changed": text.replace("  cores: 56\n", "  cores: 55\n"),
        "deep": "id: deep\nnotes: " + "[" * 5000 + "]" * 5000 + "\n",
        "bomb": "\n".join(
            ['a0: &a0 "xxxxxxxx"'] + [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
        )
        + "\npeak_flop_per_s:\n  float32: *a9\n",
        "not_a_mapping": "- 1\n- 2\n",
        "empty": "",
    }
    for name, body in variants.items():
        (folder / f"{name}.yaml").write_text(body)
    (folder / "profiles[old]" / "chip.yaml").write_text(text)
    (folder / "deep_profile.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "nan.json").write_text('{"id": NaN}')


def write_analyses(folder: Path, doc: dict) -> None:
    """``ok.json`` (``doc``), and copies each damaged in one way: a missing node, a cycle, NaN, a string."""
    import copy

    def variant(name: str, change) -> None:
        d = copy.deepcopy(doc)
        change(d)
        (folder / f"{name}.json").write_text(json.dumps(d))

    names = [n["name"] for n in doc["nodes"]]
    hw = next(iter(doc["hardware"]))
    variant("ok", lambda d: None)
    variant("missing_node", lambda d: d["edges"].append({"src": names[0], "dst": "ghost", "bytes": 4}))
    variant("missing_input", lambda d: d["nodes"][-1]["inputs"].append("ghost"))
    variant("cycle", lambda d: d["edges"].append({"src": names[-2], "dst": names[-3], "bytes": 4}))
    variant("self_loop", lambda d: d["edges"].append({"src": names[-2], "dst": names[-2], "bytes": 4}))
    variant("string_flops", lambda d: d["nodes"][-2].update(flops="lots"))
    variant("negative_bytes", lambda d: d["nodes"][-2].update(bytes_read=-8))
    variant("string_time", lambda d: d["hardware"][hw]["nodes"][names[-2]].update(time_s="nan"))
    variant("duplicate_name", lambda d: d["nodes"].append(dict(d["nodes"][0])))
    variant("nodes_not_list", lambda d: d.update(nodes={"a": 1}))
    variant("timed_ghost", lambda d: d["hardware"][hw]["nodes"].update(ghost={"time_s": 1.0}))
    text = json.dumps(doc)
    (folder / "inf_time.json").write_text(text.replace('"time_s": 0.0', '"time_s": Infinity', 1))
    (folder / "nan_time.json").write_text(text.replace('"time_s": 0.0', '"time_s": NaN', 1))
    (folder / "huge_number.json").write_text(text.replace('"time_s": 0.0', '"time_s": 1e400', 1))
    (folder / "duplicate_key.json").write_text(text.replace('{"schema"', '{"nodes": [], "schema"', 1))
    (folder / "no_schema.json").write_text('{"a": 1}')
    (folder / "list.json").write_text("[1, 2]")
    (folder / "empty.json").write_text("")
    (folder / "sim_doc.json").write_text(json.dumps({"schema": "dfx.simulation/1", "hardware": "h100"}))


def _hf_configs(folder: Path) -> None:
    base = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "vocab_size": 100,
        "max_position_embeddings": 64,
    }
    variants = {
        "neg": {"hidden_size": -64},
        "frac": {"num_hidden_layers": 2.5},
        "text": {"num_attention_heads": "4"},
        "zero": {"vocab_size": 0},
        "bool": {"num_hidden_layers": True},
        "deep": {"num_hidden_layers": 100_000},
        "wide": {"hidden_size": 2**40, "intermediate_size": 2**40},
        "null_layers": {"num_hidden_layers": None},
        "inf": {"hidden_size": 1e400},
    }
    for name, change in variants.items():
        (folder / f"{name}.json").write_text(json.dumps({**base, **change}))
