"""`dfx dag` and dfx.sim.handmade on hand-made graphs: every expected value worked by hand below.

The quiz kinds of the course's lab: firing order, critical path, a list schedule on two
processors, SRAM capacity (live bytes), and bucket padding (dfx.shapes, the same quiz).
"""

import json

import pytest
from typer.testing import CliRunner

from dfx.cli import app
from dfx.errors import DfxError
from dfx.shapes.buckets import plan
from dfx.sim.handmade import read_dag, solve_dag

# The 6-node DAG of the tests (times in seconds):
#
#        a(1)
#      /  |   \
#   b(3) c(2) d(2)
#     |   |    |
#     |  e(2)  |
#      \  |   /
#        f(1)
SIX = "node,inputs,time_s\na,,1\nb,a,3\nc,a,2\nd,a,2\ne,c,2\nf,b d e,1\n"


@pytest.fixture
def six(tmp_path):
    path = tmp_path / "six.csv"
    path.write_text(SIX)
    return path


def test_firing_steps_are_the_waves_of_the_firing_rule(six):
    r = solve_dag(six)
    # a has no input; b, c, d wait only on a; e waits on c; f on b, d and e.
    assert r.firing_steps == (("a",), ("b", "c", "d"), ("e",), ("f",))


def test_critical_path_by_hand(six):
    r = solve_dag(six)
    # a-b-f = 1+3+1 = 5; a-c-e-f = 1+2+2+1 = 6; a-d-f = 1+2+1 = 4: the longest is a-c-e-f, 6 s.
    assert r.critical_path.nodes == ("a", "c", "e", "f")
    assert r.critical_path.time_s == 6.0
    # work = 1+3+2+2+2+1 = 11; lower bound on 2 = max(6, 11/2 = 5.5) = 6
    assert r.work_s == 11.0 and r.lower_bound_s == 6.0


def test_list_schedule_on_two_processors_by_rank(six):
    r = solve_dag(six, pes=2)
    # Upward ranks: f 1, e 1+2 = 3, d 2+1 = 3, c 2+3 = 5, b 3+1 = 4, a 1+5 = 6.
    # t=0: a on P0 [0,1).  t=1: ready b(4) c(5) d(3): c -> P0 [1,3), b -> P1 [1,4).
    # t=3: ready d(3), e(3), a tie: d comes first in the table -> P0 [3,5).
    # t=4: e -> P1 [4,6).  t=6: f -> P0 [6,7).  Makespan 7 s.
    doc = r.to_dict()
    placed = {row["name"]: (row["pe"], row["start_s"], row["end_s"]) for row in doc["schedule"]}
    assert placed == {
        "a": (0, 0.0, 1.0),
        "c": (0, 1.0, 3.0),
        "b": (1, 1.0, 4.0),
        "d": (0, 3.0, 5.0),
        "e": (1, 4.0, 6.0),
        "f": (0, 6.0, 7.0),
    }
    assert doc["makespan_s"] == 7.0


def test_a_priority_list_changes_the_schedule(six):
    r = solve_dag(six, pes=2, priority="b,d,c")
    # t=1: b -> P0 [1,4), d -> P1 [1,3).  t=3: c -> P1 [3,5).  t=4: P0 idle (e waits on c).
    # t=5: e -> P0 [5,7).  t=7: f [7,8).  Makespan 8 s, one more than by rank.
    assert r.makespan_s == 8.0
    assert r.priority[:3] == ("b", "d", "c")


def test_one_processor_runs_the_work_serially(six):
    assert solve_dag(six, pes=1).makespan_s == 11.0  # 1+3+2+2+2+1


def test_flops_and_bytes_on_a_quick_profile(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("- {node: x, flops: 2G, bytes: 100MB}\n- {node: y, inputs: [x], flops: 1e9, bytes: 1GB}\n")
    r = solve_dag(path, hw="peak=100G,bw=10G")
    # ridge = 1e11 / 1e10 = 10 FLOP/B.  x: 2e9 / 1e8 = 20 FLOP/B >= 10, compute-bound,
    # time = max(2e9 / 1e11, 1e8 / 1e10) = max(0.02, 0.01) = 0.02 s.
    # y: 1e9 / 1e9 = 1 FLOP/B < 10, memory-bound, time = max(0.01, 1e9 / 1e10 = 0.1) = 0.1 s.
    x, y = r.to_dict()["nodes"]
    assert (x["bound"], y["bound"]) == ("compute", "memory")
    assert x["time_s"] == pytest.approx(0.02) and y["time_s"] == pytest.approx(0.1)
    assert r.critical_path.time_s == pytest.approx(0.12)
    # The same graph with a 2 GB scratchpad at 1 TB/s: on-chip ridge 1e11 / 1e12 = 0.1 FLOP/B, so y
    # moves to compute-bound; its 1 GB fits, time = max(0.01, 1e9 / 1e12 = 0.001) = 0.01 s.
    r2 = solve_dag(path, hw="peak=100G,bw=10G,onchip=2G,onchip_bw=1T")
    y2 = r2.to_dict()["nodes"][1]
    assert (y2["bound_off_chip"], y2["bound_on_chip"], y2["bound"]) == ("memory", "compute", "compute")
    assert y2["time_s"] == pytest.approx(0.01)
    assert r2.to_dict()["ridges_flop_per_byte"] == pytest.approx({"off_chip": 10.0, "on_chip": 0.1})


def test_sram_capacity_from_live_bytes():
    rows = [
        {"node": "a", "time_s": 1, "output_bytes": "10MB"},
        {"node": "b", "inputs": "a", "time_s": 1, "output_bytes": "20MB"},
        {"node": "c", "inputs": "b", "time_s": 1, "output_bytes": "5MB"},
    ]
    # One processor: a [0,1), b [1,2), c [2,3). An output lives from its node's start to the end
    # of its last consumer: a [0,2), b [1,3), c [2,3). During [1,2): a + b = 30 MB, the peak;
    # during [2,3): b + c = 25 MB.
    r = solve_dag(rows, pes=1, capacity_bytes=32e6)
    assert r.peak_live_bytes == 30e6
    assert r.to_dict()["memory"]["fits"] is True
    assert solve_dag(rows, pes=1, hw="peak=1T,bw=1T,onchip=25MB").to_dict()["memory"] == {
        "peak_bytes": 30e6,
        "capacity_bytes": 25e6,
        "fits": False,
    }


def test_bucket_padding_quiz():
    # Lengths 100, 130, 300 on buckets 128, 256, 512: padded to 128, 256, 512 = 896 tokens, of which
    # 896 - 530 = 366 are padding (28 + 126 + 212); waste 366 / 896.
    p = plan([100, 130, 300], [128, 256, 512])
    assert (p.padded_tokens, p.waste_tokens) == (896, 366)
    assert p.waste_fraction == pytest.approx(366 / 896)


def test_cli_json_has_the_critical_path_and_makespan(six):
    result = CliRunner().invoke(app, ["dag", str(six), "--pes", "2", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "dfx.dag/1"
    assert doc["critical_path"] == {"time_s": 6.0, "nodes": ["a", "c", "e", "f"]}
    assert doc["makespan_s"] == 7.0


def test_cli_prints_steps_and_schedule(six):
    result = CliRunner().invoke(app, ["dag", str(six)])
    assert result.exit_code == 0, result.output
    assert "step 2: b, c, d" in result.stdout
    assert "a -> c -> e -> f" in result.stdout


@pytest.mark.parametrize(
    "text, words",
    [
        ("node,inputs,time_s\na,,1\nb,z,1\n", "'z', which is not a node"),
        ("node,inputs,time_s\na,b,1\nb,a,1\n", "cycle"),
        ("node,inputs,time_s\na,,1\na,,2\n", "given twice"),
        ("node,inputs,colour\na,,red\n", "unknown column 'colour'"),
        ("node,inputs,time_s\na,,-1\n", "must be >= 0"),
        ("node,inputs,flops\na,,lots\n", "not a number"),
        ("node,inputs\na,\n", "give a time_s, or flops and bytes"),
    ],
)
def test_bad_tables_are_one_line_errors(tmp_path, text, words):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DfxError, match=words.replace("(", r"\(")):
        solve_dag(path)


def test_bad_priority_and_pes(six):
    with pytest.raises(DfxError, match="'q', which is not a node"):
        solve_dag(six, priority="a,q")
    with pytest.raises(DfxError, match="--pes"):
        solve_dag(six, pes=0)


def test_cli_errors_exit_2(six):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "from dfx.cli import main; main()", "dag", str(six), "--priority", "zz"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "zz" in proc.stderr and "Traceback" not in proc.stderr


def test_read_dag_yaml_mapping_form(tmp_path):
    path = tmp_path / "g.yml"
    path.write_text("nodes:\n  a: {time_s: 1}\n  b: {inputs: a, time: 2 us}\n")
    nodes = read_dag(path)
    assert [n.name for n in nodes] == ["a", "b"] and nodes[1].time_s == pytest.approx(2e-6)
