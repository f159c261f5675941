"""A profile carrying the calibrated machine model's tables (``dfx calibrate --out``) predicts what ``dfx validate`` predicts.

The profile is written by hand (no timing): its tables are small and made-up, so the test checks
the plumbing (analyze and validate read the same tables through the same timer), not the machine.
"""

import pytest
import yaml

import dfx
from dfx.hardware import load_profile, parse_profile
from dfx.measure.calibration import Calibration
from dfx.measure.machine import GemmRate, MachineModel
from dfx.measure.microbench import Sample


def _tables() -> dict:
    grid = [
        {"rows": r, "k": k, "n": n, "flop_per_s": 1e9 * r**0.5} for r in (1, 64) for k in (64, 1024) for n in (64, 1024)
    ]
    return {
        "overhead_curve": [{"gap_s": 1e-5, "overhead_s": 4e-6}, {"gap_s": 1e-3, "overhead_s": 4e-5}],
        "overhead_by_kind": {"linear": 9e-6, "relu": 3e-6},
        "vector_rates": {"gelu": 2e9, "softmax": 3e9},
        "gemm_table": grid,
        "resident_bytes": 8 * 2**20,
        "reference_flop_per_s": 5e10,
    }


def _profile(tables: dict | None) -> dict:
    profile = {
        "id": "test-cpu-calibrated",
        "name": "a hand-made calibrated CPU",
        "vendor": "measured",
        "kind": "cpu",
        "peak_flop_per_s": {"float32": 1e11},
        "memory": [
            {"name": "L2", "capacity_bytes": 2**20, "bandwidth_bytes_per_s": 2e11, "managed": "cache", "on_chip": True},
            {
                "name": "DRAM",
                "capacity_bytes": 64e9,
                "bandwidth_bytes_per_s": 2e10,
                "managed": "software",
                "on_chip": False,
            },
        ],
        "compute": {"cores": 2, "description": "two cores"},
        "scheduling": {"commitment": "dynamic", "description": "eager"},
        "memory_model": "cache",
        "op_overhead_s": 5e-6,
        "sources": {
            "peak_flop_per_s": "made up",
            "memory": "made up",
            "compute": "made up",
            "op_overhead_s": "made up",
        },
    }
    if tables is not None:
        profile["calibrated"] = tables
        profile["sources"]["calibrated"] = "made up for this test"
    return profile


@pytest.fixture(scope="module")
def calibrated_yaml(tmp_path_factory):
    path = tmp_path_factory.mktemp("prof") / "my-cpu.yaml"
    path.write_text(yaml.safe_dump(_profile(_tables())))
    return str(path)


class Tick:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def test_the_tables_load_and_need_a_source(calibrated_yaml):
    profile = load_profile(calibrated_yaml)
    machine = MachineModel.from_profile(profile)
    assert machine.gemm_flop_per_s(64, 64, 64) == pytest.approx(8e9)  # 1e9 * sqrt(64), a grid point
    assert machine.overhead_by_kind["linear"] == 9e-6 and machine.resident_bytes == 8 * 2**20
    assert MachineModel.from_profile(parse_profile(_profile(None), "plain")) is None
    bare = _profile(_tables())
    del bare["sources"]["calibrated"]
    with pytest.raises(Exception, match="calibrated"):
        parse_profile(bare, "no source")


def test_analyze_eager_with_the_calibrated_profile_equals_validate(calibrated_yaml):
    from dfx.measure.validation import validate

    v = validate("mlp", calibrated_yaml, repeat=1, warmup=0, clock=Tick())  # prediction "roofline": what analyze says
    a = dfx.analyze("mlp", hardware=[calibrated_yaml], dtype="fp32", execution_model="eager")
    analyzed = {t.name: t.time_s for t in a.hardware[0].nodes}
    assert {n.name: n.predicted_s for n in v.nodes} == pytest.approx({n.name: analyzed[n.name] for n in v.nodes})
    assert v.end_to_end.predicted_s == pytest.approx(a.hardware[0].serial_time_s)
    # the tables matter: the same profile without them predicts otherwise
    plain = dfx.analyze("mlp", hardware=[parse_profile(_profile(None), "plain")], dtype="fp32", execution_model="eager")
    assert plain.hardware[0].serial_time_s != pytest.approx(a.hardware[0].serial_time_s)
    # and cache-aware with the profile's own tables is the same prediction
    cache = validate("mlp", calibrated_yaml, repeat=1, warmup=0, clock=Tick(), prediction="cache-aware")
    assert [n.predicted_s for n in cache.nodes] == pytest.approx([n.predicted_s for n in v.nodes])


def test_analyze_compiled_with_the_calibrated_profile_equals_validate_compiled(calibrated_yaml):
    from dfx.measure.validation import validate

    v = validate("mlp", calibrated_yaml, repeat=1, warmup=0, compiled=True)
    a = dfx.analyze("mlp", hardware=[calibrated_yaml], dtype="fp32")  # compiled by default
    # Inductor's CPU kernels run one after another on all threads: the units' sum is the program's serial time
    assert v.end_to_end.predicted_s == pytest.approx(a.hardware[0].serial_time_s)


def test_calibrate_writes_its_tables_into_the_profile(tmp_path):
    sample = Sample(1e11, 1e-3, 5, "made up")
    cal = Calibration(
        device="cpu",
        device_name="test",
        torch_version="0",
        threads=2,
        date="2026-12-01 15:00 UTC",
        peak_flop_per_s={"float32": sample},
        bandwidth={"DRAM": Sample(2e10, 1e-3, 5, "made up")},
        capacities={},
        overhead=Sample(5e-6, 5e-6, 5, "made up"),
        overhead_by_kind={"add": 3e-6},
        overhead_curve=((1e-5, 4e-6),),
        vector_rates={"gelu": Sample(2e9, 1e-3, 5, "made up")},
        gemm_table=tuple(GemmRate(r, k, n, 1e10) for r in (1, 16) for k in (64, 512) for n in (64, 512)),
        reference_flop_per_s=5e10,
    )
    path = tmp_path / "my-cpu.yaml"
    path.write_text(yaml.safe_dump(cal.to_profile(), sort_keys=False))  # as `dfx calibrate --out` writes it
    profile = load_profile(str(path))
    assert MachineModel.from_profile(profile) == MachineModel.from_calibration(cal.to_dict())
    assert "dfx calibrate" in profile.sources["calibrated"]


def test_compiled_kernels_on_the_calibrated_profile_by_hand(calibrated_yaml):
    compiled = dfx.analyze("mlp", hardware=[calibrated_yaml], dtype="fp32").hardware[0].program
    eager = {
        t.name: t
        for t in dfx.analyze("mlp", hardware=[calibrated_yaml], dtype="fp32", execution_model="eager").hardware[0].nodes
    }
    relu = next(k for k in compiled.kernels if k.nodes == ("relu",))
    # relu of [1, 512] fp32: reads 2,048 B and writes 2,048 B, a 4,096 B working set in the 1 MiB L2 at 2e11 B/s;
    # 512 FLOPs at the 1e11 peak (relu has no measured family) = 5.12 ns < 4,096 / 2e11 = 20.48 ns;
    # a generated kernel's fixed cost is the cheapest tiny op's: relu's 3 us (linear's is 9 us)
    assert relu.offchip_bytes == 4096
    assert relu.time_s == pytest.approx(3e-6 + 4096 / 2e11)
    # a library GEMM keeps its eager node's calibrated fixed cost (its kind, the gap since the last linear)
    linear = next(k for k in compiled.kernels if k.nodes == ("linear",))
    assert linear.overhead_s == pytest.approx(eager["linear"].overhead_s)
