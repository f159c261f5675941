"""``dfx simulate`` as a user meets it, on an app the command is registered into."""

import json

import pytest
import typer
from typer.testing import CliRunner

from dfx.errors import DfxError
from dfx.sim.command import register


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:  # a group, so the command is addressed by name as under `dfx`
        pass

    register(app)
    return app


def _invoke(*args: str):
    return CliRunner().invoke(_app(), ["simulate", *args], catch_exceptions=True)


@pytest.fixture
def analysis_json(tmp_path):
    """A saved analysis: s -> {a, b} -> j, timed 1, 2, 3, 1 us on profile h100-like key."""
    names = ["s", "a", "b", "j"]
    inputs = {"s": [], "a": ["s"], "b": ["s"], "j": ["a", "b"]}
    from dfx.schema.analysis import example_analysis, example_hardware

    times = {"s": 1e-6, "a": 2e-6, "b": 3e-6, "j": 1e-6}
    doc = example_analysis(
        "fork",
        [
            {
                "name": n,
                "op": "call_function",
                "category": "elementwise",
                "bytes_written": 64,
                "outputs": [{"shape": [16], "dtype": "float32"}],
                "inputs": inputs[n],
            }
            for n in names
        ],
        hardware={"nvidia-h100-sxm": example_hardware({n: {"time_s": t} for n, t in times.items()})},
    )
    doc["edges"] = [{"src": u, "dst": v, "bytes": 64} for v in names for u in inputs[v]]
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps(doc))
    return path


def test_json_on_a_saved_analysis(analysis_json):
    result = _invoke(str(analysis_json), "--hw", "h100", "--pes", "2", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "dfx.simulation/1" and doc["pes"] == 2 and doc["hardware"] == "nvidia-h100-sxm"
    # s[0,1], a[1,3] and b[1,4] side by side, j[4,5] (us): makespan 5 us = the critical path s-b-j.
    assert doc["lower_bounds"]["critical_path_s"] == pytest.approx(5e-6)
    assert doc["lower_bounds"]["work_over_pes_s"] == pytest.approx(3.5e-6)
    for name in ("static", "dynamic"):
        assert doc["policies"][name]["makespan_s"]["mean"] == pytest.approx(5e-6)
        assert len(doc["policies"][name]["utilization"]) == 2


def test_summary_and_steps(analysis_json):
    result = _invoke(str(analysis_json), "--hw", "nvidia-h100-sxm", "--pes", "2", "--steps", "--policy", "dynamic")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Makespan" in out and "critical path" in out and "Utilization per PE" in out
    assert "Firing steps, dynamic" in out and "static" not in out.split("Makespan")[1].split("Utilization")[0]


def test_out_writes_and_never_overwrites_without_force(analysis_json, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sim"
    first = _invoke(str(analysis_json), "--hw", "h100", "--out", str(out))
    assert first.exit_code == 0, first.output
    assert {p.name for p in out.iterdir()} == {
        "simulation.json",
        "trace.json",
        "gantt.png",
        "analysis.json",
        "report.html",
    }
    trace = json.loads((out / "trace.json").read_text())
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == 2 * 4  # both policies, one per node
    (out / "gantt.png").write_bytes(b"mine")
    again = _invoke(str(analysis_json), "--hw", "h100", "--out", str(out))
    assert isinstance(again.exception, DfxError) and "--force" in str(again.exception)
    assert (out / "gantt.png").read_bytes() == b"mine"
    forced = _invoke(str(analysis_json), "--hw", "h100", "--out", str(out), "--force")
    assert forced.exit_code == 0 and (out / "gantt.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--pes", "0"], "--pes must be"),
        (["--jitter", "-0.5"], "--jitter must be"),
        (["--runs", "0"], "--runs must be"),
        (["--policy", "fifo"], "unknown policy"),
        (["--hw", "no-such-chip"], "no-such-chip"),
    ],
)
def test_bad_values_are_one_line_dfx_errors(analysis_json, args, fragment):
    base = ["--hw", "h100"] if "--hw" not in args else []
    result = _invoke(str(analysis_json), *base, *args)
    assert isinstance(result.exception, DfxError), result.output
    assert fragment in str(result.exception) and "\n" not in str(result.exception)


def test_a_built_in_model_end_to_end():
    pytest.importorskip("torch")
    # one task per graph node (eager): the MLP's nodes, placeholders and output included
    result = _invoke(
        "mlp", "--hw", "h100", "--pes", "2", "--jitter", "0.2", "--runs", "5", "--json", "--execution-model", "eager"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["model"] == "mlp" and doc["runs"] == 5 and doc["dag"]["nodes"] > 5
    lb = doc["lower_bounds"]
    for pol in doc["policies"].values():
        assert pol["makespan_s"]["p50"] >= 0 and len(pol["makespans_s"]) == 5
        assert pol["predicted_makespan_s"] >= max(lb["critical_path_s"], lb["work_over_pes_s"]) * (1 - 1e-9)
