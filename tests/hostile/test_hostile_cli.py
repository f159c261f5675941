"""Hostile input across every command: each case exits non-zero (or 0 with a named warning), prints at
most two lines naming the problem, no traceback, no "internal error", changes no user file, and
finishes within 60 s. Each row's ``expect`` is the text the message must contain.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from ._runner import run_main, snapshot
from .files import write_analyses, write_user_files

BUDGET_S = 60.0


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    expect: str
    rc: int = 2

    def __str__(self) -> str:
        return " ".join(self.args)[:80]


def case(line: str, expect: str, rc: int = 2) -> Case:
    import shlex

    return Case(tuple(shlex.split(line)), expect, rc)


CASES = [
    # interrupts and exits are never status 0
    case("analyze models.py:Interrupts --input-shape 2,3", "interrupted", rc=130),
    case("analyze models.py:ExitsInForward --input-shape 2,3", "ExitsInForward.forward called sys.exit(3)"),
    case("analyze models.py:ExitsZeroInForward --input-shape 2,3", "called sys.exit(0)"),
    case("analyze exits.py:Net --input-shape 2,3", "importing 'exits.py' called sys.exit(None)"),
    case(
        "analyze models.py:exits_when_built --input-shape 2", "building models.py:exits_when_built called sys.exit(0)"
    ),
    case("graph models.py:Interrupts --input-shape 2,3", "interrupted", rc=130),
    # a training step (--train): what cannot train, and options that do not apply
    case("analyze models.py:TrainedInterrupts --input-shape 2,3 --train", "interrupted", rc=130),
    case("analyze models.py:TrainedExits --input-shape 2,3 --train", "TrainedExits.forward called sys.exit(0)"),
    case("analyze models.py:TrainedReturnsInts --input-shape 2,3 --train", "no floating-point tensor"),
    case("analyze models.py:Double --input-shape 2,3 --train", "Double has no trainable parameters"),
    case("analyze mlp --optimizer adam", "applies to a training step"),
    case("analyze mlp --train --optimizer lamb", "unknown optimizer 'lamb'"),
    case("analyze mlp --train --optimizer ''", "unknown optimizer ''"),
    case("analyze mlp --train --phase decode", "phase applies to inference"),
    case("analyze mlp --train --method fx", "--method fx does not apply with --train"),
    case("analyze mlp --train --dtype int8", "inference storage width"),
    case("analyze mlp --train --weight-dtype int4", "weight_dtype applies to inference"),
    # user text is never read as markup
    case("analyze '[/red]'", "unknown model '[/red]'"),
    case("analyze '[bold]x[/bold]'", "unknown model '[bold]x[/bold]'"),
    case("hw show 'profiles[old]/missing.yaml'", "profiles[old]/missing.yaml"),
    case("analyze mlp --hw '[/]'", "[/]"),
    # a forward that returns no tensor
    case("analyze models.py:ReturnsText --input-shape 2,3", "ReturnsText.forward returned no tensor"),
    case("analyze models.py:ReturnsNone --input-shape 2,3", "ReturnsNone.forward returned no tensor"),
    case("graph models.py:ReturnsNone --input-shape 2,3", "returned no tensor"),
    # empty paths are not the current folder
    case("analyze mlp --out ''", "'--out': is empty"),
    case("analyze mlp --out=", "'--out': is empty"),
    case("report '' --out x", "is empty"),
    # named errors for sizes that overflow or are not sizes
    case("analyze gpt2-block --batch 10000000000", "batch 10,000,000,000 is above dfx's limit"),
    case("analyze gpt2-block --batch 1000000000 --seq 1000000000", "--seq 1,000,000,000 is above dfx's limit"),
    # torch's "Storage size calculation overflowed" was the whole message; refused before any capture
    case("analyze --seq 2147483647", "--seq 2,147,483,647 is above dfx's limit of 16,777,216 tokens (2**24"),
    case("graph --seq 16777217", "--seq 16,777,217 is above dfx's limit of 16,777,216 tokens"),
    # 2**16 x 2**11 = 2**27 = 134,217,728 tokens
    case("analyze --batch 65536 --seq 2048", "--batch 65,536 x --seq 2,048 = 134,217,728 tokens is above"),
    # at 2**24 tokens gpt2-block's activations need several Spyre cards; its weights (7,087,872
    # parameters, 14 MB in bf16) fit one card's 112 GB many times over, yet the message said "the weights need"
    case(
        "analyze --seq 16777216 --hw spyre", "chips to fit (fewest chips that fit (dfx capacity)), split as tp 1 x pp"
    ),
    # the model's default seq: 100,000 x 4,096 = 409,600,000 tokens
    case("analyze llama-layer --batch 100000", "batch 100,000 x seq 4,096 = 409,600,000 tokens is above"),
    # 4,096 x 32,768 = 2**12 x 2**15 = 134,217,728
    case(
        "analyze hf:llama-2-7b --phase prefill --batch 4096 --prompt-len 32768",
        "--batch 4,096 x --prompt-len 32,768 = 134,217,728 tokens is above dfx's limit of 67,108,864",
    ),
    case("analyze models.py:Double --input-shape 4294967296,4294967296,4", "more than int64 can count"),
    case("graph models.py:Double --input-shape 4294967296,4294967296,4", "more than int64 can count"),
    case("analyze hf:neg.json", "hidden_size in config neg.json must be a positive integer, got -64"),
    case("analyze hf:frac.json", "num_hidden_layers in config frac.json must be a positive integer, got 2.5"),
    case("analyze hf:text.json", "num_attention_heads in config text.json must be a positive integer, got '4'"),
    case("analyze hf:zero.json", "vocab_size in config zero.json must be a positive integer, got 0"),
    case("analyze hf:bool.json", "must be a positive integer, got True"),
    case("analyze hf:inf.json", "Infinity is not a number dfx accepts"),
    case("analyze hf:wide.json", "hidden_size in config wide.json 1,099,511,627,776 is above dfx's limit"),
    case("graph hf:neg.json", "must be a positive integer, got -64"),
    # absurd work refused up front
    case("analyze hf:deep.json", "100,000 is beyond dfx's budget of 512 layers"),
    case("graph hf:deep.json", "beyond dfx's budget of 512 layers"),
    case("simulate mlp --hw h100 --pes 3000000000", "pes 3,000,000,000 is beyond the simulator's budget"),
    case("simulate mlp --hw h100 --runs 3000000000", "runs 3,000,000,000 is beyond the simulator's budget"),
    case("simulate mlp --hw h100 --jitter 1e200 --runs 3", "jitter 1e+200 is above 100"),
    case("simulate mlp --hw h100 --jitter 0.2 --runs 900000", "beyond the simulator's budget of 2,000,000"),
    case("simulate mlp --hw h100 --pes 500000 --runs 50 --jitter 0.1", "beyond the simulator's budget"),
    case(
        "buckets --dist uniform:1:100 --samples 1000000000000 --buckets 16,128", "--samples 1,000,000,000,000 is beyond"
    ),
    case("buckets --dist zipf:1.1:1000000000000 --buckets 16,32", "zipf's MAX is at most 10,000,000"),
    case("buckets --dist uniform:1:2000000000 --ladder linear:1", "beyond dfx's budget of 100,000"),
    case("buckets --dist uniform:1:100 --buckets 16,999999999999999999999", "bucket 1e+21 is above dfx's limit"),
    case("buckets --dist lognormal:1000000:1 --buckets 16", "draws lengths too large for a float"),
    case("buckets --dist normal:1e300:1 --buckets 16", "length 1e+300 is above dfx's limit"),
    case("buckets --lengths lengths.bin --buckets 16,32", "is not a text file (byte 128 is not UTF-8)"),
    case("tile --gemm 1000000000000,1000000000000,1000000000000 --hw spyre", "must be at most 2,147,483,647"),
    case("tile --gemm 2000000000,64,2000000000 --hw spyre", "beyond dfx's search budget"),
    case("systolic --gemm 100000,100000,4 --steps", "step mode is for small cases"),
    case("systolic --gemm 100000,100000,4 --animate new.gif", "step mode is for small cases"),
    # a user's file is never overwritten; a missing folder is named
    case("systolic --gemm 4,4,4 --array 4x4 --animate user.gif", "user.gif already exists; pass --force"),
    case("systolic --gemm 4,4,4 --array 4x4 --animate missing/user.gif", "folder 'missing' does not exist"),
    case("systolic --gemm 4,4,4 --array 4x4 --animate 'profiles[old]'", "is a folder"),
    # profiles: numbers no float holds, nesting, aliases, duplicate keys, same id twice
    case("hw show huge_int.yaml", "is too large for a float"),
    case("hw show huge_quantity.yaml", "expected a finite number, got '1e400 TFLOP/s'"),
    case("hw show deep.yaml", "nested more than 64 levels deep"),
    case("hw show bomb.yaml", "YAML aliases (*a0) are not accepted"),
    case("analyze mlp --hw bomb.yaml", "YAML aliases (*a0) are not accepted"),
    case("hw show duplicate_key.yaml", "duplicate key 'cores'"),
    case("hw show not_a_mapping.yaml", "expected a mapping of fields"),
    case("hw show empty.yaml", "expected a mapping of fields"),
    case("hw show deep_profile.json", "nested too deeply to read"),
    case("hw show nan.json", "NaN is not a number dfx accepts"),
    case("hw compare copy.yaml copy_changed.yaml", "two different profiles have the id 'host-cpu'"),
    case("hw show 'profiles[old]/chip.yaml' --json", "", rc=0),
    # other commands, other values
    case("guards models.py:Star --input-shape 2,3", "", rc=0),
    case("guards models.py:Double --input-shape 2,3 --dynamic zz:0", "no tensor input 'zz'"),
    case("guards models.py:Double --input-shape 2,3 --check -1,3", "dimensions must be integers >= 0"),
    case("groq --params 1e400 --hidden 4096", "parameters must be a finite count up to 1e+15, got inf"),
    case("groq --params nan --hidden 4096", "got nan"),
    case("groq --params 1e30 --hidden 4096", "got 1e+30"),
    case("groq --params -5 --hidden 4096", "must be positive"),
    case("groq --params 70e9 --hidden 0", "--hidden must be a positive integer, got 0"),
    case("systolic --gemm 4,4,4 --sram-kb nan,1,1", "--sram-kb wants IFMAP,FILTER,OFMAP"),
    case("systolic --gemm 4,4,4 --sram-kb inf,1,1", "--sram-kb wants IFMAP,FILTER,OFMAP"),
    case("systolic --gemm 4,4,4 --dataflow xx", "xx"),
    case("systolic --gemm 4,x,4", "--gemm wants 3 positive integers"),
    case("systolic --gemm 4,4,4 --array 0x4", "--array wants 2 positive integers"),
    case("tile --gemm 4,4,4 --hw bomb.yaml", "YAML aliases (*a0) are not accepted"),
    case("tile --gemm 4,-4,4 --hw spyre", "bad --gemm"),
    case("capacity mlp --hw h100 --batch 0", "--batch"),
    case("capacity mlp --hw bomb.yaml", "YAML aliases"),
    case("energy mlp --hw '[red]x'", "unknown hardware profile '[red]x'"),
    case("calibrate --budget-s nan", "--budget-s must be a number of seconds above 0"),
    case("calibrate --budget-s 1e300", "--budget-s must be a number of seconds above 0"),
    case("calibrate --device tpu", "tpu"),
    case("validate mlp --calibration lengths.bin", "--calibration"),
    case("validate mlp --compiled --device cuda", "--compiled runs Inductor's C++ backend on the CPU only"),
    case("buckets --dist uniform:1:100 --buckets 16,128 --out ''", "'--out': is empty"),
    case("buckets --dist uniform:1:100 --optimize 0", "--optimize K needs an integer K >= 1"),
    case(
        "buckets --lengths lengths.txt --dist uniform:1:3 --buckets 16", "give exactly one of --lengths FILE or --dist"
    ),
    case("buckets --dist normal:1:2:3 --buckets 16", "bad --dist"),
    case("buckets --dist uniform:5:1 --buckets 16", "uniform needs integers 1 <= LO <= HI"),
    case("buckets --lengths lengths.txt --buckets 32,16", "strictly increasing"),
    case("buckets --lengths 'profiles[old]' --buckets 16", "cannot read --lengths profiles[old]"),
    case("buckets --lengths lengths.txt --ladder linear:0", "linear ladder step must be a positive integer"),
    case("analyze mlp --top -1", "--top must be a positive integer"),
    case("analyze mlp --level graph --out pics", "--level must be op or module"),
    case("analyze mlp --dtype 'bf16[/]'", "unknown dtype 'bf16[/]'"),
    case("analyze x.py:Net --input-shape 2", "model file 'x.py' not found"),
    case("analyze models.py:Nope --input-shape 2", "has no attribute 'Nope'"),
    case("analyze models.py:Double --input-shape 0,3", "every dimension must be a positive integer"),
    case("analyze models.py:Double", "needs its input shapes"),
    case("analyze hf:nothere", "no Hugging Face config 'nothere'"),
    case("analyze hf:lengths.bin", "cannot read"),
    case("report lengths.bin --out x", "lengths.bin is not a dfx document (not UTF-8 text: byte 0x80 at offset 128)"),
    case("report lengths.txt --out x", "lengths.txt is not a dfx document (not JSON: Extra data at line 2"),
    case("report models.py --out x", "models.py is not a dfx document (not JSON"),
    case("report 'profiles[old]' --out x", "cannot read profiles[old]: it is a folder"),
    case("simulate mlp --hw h100 --policy fifo", "unknown policy 'fifo'"),
    case("simulate mlp --hw h100 --jitter -1", "--jitter must be"),
    case("graph mlp --method jit", "unknown capture method 'jit'"),
    case("capacity hf:deep.json --hw h100", "beyond dfx's budget of 512 layers"),
    case("capacity hf:neg.json --hw h100", "must be a positive integer, got -64"),
    case("energy hf:frac.json --hw h100", "must be a positive integer, got 2.5"),
    case("tile hf:zero.json --hw spyre", "vocab_size in config zero.json must be a positive integer, got 0"),
    case("simulate hf:deep.json --hw h100", "beyond dfx's budget of 512 layers"),
    case("buckets hf:deep.json --dist uniform:1:64 --buckets 16,64 --hw h100", "beyond dfx's budget of 512 layers"),
    case("analyze mlp --hw huge_int.yaml", "is too large for a float"),
    case("simulate mlp --hw duplicate_key.yaml", "duplicate key 'cores'"),
    case("hw compare deep_profile.json host-cpu", "nested too deeply to read"),
    case("systolic --gemm 4,4,4 --array 4x4 --animate ''", "--animate is empty"),
    case("analyze '[/red].py:Net' --input-shape 2", "model file '[/red].py' not found"),
    case("hw show '[bold]'", "unknown hardware profile '[bold]'"),
    # any file given where a dfx document belongs is named as what it is
    case("report no_schema.json --out x", 'no_schema.json is not a dfx document (no "schema" key)'),
    case("report list.json --out x", "list.json is not a dfx document (a JSON list, not an object)"),
    case("report empty.json --out x", "empty.json is empty, not a dfx document"),
    case("report sim_doc.json --out x", "sim_doc.json is a dfx.simulation/1 document, not dfx.analysis/1"),
    case("report ok.json --out x --simulation lengths.txt", "lengths.txt is not a dfx document (not JSON"),
    case("report ok.json --out x --simulation ok.json", "ok.json is a dfx.analysis/1 document, not dfx.simulation/1"),
    case("report ok.json --out x --validation ok.json", "ok.json is a dfx.analysis/1 document, not dfx.validation/1"),
    case("report ok.json --out x --validation lengths.bin", "lengths.bin is not a dfx document (not UTF-8"),
    case("simulate no_schema.json --hw h100", 'no_schema.json is not a dfx document (no "schema" key)'),
    case("simulate sim_doc.json --hw h100", "sim_doc.json is a dfx.simulation/1 document, not dfx.analysis/1"),
    case("simulate empty.json --hw h100", "empty.json is empty, not a dfx document"),
    # groq: sizes in range, and no more batches in flight than the pipeline has chips
    case(
        "groq --params 70e9 --hidden 4096 --in-flight 1000000000000",
        "--in-flight 1,000,000,000,000 is above dfx's limit",
    ),
    case("groq --params 70e9 --hidden 4096 --in-flight 608", "608 is more batches than the 607-chip pipeline holds"),
    case("groq --params 70e9 --hidden 4096 --in-flight -3", "--in-flight must be a positive integer, got -3"),
    case("groq --params 70e9 --hidden 4096 --batch 1000000000000", "--batch 1,000,000,000,000 is above dfx's limit"),
    case("groq --params 70e9 --hidden 10000000000000", "--hidden 10,000,000,000,000 is above dfx's limit"),
    # absurd work refused before it starts (these ran out of memory, or were killed by the OS)
    case("dag tiny_dag.csv --pes 3000000000", "--pes 3,000,000,000 is beyond the simulator's budget of 1,000,000"),
    case("triton --gemm 1000000000000,1000000000000,1000000000000 --hw h100", "--gemm size 1,000,000,000,000 is above"),
    case("triton --gemm 2000000000,2000000000,2000000000 --hw h100", "beyond dfx's budget of 1,000,000 waves"),
    case("triton --pointwise 1000000000000000000 --hw h100", "--pointwise 1,000,000,000,000,000,000 is above"),
    case("triton --gemm 64,64,64 --hw h100 --batch 10000000000000", "--batch 10,000,000,000,000 is above"),
    case("analyze hf:llama-2-7b --phase decode --kv-len 100000000000", "--kv-len 100,000,000,000 is above"),
    case(
        "analyze hf:llama-2-7b --phase generate --prompt-len 8 --output-len 1000000000000",
        "--output-len 1,000,000,000,000",
    ),
    case(
        "analyze hf:llama-2-7b --phase generate --prompt-len 2000000000 --output-len 2000000000",
        "--prompt-len + --output-len = 4,000,000,000 tokens is above",
    ),
    # 16,777,000 + 1,000 = 16,778,000 > 2**24 = 16,777,216
    case(
        "analyze hf:llama-2-7b --phase generate --prompt-len 16777000 --output-len 1000",
        "--prompt-len + --output-len = 16,778,000 tokens is above dfx's limit of 16,777,216",
    ),
    # values that were accepted silently: a negative capacity, NaN FLOPs, warps Triton cannot launch
    case("dag tiny_dag.csv --capacity -5M", "--capacity must be a size above 0 such as 32MB, got '-5M'"),
    case("triton --reduction 4,4 --hw h100 --flops-per-element nan", "--flops-per-element must be a finite number"),
    case("triton --pointwise 16 --hw h100 --flops-per-element -1", "--flops-per-element must be at least 0"),
    case("triton --gemm 64,64,64 --hw h100 --warps 0 --block 64,64,32", "--warps must be a power of two from 1 to 32"),
    case("triton --gemm 64,64,64 --hw h100 --warps 3 --block 64,64,32", "--warps must be a power of two from 1 to 32"),
    case("triton --gemm 64,64,64 --hw h100 --stages 0 --block 64,64,32", "--stages must be a positive integer"),
    case("systolic --gemm 4,4,4 --array 4x4 --animate out.txt", "--animate writes an animated GIF; give a .gif path"),
    # a sweep of a model that does not exist is refused before any point runs (it wrote out/ and exited 0)
    case("sweep -m nothere --hw h100", "unknown model 'nothere'"),
    case("sweep -m gpt2-blok --hw h100", "did you mean gpt2-block"),
    case("sweep -m x.py:Net --hw h100", "model file 'x.py' not found"),
]

# A saved analysis damaged in one way: report and simulate refuse it before drawing or simulating.
DOCUMENT_CASES = [
    ("missing_node.json", "names a node 'ghost' that is not in nodes"),
    ("missing_input.json", "reads 'ghost', which is not in nodes"),
    ("cycle.json", "the graph has a cycle among"),
    ("self_loop.json", "the graph has a cycle among"),
    ("string_flops.json", "flops must be a number, got 'lots'"),
    ("negative_bytes.json", "bytes_read must be a finite number >= 0, got -8"),
    ("string_time.json", "time_s must be a number, got 'nan'"),
    ("duplicate_name.json", "appears twice"),
    ("nodes_not_list.json", "'nodes' must be a list"),
    ("timed_ghost.json", "times a node 'ghost' that is not in nodes"),
    ("inf_time.json", "Infinity is not a number dfx accepts"),
    ("nan_time.json", "NaN is not a number dfx accepts"),
    ("huge_number.json", "the number 1e400 is too large for a float"),
    ("duplicate_key.json", "duplicate key 'nodes'"),
]
CASES += [case(f"report {name} --out pictures", expect) for name, expect in DOCUMENT_CASES]
CASES += [case(f"simulate {name} --hw h100", expect) for name, expect in DOCUMENT_CASES]


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory):
    import json

    folder = tmp_path_factory.mktemp("user")
    write_user_files(folder)
    made = run_main(["analyze", "mlp", "--hw", "h100", "--json"], folder)
    assert made.rc == 0, made.err
    write_analyses(folder, json.loads(made.out))
    return folder


@pytest.mark.parametrize("c", CASES, ids=str)
def test_hostile_case(c: Case, user_folder):
    before = snapshot(user_folder)
    result = run_main(list(c.args), user_folder)
    assert result.rc == c.rc, (result.rc, result.err[-2000:])
    assert (1 if c.rc else 0) <= len(result.lines) <= 2, result.err[-2000:]
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err[-2000:]
    assert c.expect in result.err, result.err[-2000:]
    assert result.seconds < BUDGET_S
    assert snapshot(user_folder) == before, "a user file changed"


def test_ctrl_c_is_status_130_with_a_line(tmp_path):
    """A real SIGINT while the model runs: status 130 and one line, never 0 (``dfx ... && next`` must stop)."""
    import signal
    import time

    marker = tmp_path / "running"
    script = (
        "import pathlib, time, torch\n"
        "class Slow(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        f"        pathlib.Path({str(marker)!r}).write_text('1')\n"
        "        time.sleep(120)\n"
        "        return x\n"
    )
    (tmp_path / "slow.py").write_text(script)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dfx.cli", "analyze", "slow.py:Slow", "--input-shape", "2", "--method", "fx"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert marker.exists(), "the model never ran"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], err


def test_a_model_path_that_is_wrong_says_what_is_missing_and_what_to_give(tmp_path):
    import subprocess
    import sys

    model = tmp_path / "mm.py"
    model.write_text(
        "import torch\n"
        "class Net(torch.nn.Module):\n    def forward(self, x): return x * 2\n"
        "class Other(torch.nn.Module):\n    def forward(self, x): return x + 1\n"
    )

    def err(*args):
        r = subprocess.run(
            [sys.executable, "-m", "dfx.cli", "analyze", *args], capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 2 and r.stdout == "", r.stderr
        return r.stderr

    assert "its nn.Module classes: Net, Other" in err(f"{model}:Nope", "--input-shape", "2,3")
    assert err(f"hf:{tmp_path}").startswith(f"error: no config.json in the folder {str(tmp_path)!r}")
    assert err(f"hf:{tmp_path}/missing.json").startswith(f"error: no file '{tmp_path}/missing.json'")
