"""dfx sweep given hostile input: each refused in one line before any work or any file is written."""

import concurrent.futures
import os
import subprocess
import sys
import time

import pytest

from dfx.errors import DfxError
from dfx.sweep import ResultsTable, load_spec, run_sweep
from dfx.sweep import runner
from dfx.sweep.runner import MAX_WORKERS_PER_CPU, check_workers

BASE = {"models": ["mlp"], "hardware": ["h100"]}


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


def _one_line(message: str) -> bool:
    return "\n" not in message.strip()


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    # 9 levels of 10 aliases: 10**9 strings once expanded, from a file under 600 bytes (it read 3 GB
    # and 21 s before the first alias was refused)
    items = ["&a0 [" + ",".join(['"xxxxxxxxxx"'] * 10) + "]"]
    items += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    f = tmp_path / "bomb.yaml"
    f.write_text("hardware: h100\nmodels: [" + ", ".join(items) + "]\n")
    assert f.stat().st_size < 600
    start = time.perf_counter()
    with pytest.raises(DfxError, match=r"cannot be read: line 2: YAML aliases \(\*a0\) are not accepted") as info:
        load_spec(f)
    assert time.perf_counter() - start < 5 and _one_line(str(info.value))


def test_a_duplicate_key_is_refused_not_silently_the_last(tmp_path):
    f = tmp_path / "dup.yaml"
    f.write_text("models: gpt2-block\nhardware: h100\nmodels: bert-layer\n")  # YAML would keep bert-layer alone
    with pytest.raises(DfxError, match="line 3: duplicate key 'models'") as info:
        load_spec(f)
    assert _one_line(str(info.value))


def test_a_file_that_is_not_a_sweep_file_is_refused_unread(tmp_path):
    with pytest.raises(DfxError, match="is not a regular file"):
        load_spec(tmp_path)  # a folder
    if os.path.exists("/dev/zero"):
        with pytest.raises(DfxError, match="is not a regular file"):
            load_spec("/dev/zero")  # endless: read whole, it ran out of memory
    big = tmp_path / "big.yaml"
    big.write_text("models: mlp\n" + "#" * 2**20)  # 2**20 + 12 bytes > the 2**20 budget
    with pytest.raises(DfxError, match=r"is 1,048,588 bytes, beyond dfx's budget of 1,048,576"):
        load_spec(big)
    with pytest.raises(DfxError, match="does not exist"):
        load_spec(tmp_path / "none.yaml")


def test_sizes_above_the_token_limits_are_refused_up_front():
    # 2**24 = 16,777,216 tokens is dfx's longest seq and 2**26 = 67,108,864 its tokens per pass
    # (docs/limits.md); before, each such point was a row with an error and the sweep exited 0
    assert load_spec(None, {**BASE, "batch": [1, 4], "seq": [2**24]}).seq == (2**24,)
    with pytest.raises(DfxError, match="sweep seq 16,777,217 is above dfx's limit of 16,777,216 tokens"):
        load_spec(None, {**BASE, "batch": [1], "seq": [1, 2**24 + 1]})
    # the largest point: 5 x 2**24 = 83,886,080 tokens
    with pytest.raises(DfxError, match="sweep batch 5 x sweep seq 16,777,216 = 83,886,080 tokens is above"):
        load_spec(None, {**BASE, "batch": [1, 5], "seq": [8, 2**24]})


def test_an_unknown_capture_method_is_refused_up_front():
    from dfx.capture import CAPTURE_METHODS
    from dfx.sweep.spec import CAPTURE_METHODS as SWEEP_METHODS

    assert SWEEP_METHODS == CAPTURE_METHODS  # the sweep's copy, kept free of torch, is the capture's list
    for method in CAPTURE_METHODS:
        assert load_spec(None, {**BASE, "method": method}).method == method
    with pytest.raises(DfxError, match="unknown sweep method 'magic'; expected one of auto, export, fx, dynamo"):
        load_spec(None, {**BASE, "method": "magic"})


def test_workers_beyond_four_per_cpu_are_refused_before_anything_is_written(tmp_path):
    cpus = os.cpu_count() or 1
    spec = load_spec(None, BASE)
    for bad, message in (
        (0, "must be a positive integer, got 0"),
        (-1, "must be a positive integer, got -1"),
        (MAX_WORKERS_PER_CPU * cpus + 1, f"more than 4 per CPU of this machine \\({4 * cpus} for its {cpus}\\)"),
        (100_000, "--workers 100,000 is more than 4 per CPU"),
    ):
        with pytest.raises(DfxError, match=message):
            run_sweep(spec, tmp_path / "s", workers=bad)
        assert not (tmp_path / "s").exists()
    check_workers(4 * cpus)
    check_workers(100_000, "ray://head:10001")  # a cluster counts its own CPUs


def test_the_pool_forks_no_more_workers_than_groups_left(tmp_path, monkeypatch):
    # the fork context starts every worker of a ProcessPoolExecutor at once: --workers 100000 forked
    # until the machine killed it. Record the pool's size, run the groups in threads instead.
    sizes = []

    class Recording(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers, mp_context=None, initializer=None):
            sizes.append(max_workers)
            super().__init__(max_workers=1)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Recording)
    # batch 2, 3, 4 at seq 8 are one bucket, so one chunk (one worker exports it once); batch 1 at
    # seq 8 and 16 are another bucket (seq symbolic): two chunks, two workers
    spec = load_spec(None, {**BASE, "batch": [2, 3, 4], "seq": [8]})
    run = run_sweep(spec, tmp_path / "s", workers=4 * (os.cpu_count() or 1))
    assert sizes == [1] and run.ran == 3
    two = load_spec(None, {**BASE, "batch": [1, 2, 3], "seq": [8, 16]})
    run = run_sweep(two, tmp_path / "t", workers=4 * (os.cpu_count() or 1))
    assert sizes == [1, 2] and run.ran == 6


@pytest.mark.parametrize(
    "address, endpoint",
    [
        ("ray://head:10001", ("head", 10001)),
        ("ray://head", ("head", 10001)),  # Ray Client's default port
        ("head", ("head", 6379)),  # the GCS's default port
        ("10.0.0.1:6380", ("10.0.0.1", 6380)),
        ("[::1]:6379", ("::1", 6379)),
        ("auto", None),
        ("local", None),
    ],
)
def test_ray_addresses(address, endpoint):
    assert runner._ray_endpoint(address) == endpoint


def test_an_unreachable_ray_cluster_is_refused_not_waited_for(tmp_path):
    # ray.init retried 127.0.0.1:1 (or any dead address) for 11 minutes, deaf to Ctrl-C
    pytest.importorskip("ray")
    start = time.perf_counter()
    with pytest.raises(DfxError, match=r"cannot reach Ray at '127.0.0.1:1' \(Connection refused\)") as info:
        run_sweep(load_spec(None, BASE), tmp_path / "s", ray_address="127.0.0.1:1")
    assert time.perf_counter() - start < 10 and _one_line(str(info.value))
    assert not (tmp_path / "s").exists()
    with pytest.raises(DfxError, match="the port 'x' is not a number"):
        run_sweep(load_spec(None, BASE), tmp_path / "s", ray_address="head:x")


def test_cli_refuses_an_unknown_hf_config_and_a_fork_bomb_before_any_point(tmp_path):
    r = dfx("sweep", "-m", "hf:no-such-config", "--hw", "h100", "--out", str(tmp_path / "s"))
    assert r.returncode == 2 and r.stderr.startswith("error: no Hugging Face config 'no-such-config'"), r.stderr
    assert _one_line(r.stderr) and not (tmp_path / "s").exists()
    r = dfx("sweep", "-m", "mlp", "--hw", "h100", "--workers", "100000", "--out", str(tmp_path / "s"))
    assert r.returncode == 2 and "--workers 100,000 is more than 4 per CPU" in r.stderr and _one_line(r.stderr)
    assert not (tmp_path / "s").exists()


def test_cli_refuses_an_unreachable_ray_cluster_in_one_line(tmp_path):
    pytest.importorskip("ray")
    r = dfx("sweep", "-m", "mlp", "--hw", "h100", "--ray-address", "127.0.0.1:1", "--out", str(tmp_path / "s"))
    # the progress bar started before the refusal had put an empty line above it
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: cannot reach Ray at '127.0.0.1:1'") and not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "flag", ["--hw", "--model", "--dtype", "--phase", "--execution-model", "--chips", "--parallel"]
)
def test_cli_refuses_a_flag_given_empty(tmp_path, flag):
    # `--hw "$UNSET"` read as no --hw: the sweep ran on the default H100 and Spyre and exited 0
    args = {"--model": "mlp", "--hw": "h100", flag: " , "}
    r = dfx("sweep", *[w for k, v in args.items() for w in (k, v)], "--out", str(tmp_path / "s"))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {flag} is empty; give"), r.stderr
    assert _one_line(r.stderr) and not (tmp_path / "s").exists()


def test_help_names_the_ray_extra():
    # rich read "[ray]" as a markup tag: the help said "pip install dfx"
    r = subprocess.run(
        [sys.executable, "-m", "dfx.cli", "sweep", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0 and "(pip install 'dfx[ray]')" in r.stdout


def test_an_out_folder_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    # it was "internal error: FileNotFoundError: [Errno 2] No such file or directory: '/proc/dfxx'" (exit 1)
    spec = load_spec(None, BASE)
    if os.path.isdir("/proc/self"):
        with pytest.raises(
            DfxError, match="cannot write into --out /proc/dfx-sweep: .*; choose a folder you can write to"
        ):
            run_sweep(spec, "/proc/dfx-sweep")
    from pathlib import Path

    def read_only(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "mkdir", read_only)  # a read-only folder (the tests may run as root)
    with pytest.raises(
        DfxError, match=r"cannot write into --out .*ro: Permission denied; choose a folder you can write to$"
    ):
        run_sweep(spec, tmp_path / "ro")


def test_cli_refuses_a_model_file_before_any_point(tmp_path):
    # every point of a model file was a row refused with "--batch and --seq apply to built-in and
    # hf: models" (its inputs come from --input-shape), and the sweep exited 0
    model = tmp_path / "net.py"
    model.write_text(
        "import torch\n\nclass Net(torch.nn.Linear):\n    def __init__(self):\n        super().__init__(4, 4)\n"
    )
    r = dfx("sweep", "-m", f"{model}:Net", "--hw", "h100", "--out", str(tmp_path / "s"))
    assert r.returncode == 2 and _one_line(r.stderr), r.stderr
    assert r.stderr.startswith(f"error: sweep model '{model}:Net' is a model file: its inputs come from --input-shape")
    assert not (tmp_path / "s").exists()


def test_quick_profiles_are_swept_not_read_as_paths(tmp_path):
    # hardware: ["peak=200T,bw=2T"] was made the path /cwd/peak=200T,bw=2T: every point refused
    spec = load_spec(None, {**BASE, "hardware": ["peak=200T,bw=2T", "quick:peak=100T,bw=1T"], "seq": [8]})
    assert spec.profile_refs() == {
        "quick-200tflops-2tbps": "peak=200T,bw=2T",
        "quick-100tflops-1tbps": "quick:peak=100T,bw=1T",
    }
    run = run_sweep(spec, tmp_path / "s", workers=1)
    rows = {r["hardware"]: r for r in ResultsTable(tmp_path / "s").rows()}
    assert run.ran == 2 and [r["error"] for r in rows.values()] == ["", ""]
    # one graph, two machines: the same FLOPs
    assert rows["quick-200tflops-2tbps"]["flops"] == rows["quick-100tflops-1tbps"]["flops"]


def test_cli_keeps_a_quick_profiles_commas(tmp_path):
    # --hw quick:peak=200T,bw=2T was split at its commas: "quick profile 'quick:peak=200T': bw= is missing"
    r = dfx(
        "sweep",
        "-m",
        "mlp",
        "--hw",
        "quick:peak=200T,bw=2T",
        "--hw",
        "h100",
        "--seq",
        "8",
        "--out",
        str(tmp_path / "s"),
        "--workers",
        "1",
        "--no-report",
    )
    assert r.returncode == 0, r.stderr
    assert "ran 2 points (0 already done)" in r.stdout
    assert {row["hardware"] for row in ResultsTable(tmp_path / "s").rows()} == {
        "quick-200tflops-2tbps",
        "nvidia-h100-sxm",
    }


def test_rows_of_an_edited_profile_are_not_resumed(tmp_path):
    # a profile file edited between two runs: the second found its point "already done" and kept the
    # rows of the old figures (mlp on an H100 copy, overhead 1.5 -> 150 us: 0.0104 ms shown for 0.753 ms)
    import json
    from importlib import resources

    text = (resources.files("dfx.hardware") / "profiles" / "nvidia-h100-sxm.yaml").read_text(encoding="utf-8")
    text = text.replace("id: nvidia-h100-sxm", "id: my-h100").replace("aliases: [h100, h100-sxm]", "aliases: []")
    prof = tmp_path / "my.yaml"
    prof.write_text(text)
    spec = lambda: load_spec(None, {"models": ["mlp"], "hardware": [str(prof)], "seq": [8]})  # noqa: E731
    out = tmp_path / "s"
    assert run_sweep(spec(), out, workers=1).ran == 1
    assert run_sweep(spec(), out, workers=1).ran == 0  # the same figures: resumed
    (first,) = ResultsTable(out).rows()
    assert "op_overhead_s: 1.5 us" in text
    prof.write_text(text.replace("op_overhead_s: 1.5 us", "op_overhead_s: 150 us"))
    with pytest.raises(DfxError, match="holds rows of hardware 'my-h100' made with other figures") as info:
        run_sweep(spec(), out, workers=1)
    assert _one_line(str(info.value)) and ResultsTable(out).rows() == [first]
    assert run_sweep(spec(), out, workers=1, force=True).ran == 1
    (second,) = ResultsTable(out).rows()
    assert second["latency_s"] > first["latency_s"]  # each kernel now pays 148.5 us more
    # a folder written before profiles were recorded resumes as it did
    doc = json.loads((out / "sweep.json").read_text())
    del doc["spec"]["profiles"]
    (out / "sweep.json").write_text(json.dumps(doc))
    assert run_sweep(spec(), out, workers=1).ran == 0


def test_a_non_utf8_or_malformed_sweep_file_names_the_fix(tmp_path):
    # "cannot be read: 'utf-8' codec can't decode byte 0xff ..." named no fix
    f = tmp_path / "sweep.yaml"
    f.write_bytes(b"\xffmodels: [mlp]\n")
    with pytest.raises(DfxError, match=r"can't decode byte 0xff .*; save it as UTF-8 text$"):
        load_spec(f)
    f.write_text("models: [mlp\n")
    with pytest.raises(DfxError, match=r"cannot be read: .*; fix it \(docs/sweeps.md\)$"):
        load_spec(f)
