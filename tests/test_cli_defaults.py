"""One default everywhere: the Python API and the command line build a model name in the same dtype."""

from __future__ import annotations

import json

import dfx
from dfx.analysis import DEFAULT_DTYPE
from tests.hostile._runner import run_main


def test_the_api_and_the_cli_give_one_document(tmp_path):
    api = json.loads(json.dumps(dfx.analyze("gpt2-block", hardware=["h100"]).to_dict()))
    cli = run_main(["analyze", "gpt2-block", "--hw", "h100", "--json"], tmp_path)
    assert cli.rc == 0, cli.err
    # neither document carries a timestamp today; drop any a later schema adds before comparing
    stamp = ("created", "timestamp", "created_at", "generated_at")
    strip = lambda d: {k: v for k, v in d.items() if k not in stamp}  # noqa: E731
    assert strip(api) == strip(json.loads(cli.out))
    assert api["model"]["dtype"] == "bfloat16"


def test_the_default_is_bf16_and_a_module_keeps_its_own():
    import torch

    assert DEFAULT_DTYPE == "bf16"
    # a GPT-2 block's first linear reads x [1,1024,768], weight [2304,768] and bias [2304] and writes
    # [1,1024,2304]: 786,432 + 1,769,472 + 2,304 + 2,359,296 = 4,917,504 elements, 2 bytes each in bf16
    nodes = {n["name"]: n for n in dfx.analyze("gpt2-block", hardware=[]).to_dict()["nodes"]}
    rw = lambda n: n["bytes_read"] + n["bytes_written"]  # noqa: E731
    assert rw(nodes["linear"]) == 2 * 4_917_504
    fp32 = {n["name"]: n for n in dfx.analyze("gpt2-block", hardware=[], dtype="fp32").to_dict()["nodes"]}
    assert rw(fp32["linear"]) == 4 * 4_917_504
    # a module is captured as it is: a float32 Linear(8, 16) on [4, 8] reads 4*8 + 16*8 + 16 and writes 4*16
    lin = dfx.analyze(torch.nn.Linear(8, 16), (torch.randn(4, 8),), hardware=[]).to_dict()["nodes"]
    assert sum(rw(n) for n in lin if n["category"] == "matmul") == 4 * (32 + 128 + 16 + 64)


def test_the_repr_names_the_dtype():
    assert "(bfloat16)" in repr(dfx.analyze("mlp", hardware=["h100"]))
    assert "(float32)" in repr(dfx.analyze("mlp", hardware=["h100"], dtype="fp32"))
