"""The rough edges a new user hit in the lab (issue 18): version, model list, hw show, file models."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dfx.cli import app

runner = CliRunner()

TOKEN_MODEL = """
from torch import nn

class TokenModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.proj = nn.Linear(64, 1000)

    def forward(self, ids):
        return self.proj(self.emb(ids))
"""


@pytest.fixture
def token_model(tmp_path):
    path = tmp_path / "tok.py"
    path.write_text(TOKEN_MODEL)
    return f"{path}:TokenModel"


def test_version():
    import dfx

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"dfx {dfx.__version__}"


def test_models_lists_every_shipped_hf_config():
    import dfx.models

    shipped = sorted(p.stem for p in (Path(dfx.models.__file__).parent / "hf_configs").glob("*.json"))
    assert len(shipped) >= 5
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0
    for name in shipped:
        assert f"hf:{name}" in result.stdout


def test_hw_show_json_differs_from_the_table():
    as_json = runner.invoke(app, ["hw", "show", "h100", "--json"])
    table = runner.invoke(app, ["hw", "show", "h100"])
    assert json.loads(as_json.stdout)["id"] == "nvidia-h100-sxm"
    with pytest.raises(json.JSONDecodeError):
        json.loads(table.stdout)
    assert "Peak compute" in table.stdout and "HBM3" in table.stdout


def test_hw_show_a_quick_profile():
    result = runner.invoke(app, ["hw", "show", "peak=200T,bw=2T,onchip=32M"])
    assert result.exit_code == 0 and "200 TFLOP/s" in result.stdout


def test_repr_of_an_analysis_is_one_short_line():
    import dfx

    text = repr(dfx.analyze("mlp", hardware=["h100"]))
    assert text.startswith("<Analysis 'mlp'") and "\n" not in text and len(text) < 200


def test_token_id_model_with_input_dtype(token_model):
    result = runner.invoke(
        app, ["analyze", token_model, "--input-shape", "4,128", "--input-dtype", "int64", "--json", "--hw", "h100"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # The linear: [4*128, 64] x [64, 1000] = 2 * 512 * 64 * 1000 = 65,536,000 FLOPs; the lookup is 0.
    assert doc["totals"]["flops_by_category"]["matmul"] == 65_536_000
    ids = next(n for n in doc["nodes"] if n["op"] == "placeholder" and n["outputs"][0]["shape"] == [4, 128])
    assert ids["outputs"][0]["dtype"] == "int64"


def test_token_id_model_with_a_dtype_suffix(token_model):
    result = runner.invoke(app, ["graph", token_model, "--input-shape", "4,128:int64"])
    assert result.exit_code == 0, result.output


def test_float_inputs_for_an_embedding_fail_in_one_line(token_model):
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dfx.cli import main; main()",
            "analyze",
            token_model,
            "--input-shape",
            "4,128:intx",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "intx" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["capacity", "tile", "energy"])
def test_memory_commands_take_file_models(token_model, command):
    result = runner.invoke(app, [command, token_model, "--hw", "spyre", "--input-shape", "4,128:int64", "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)


def test_memory_commands_refuse_batch_with_a_file_model(token_model):
    result = runner.invoke(
        app, ["energy", token_model, "--hw", "spyre", "--input-shape", "4,128:int64", "--batch", "2"]
    )
    assert result.exit_code != 0


def test_buckets_take_a_file_model_with_a_seq_dimension(token_model, tmp_path):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("100\n200\n")
    result = runner.invoke(
        app,
        [
            "buckets",
            token_model,
            "--input-shape",
            "1,seq:int64",
            "--lengths",
            str(lengths),
            "--buckets",
            "128,256",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # Padded tokens 128 + 256 = 384 of which 28 + 56 = 84 are padding.
    assert (doc["padded_tokens"], doc["waste_tokens"]) == (384, 84)
    # At seq S: the linear 2 * S * 64 * 1000 plus its bias add S * 1000 = 129,000 * S FLOPs, so the
    # padded inputs cost 129,000 * (128 + 256) = 49,536,000 FLOPs.
    assert doc["padded_flops"] == pytest.approx(49_536_000)


def test_hw_compare_at_100_columns_keeps_words_whole():
    result = runner.invoke(
        app, ["hw", "compare", "h100", "tpu-v4", "groq", "wse3", "spyre", "cpu"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    # Groq's interconnect cell, word for word (a split would put part of a word on each line)
    text = " ".join(line.strip("│ ").strip() for line in lines)
    for word in ("software-scheduled", "Dragonfly", "stalls-on-data", "cycle-exact"):
        assert word in text


def test_simulate_takes_a_file_model(token_model):
    result = runner.invoke(
        app, ["simulate", token_model, "--hw", "spyre", "--pes", "2", "--input-shape", "4,128:int64", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "dfx.simulation/1" and doc["pes"] == 2
