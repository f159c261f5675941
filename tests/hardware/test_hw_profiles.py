"""Every shipped profile loads and validates; ids, aliases and key figures are as sourced."""

import json

import pytest

from dfx.hardware import HardwareProfile, Kind, MemoryModel, list_profiles, load_profile, profile_ids
from dfx.ir import normalize_dtype

SHIPPED = [
    "amd-mi300x",
    "cerebras-wse-2",
    "cerebras-wse-3",
    "google-tpu-v4",
    "google-tpu-v5e",
    "google-tpu-v6e",
    "groq-lpu",
    "host-cpu",
    "ibm-spyre",
    "nvidia-a100-sxm-80gb",
    "nvidia-a100-sxm4-40gb",
    "nvidia-b200",
    "nvidia-h100-sxm",
    "nvidia-h200",
]

ALIASES = {
    "h100": "nvidia-h100-sxm",
    "a100": "nvidia-a100-sxm-80gb",
    "h200": "nvidia-h200",
    "b200": "nvidia-b200",
    "mi300x": "amd-mi300x",
    "tpu-v4": "google-tpu-v4",
    "tpu-v5e": "google-tpu-v5e",
    "tpu-v6e": "google-tpu-v6e",
    "spyre": "ibm-spyre",
    "groq": "groq-lpu",
    "wse2": "cerebras-wse-2",
    "wse3": "cerebras-wse-3",
    "cpu": "host-cpu",
    "H100": "nvidia-h100-sxm",  # case-insensitive
}


def test_shipped_ids():
    assert profile_ids() == SHIPPED
    assert [p.id for p in list_profiles()] == SHIPPED


@pytest.mark.parametrize("profile_id", SHIPPED)
def test_every_shipped_profile_loads_and_validates(profile_id):
    profile = load_profile(profile_id)
    assert isinstance(profile, HardwareProfile)
    assert profile.id == profile_id
    # every number has a source (the schema checks it; spot-check it here too)
    for path in profile.numeric_paths():
        assert profile.source_of(path), path
    # dtype keys are torch names
    assert all(normalize_dtype(d) == d for d in profile.peak_flop_per_s)
    # at least one level the roofline can use
    assert profile.off_chip_level() is not None
    # the SI export is JSON and validates back to an equal profile
    si = profile.to_si_dict()
    json.dumps(si)
    assert HardwareProfile.model_validate(si) == profile


@pytest.mark.parametrize(("alias", "profile_id"), sorted(ALIASES.items()))
def test_aliases(alias, profile_id):
    assert load_profile(alias).id == profile_id


def test_aliases_are_unique():
    names = [n for p in list_profiles() for n in (p.id, *p.aliases)]
    assert len(names) == len(set(names))


def test_h100_figures():
    p = load_profile("nvidia-h100-sxm")
    assert p.kind is Kind.GPU and p.memory_model is MemoryModel.CACHE
    assert p.peak_flop_per_s["bfloat16"] == 989.4e12  # dense, not the 1,978.9 sparse figure
    assert p.peak_flop_per_s["float8_e4m3fn"] == 1978.9e12  # dense, not 3,957.8
    assert p.level("HBM3").bandwidth_bytes_per_s == 3.35e12
    assert p.level("HBM3").capacity_bytes == 80e9
    assert p.op_overhead_s == 1.5e-6
    assert p.compute.clock_hz == 1.83e9


def test_spyre_figures():
    p = load_profile("spyre")
    lx = p.level("LX")
    assert lx.on_chip and lx.managed.value == "software"
    assert lx.instances == 32 and lx.capacity_per_instance_bytes == 2e6  # 32 cores x 2 MB
    assert p.level("LPDDR5").bandwidth_bytes_per_s == 150e9  # measured effective
    assert p.peak_flop_per_s["float16"] == 75e12  # 300 TOPS / 4, an estimate
    assert p.memory_model is MemoryModel.SCRATCHPAD and p.scheduling.commitment.value == "static"
    # the unpublished figures are marked as estimates
    assert {"peak_flop_per_s.float16", "memory.LX.bandwidth_bytes_per_s"} <= set(p.estimates())
    assert "unpublished" in p.source_of("memory.LPDDR5.bandwidth_bytes_per_s")


def test_groq_off_chip_level_is_the_c2c_links():
    p = load_profile("groq")
    c2c = p.off_chip_level()
    assert c2c.name == "C2C" and c2c.capacity_bytes is None
    assert c2c.bandwidth_bytes_per_s == 480e9  # 16 links x 4 lanes x 30 Gb/s / 8 x 2 directions
    assert p.on_chip_level().capacity_bytes == 220 * 2**20


def test_host_cpu_says_it_is_an_estimate():
    p = load_profile("cpu")
    assert "estimate" in p.name
    assert "peak_flop_per_s.float32" in p.estimates()


def test_levels_without_a_bandwidth_are_listed_but_not_used():
    a100 = load_profile("a100")
    assert a100.level("L2").bandwidth_bytes_per_s is None
    assert a100.on_chip_level() is None  # no on-chip level with a published bandwidth
    assert load_profile("tpu-v4").on_chip_level() is None  # CMEM bandwidth unpublished


@pytest.mark.parametrize(
    ("profile_id", "dtype", "used"),
    [
        ("h100", "bf16", "bfloat16"),  # exact
        ("wse3", "bfloat16", "float16"),  # same width, same family
        ("tpu-v4", "float32", "bfloat16"),  # nothing as wide: the closest narrower float
        ("tpu-v5e", "float16", "bfloat16"),
        ("a100", "float8_e4m3fn", "bfloat16"),  # no FP8 on Ampere: closest wider float
        ("h100", "int64", "float64"),  # nothing int as wide: as wide, other family
        ("spyre", "float32", "float16"),
        ("spyre", "bfloat16", "float16"),
        # a complex op runs in its components' precision: complex64 = two float32s, complex32 two float16s
        ("h100", "complex64", "float32"),
        ("h100", "complex32", "float16"),
        ("h100", "complex128", "float64"),
        ("tpu-v4", "complex64", "bfloat16"),  # no float32 on the TPU: the float32 rule's bfloat16
    ],
)
def test_peak_fallback(profile_id, dtype, used):
    p = load_profile(profile_id)
    lookup = p.peak(dtype)
    assert lookup.used == used
    assert lookup.flop_per_s == p.peak_flop_per_s[used]
    assert lookup.fell_back == (normalize_dtype(dtype) != used)


def test_load_user_profile_by_path(h100_data, write_profile, tmp_path):
    h100_data["id"] = "my-gpu"
    h100_data["aliases"] = []
    h100_data["memory"][2]["bandwidth_bytes_per_s"] = "2 TB/s"
    path = write_profile(h100_data)
    p = load_profile(path)
    assert p.id == "my-gpu" and p.off_chip_level().bandwidth_bytes_per_s == 2e12
    assert load_profile(str(path)).id == "my-gpu"
    # and as JSON, in SI
    json_path = tmp_path / "mine.json"
    json_path.write_text(json.dumps(p.to_si_dict()))
    assert load_profile(json_path) == p


def test_a_file_without_a_suffix_is_a_path_unless_it_is_an_id(h100_data, write_profile, monkeypatch, tmp_path):
    h100_data["id"] = "my-gpu"
    h100_data["aliases"] = []
    write_profile(h100_data, "mygpu")
    write_profile(h100_data, "h100")  # a file named like an alias: the alias wins
    monkeypatch.chdir(tmp_path)
    assert load_profile("mygpu").id == "my-gpu"
    assert load_profile("h100").id == "nvidia-h100-sxm"
    assert load_profile("./h100").id == "my-gpu"


def test_each_call_hands_out_its_own_copy():
    first = load_profile("h100")
    first.peak_flop_per_s["bfloat16"] = 1.0  # a frozen model still holds a dict
    assert load_profile("h100").peak_flop_per_s["bfloat16"] == 989.4e12


def test_summary_row():
    row = load_profile("spyre").summary_row()
    assert row["id"] == "ibm-spyre" and row["memory_model"] == "scratchpad"
    assert (row["peak_bf16_flop_per_s"], row["peak_bf16_dtype"]) == (75e12, "float16")  # bf16 falls back to fp16
    assert row["off_chip_bytes_per_s"] == 150e9 and row["on_chip_bytes"] == 64e6


def test_mi300x_figures():
    # AMD MI300X data sheet: dense peaks at the 2.1 GHz peak engine clock; 304 CUs x 2048 FLOP/clock
    p = load_profile("amd-mi300x")
    assert p.kind is Kind.GPU and p.vendor == "AMD"
    assert p.peak_flop_per_s["bfloat16"] == 1307.4e12  # dense, not the 2,614.9 sparse figure
    assert abs(304 * 2.1e9 * 2048 - p.peak_flop_per_s["bfloat16"]) / 1307.4e12 < 1e-3
    assert p.peak_flop_per_s["float8_e4m3fnuz"] == 2614.9e12
    assert p.peak("fp8").used == "float8_e4m3fnuz"  # dfx's fp8 (OCP e4m3fn) runs on CDNA 3's FNUZ peak
    assert p.level("HBM3").bandwidth_bytes_per_s == 5.3e12 and p.level("HBM3").capacity_bytes == 192e9
    assert p.level("InfinityCache").capacity_bytes == 256 * 2**20
    assert p.level("LDS").capacity_per_instance_bytes == 64 * 1024
    assert p.simt.warp_size_threads == 64 and p.simt.compute_capability == "gfx942"
    assert p.tdp_w == 750
    # 7 Infinity Fabric links x 64 GB/s one way (128 GB/s both ways) = 448 GB/s
    assert p.interconnect.ring_bytes_per_s == 7 * 64e9 and p.interconnect.domain_chips == 8


def test_b200_figures():
    p = load_profile("nvidia-b200")
    assert p.peak_flop_per_s["bfloat16"] == 2250e12  # dense; 4.5 PFLOP/s is the 2:4-sparse figure
    assert p.peak_flop_per_s["float8_e4m3fn"] == 2 * p.peak_flop_per_s["bfloat16"]
    assert p.peak_flop_per_s["float4_e2m1fn_x2"] == 9000e12  # dense fp4; 18 PFLOP/s is sparse
    assert p.level("HBM3e").bandwidth_bytes_per_s == 8e12 and p.level("HBM3e").capacity_bytes == 180e9
    assert p.interconnect.ring_bytes_per_s == 1.8e12 / 2  # NVLink 5: 1.8 TB/s both ways
    assert p.simt.warp_size_threads == 32 and p.compute.cores == 148
    assert p.tdp_w == 1000


def test_nvidia_profiles_keep_32_lane_warps():
    # the schema's default of 32 is what the NVIDIA profiles rely on; AMD CDNA writes 64
    for p in list_profiles():
        if p.simt is not None:
            assert p.simt.warp_size_threads == (64 if p.vendor == "AMD" else 32), p.id
