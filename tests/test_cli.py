"""The command line as a user meets it: exit codes, one-line errors, nothing of theirs overwritten."""

import json
import subprocess
import sys

import pytest


def dfx(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def _one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_analyze_json_is_the_export_document():
    result = dfx("analyze", "mlp", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "dfx.analysis/1"
    assert list(doc["hardware"]) == ["nvidia-h100-sxm", "ibm-spyre"]
    # PB-05 MLP: 784*512 + 512*512 + 512*10 = 668,672 MACs = 1,337,344 matmul FLOPs; the
    # 512 + 512 + 10 = 1,034 bias adds are elementwise work, as FlopCounterMode leaves them out.
    assert doc["totals"]["flops_by_category"]["matmul"] == 1_337_344


def test_out_never_overwrites_without_force(tmp_path):
    first = dfx("analyze", "mlp", "--out", str(tmp_path), "--hw", "h100")
    assert first.returncode == 0, first.stderr
    # the pictures are written next to analysis.json; dag.svg and dag.png by Graphviz or by dfx's own layout
    always = {"analysis.json", "nodes.csv", "dag.dot", "dag.svg", "dag.png", "roofline.png", "roofline.svg"}
    # and Model Explorer's node data: latency, bound, intensity for the one profile, FLOPs once (dfx.viz.explorer)
    explorer = {f"explorer-nvidia-h100-sxm-{m}.json" for m in ("latency", "bound", "intensity")} | {
        "explorer-flops.json"
    }
    assert {p.name for p in tmp_path.iterdir()} == always | {"report.html"} | explorer
    (tmp_path / "nodes.csv").write_text("mine")
    again = dfx("analyze", "mlp", "--out", str(tmp_path), "--hw", "h100")
    line = _one_line_error(again)
    assert "already exist" in line and "--force" in line
    assert (tmp_path / "nodes.csv").read_text() == "mine"
    forced = dfx("analyze", "mlp", "--out", str(tmp_path), "--hw", "h100", "--force")
    assert forced.returncode == 0
    assert (tmp_path / "nodes.csv").read_text().startswith("name,op,target")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["analyze", "mlp", "--hw", "nvidia-h100-sxn"], "nvidia-h100-sxm"),  # a typo gets close matches
        (["analyze", "mlp", "--dtype", "fp12"], "unknown dtype 'fp12'"),
        (["analyze", "does_not_exist.py:Net", "--input-shape", "2,3"], "does_not_exist.py"),
        (["analyze", "gpt3-block"], "gpt2-block"),
        (["analyze", "mlp", "--batch", "0"], "--batch must be a positive integer"),
        (["analyze", "mlp", "--input-shape", "2,x"], "bad --input-shape '2,x'"),
        (["analyze", "mlp", "--method", "jit"], "unknown capture method 'jit'"),
        # Groq's TSP times every operator whole on chip: eager would repeat the compiled latency
        (["analyze", "mlp", "--hw", "groq-lpu", "--execution-model", "eager"], "use execution model 'compiled'"),
        (
            ["analyze", "mlp", "--hw", "h100", "--hw", "cerebras-wse-3", "--execution-model", "eager"],
            "on cerebras-wse-3",
        ),
    ],
)
def test_bad_input_is_one_line_and_non_zero(args, expected):
    line = _one_line_error(dfx(*args))
    assert expected in line


def test_graph_table_and_shapes():
    plain = dfx("graph", "mlp", "--method", "fx")
    assert plain.returncode == 0, plain.stderr
    assert "opcode" in plain.stdout and "call_module" in plain.stdout and "--shapes" in plain.stdout
    shaped = dfx("graph", "mlp", "--shapes", "--dtype", "fp32")
    assert shaped.returncode == 0
    assert "float32" in shaped.stdout and "stride" in shaped.stdout


def test_hw_list_and_show():
    listed = dfx("hw", "list")
    assert listed.returncode == 0, listed.stderr
    for hw_id in ("nvidia-h100-sxm", "google-tpu-v4", "groq-lpu", "cerebras-wse-3", "ibm-spyre", "host-cpu"):
        assert hw_id in listed.stdout
    shown = dfx("hw", "show", "h100", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == "nvidia-h100-sxm"


def test_out_that_cannot_be_a_folder_is_one_line(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("mine")
    line = _one_line_error(dfx("analyze", "mlp", "--hw", "h100", "--out", str(blocker / "sub")))
    assert "cannot write into --out" in line
    assert blocker.read_text() == "mine"


def test_usage_errors_are_one_line():
    line = _one_line_error(dfx("analyze", "mlp", "--frobnicate"))
    assert "No such option: --frobnicate" in line and "dfx analyze --help" in line


def test_a_reader_closing_the_pipe_ends_quietly_with_sigpipe_status(monkeypatch, tmp_path, capsys):
    # `dfx hw list | head -1`: the reader leaves, stdout writes raise BrokenPipeError. rich's Console
    # turns that into SystemExit(1), which must not read as a model calling sys.exit().
    import sys

    from dfx import cli

    sink = open(tmp_path / "sink", "w")

    class ClosedPipe:
        encoding = "utf-8"

        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

        def isatty(self):
            return False

        def fileno(self):
            return sink.fileno()  # where the quiet exit points stdout (devnull) instead

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    # rich's Console goes quiet for good on a broken pipe; restore the shared console after the test
    monkeypatch.setattr(cli._out, "quiet", cli._out.quiet)
    monkeypatch.setattr(sys, "argv", ["dfx", "hw", "list"])
    try:
        with pytest.raises(SystemExit) as exited:
            cli.main()
    finally:
        # the table whose write failed stays in the shared console's buffer: a later in-process run
        # in this worker would print it first (test_cli_edges read "Hardware profiles" as its header)
        cli._out._buffer.clear()
    assert exited.value.code == 141  # 128 + SIGPIPE (13), as git and coreutils end
    assert capsys.readouterr().err == ""  # nothing said about sys.exit() or the model


def test_analyze_table_shows_the_split_over_chips():
    result = dfx("analyze", "mlp", "--hw", "h100", "--hw", "groq-lpu", "--chips", "2")
    assert result.returncode == 0, result.stderr
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in result.stdout.splitlines()
        if line.count("│") == 4
    }
    # --chips 2 on an H100 is tensor parallelism inside its NVLink domain (docs/parallel.md). The MLP's
    # 784*512 + 512*512 + 512*10 weights + 1,034 biases = 669,706 parameters (2.7 MB even in fp32) fit
    # one Groq chip's 220 MiB of SRAM: the TSP model places it on 1 chip, whatever --chips asks
    assert rows["chips (tp x pp x ep)"] == ["2 = tp 2 x pp 1 x ep 1", "1 = tp 1 x pp 1 x ep 1"]
    # the program row names its numbers: the MLP's 3 linears and 2 ReLUs are 5 kernels (Inductor runs
    # a linear as an extern GEMM and fuses no ReLU into it; Groq keeps one kernel per operator), on one
    # chip's cores (an H100's 132 SMs, a Groq chip's 20 superlanes); the H100 program is one chip's of 2.
    # It read "5 on 132 cores", and for llama-2-70b on Groq "3610 on 20 cores" beside 599 chips
    h100, groq = rows["program (kernels on cores)"]
    assert h100.startswith("5 kernels on 132 cores (1 chip), ") and h100.endswith("% busy")
    assert groq.startswith("5 kernels on 20 cores, ")
    doc = json.loads(dfx("analyze", "mlp", "--hw", "h100", "--chips", "2", "--json").stdout)
    from dfx.report.console import format_seconds

    assert rows["communication (in the makespan)"][0] == format_seconds(
        doc["hardware"]["nvidia-h100-sxm"]["parallel"]["communication_s"]
    )
    assert "nvidia-h100-sxm: split over chips chosen by --chips" in result.stdout
    assert "the TSP model needs 1 chips (weights in SRAM, graph order), not the 2 asked" in result.stdout
    one = dfx("analyze", "mlp", "--hw", "h100")
    assert "chips (tp x pp x ep)" not in one.stdout  # one chip, no split: no rows


def test_one_chip_figures_are_marked_when_the_makespan_is_split_over_chips():
    # fsdp=8 gives each chip an eighth of the batch and of the optimizer step: its makespan can be
    # shorter than the critical path of one chip running the whole step, which the table must say
    split = dfx("analyze", "gpt2-block", "--train", "--hw", "h100", "--parallel", "fsdp=8")
    assert split.returncode == 0, split.stderr
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in split.stdout.splitlines()
        if line.count("│") == 3
    }
    assert rows["critical path (infinite-resource lower bound)"].endswith("(1 chip)")
    assert rows["serial time (one stream)"].endswith("(1 chip)")
    assert "chip" not in rows["makespan (latency to quote)"]
    # the node table's times are one chip's, unsplit: its title and its profile column say so
    assert "Top 10 nodes by time on nvidia-h100-sxm (each node on 1 chip, unsplit)" in split.stdout
    assert "nvidia-h100-sxm (1 chip)" in split.stdout
    one = dfx("analyze", "gpt2-block", "--train", "--hw", "h100")
    assert one.returncode == 0 and "(1 chip)" not in one.stdout
