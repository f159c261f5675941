"""dfx sweep from the command line: the table, the report files, resuming, refusals."""

import shutil
import subprocess
import sys

from dfx.sweep.runner import CACHE_DIR


def dfx(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=600, cwd=cwd
    )


def test_cli_sweep_report_and_resume(full_sweep, tmp_path):
    out = tmp_path / "s"
    shutil.copytree(full_sweep[0] / CACHE_DIR, out / CACHE_DIR)  # its graphs: the CLI evaluates, captures nothing
    args = (
        "sweep",
        "-m",
        "bert-layer",
        "--hw",
        "h100,spyre",
        "--batch",
        "1,2",
        "--seq",
        "8",
        "--out",
        str(out),
        "--workers",
        "1",
    )
    r = dfx(*args)
    assert r.returncode == 0, r.stderr
    assert "ran 4 points (0 already done)" in r.stdout
    for name in ("sweep.json", "summary.csv", "latency_vs_batch.png", "pareto.png", "report.html"):
        assert (out / name).is_file(), name
    assert (out / "results.csv").is_file() or (out / "results.parquet").is_dir()
    # bert-layer is one of BERT-base's 12 layers: its best tokens/s is one layer's, and says so.
    # tokens/s of a forward point = batch * seq / latency_s (docs/sweeps.md), the best over batch 1, 2
    from dfx.sweep import ResultsTable

    rows = ResultsTable(out).rows()
    for hw in ("nvidia-h100-sxm", "ibm-spyre"):
        best, batch = max((p["batch"] * 8 / p["latency_s"], p["batch"]) for p in rows if p["hardware"] == hw)
        # ... and the point it is at, in its own column (the "at" beside it was the best latency's)
        line = next(line for line in r.stdout.splitlines() if f"{best:,.0f} (1 layer)" in line)
        assert line.split("│")[-2].strip() == f"batch {batch} seq 8 bfloat16 forward default", line
    summary = (out / "summary.csv").read_text().splitlines()
    assert summary[0].endswith(",model_scope") and all(line.endswith(",1 layer") for line in summary[1:])
    assert "(1 layer)</td>" in (out / "report.html").read_text()
    r = dfx(*args)
    assert r.returncode == 0 and "ran 0 points (4 already done)" in r.stdout, r.stderr


def test_a_sweep_whose_every_point_is_refused_fails_and_keeps_why(full_sweep, tmp_path):
    # bert-layer has 12 heads: tp=64 is refused at every point, tp=4 is not
    out = tmp_path / "s"
    shutil.copytree(full_sweep[0] / CACHE_DIR, out / CACHE_DIR)
    args = ("sweep", "-m", "bert-layer", "--hw", "h100", "--batch", "1,2", "--seq", "8", "--workers", "1")
    r = dfx(*args, "--parallel", "tp=64", "--out", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 points refused by dfx" in r.stdout and "use tp <= 12" in r.stdout
    assert "error: all 2 points were refused" in r.stderr and "Traceback" not in r.stderr
    assert (out / "results.csv").is_file() or (out / "results.parquet").is_dir()  # the refusals are kept
    r = dfx(*args, "--parallel", "tp=4", "--parallel", "tp=64", "--out", str(tmp_path / "mixed"))
    assert r.returncode == 0 and "2 points refused by dfx" in r.stdout, r.stderr


def test_cli_refuses_a_users_files_and_absurd_sweeps(tmp_path):
    (tmp_path / "report.html").write_text("mine")
    r = dfx("sweep", "-m", "bert-layer", "--hw", "h100", "--seq", "8", "--out", str(tmp_path))
    assert r.returncode == 2 and "--force" in r.stderr and (tmp_path / "report.html").read_text() == "mine"
    r = dfx(
        "sweep",
        "-m",
        "bert-layer",
        "--hw",
        "h100",
        "--batch",
        ",".join(map(str, range(1, 200))),
        "--seq",
        ",".join(map(str, range(1, 600))),
        "--out",
        str(tmp_path / "x"),
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "more than max_points 100,000" in r.stderr
    assert not (tmp_path / "x").exists()


def test_a_bad_chip_count_is_named_as_chips(tmp_path):
    # --chips joins --parallel on one axis; a bad count is the --chips flag's, not --parallel's
    r = dfx("sweep", "-m", "bert-layer", "--hw", "h100", "--chips", "1,x", "--out", str(tmp_path / "s"))
    assert (
        r.returncode == 2 and r.stderr.strip() == "error: --chips 'x': expected chip counts such as 1,2,4,8 (or auto)"
    )
    assert not (tmp_path / "s").exists()


def test_a_sweep_on_cached_graphs_never_imports_torch(full_sweep, tmp_path):
    # every graph of the sweep is in its folder: nothing to capture, so no model check that needs torch
    out = tmp_path / "cached"
    shutil.copytree(full_sweep[0] / CACHE_DIR, out / CACHE_DIR)
    code = (
        "import sys, dfx.cli; sys.argv = ['dfx', 'sweep', '-m', 'gpt2-block,bert-layer', '--hw', 'h100,groq', "
        "'--batch', '1,2', '--seq', '8,16', '--workers', '1', '--no-report', '--out', sys.argv[1]]\n"
        "try:\n    dfx.cli.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.endswith("ok\n"), r.stderr
    assert "ran 16 points (0 already done)" in r.stdout  # 2 models x 2 profiles x 2 batch x 2 seq
    # a model with a graph to capture is still checked first: a typo is refused before any point runs
    r = dfx("sweep", "-m", "gpt2-block,bert-layr", "--hw", "h100", "--seq", "8", "--out", str(tmp_path / "t"))
    assert r.returncode != 0 and "unknown model 'bert-layr'" in r.stderr and not (tmp_path / "t").exists()


def test_model_scope_says_how_much_of_the_model_a_point_is():
    from dfx.models import PRESETS
    from dfx.sweep.report import BUILTIN_SCOPES, model_scope

    # every built-in has an entry (a new one without fails here); they are one layer or block of a
    # published model (registry.py), and mlp is PB-05's whole MLP; an hf: config is built whole
    assert set(BUILTIN_SCOPES) == set(PRESETS)
    assert model_scope("gpt2-block") == "1 layer"
    assert model_scope("resnet-block") == "1 block"
    assert model_scope("mlp") == "whole model"
    assert model_scope("hf:llama-2-70b") == "whole model"
    assert model_scope("nothere") == ""


def test_the_sweeps_list_of_non_token_seqs_is_the_registrys():
    from dfx.models import PRESETS
    from dfx.sweep.evaluate import SEQ_NOT_TOKENS

    # the torch-free copy the sweep reads must say what each built-in's preset says about its seq
    assert SEQ_NOT_TOKENS == {n: p.seq_means for n, p in PRESETS.items() if p.seq_means != "tokens"}
    assert SEQ_NOT_TOKENS["resnet-block"] == "image side"  # its input is (B, 256, seq, seq)
