"""Quick profiles: a machine in one line (dfx.hardware.quick), wherever a profile id is accepted."""

import pytest

from dfx.hardware import HardwareProfileError, load_profile, quick_profile
from dfx.roofline.bound import ridge_point


@pytest.mark.parametrize(
    "spec",
    [
        "quick:peak=200TFLOP/s,bw=2TB/s,onchip=32MB",
        "peak=200T,bw=2T,onchip=32M",
        "200TFLOP/s,2TB/s,32MB",
        "quick:200 TFLOP/s, 2 TB/s, 32 MB",
    ],
)
def test_three_spellings_are_one_profile(spec):
    p = load_profile(spec)
    assert p.id == "quick-200tflops-2tbps-32mb"
    assert p.peak("bfloat16").flop_per_s == 200e12 and p.peak("float32").flop_per_s == 200e12
    assert p.off_chip_level().bandwidth_bytes_per_s == 2e12
    assert p.level("onchip").capacity_bytes == 32e6
    # 200e12 / 2e12 = 100 FLOP/B
    assert ridge_point(p.peak("bfloat16").flop_per_s, p.off_chip_level().bandwidth_bytes_per_s) == 100.0


def test_onchip_bandwidth_makes_a_scratchpad():
    p = quick_profile("peak=200T,bw=2T,onchip=32M,onchip_bw=20T")
    assert p.memory_model.value == "scratchpad"
    assert p.on_chip_level().bandwidth_bytes_per_s == 20e12  # ridge 200e12 / 20e12 = 10 FLOP/B
    assert quick_profile("peak=200T,bw=2T,onchip=32M").memory_model.value == "cache"


def test_every_number_is_sourced_as_user_given():
    p = quick_profile("peak=1T,bw=1T,overhead=2us")
    assert p.op_overhead_s == pytest.approx(2e-6)
    assert all("command line" in p.source_of(path) for path in p.numeric_paths())


@pytest.mark.parametrize(
    "spec, words",
    [
        ("peak=200T", "bw= is missing"),
        ("bw=2T,onchip=3M", "peak= is missing"),
        ("peak=200T,bw=2T,colour=red", "unknown key 'colour'"),
        ("peak=200TB/s,bw=2T", "cannot read peak='200TB/s'"),
        ("peak=200T,peak=100T,bw=2T", "peak is given twice"),
        ("quick:200TFLOP/s,2TB/s,3TB/s", "two values for bw"),
        ("quick:200,2TB/s", "cannot tell what '200' is"),
        ("peak=200T,bw=2T,model=scratchpad", "needs onchip= and onchip_bw="),
        ("peak=0,bw=2T", "peak must be > 0"),
    ],
)
def test_bad_quick_profiles_name_the_text_and_key(spec, words):
    with pytest.raises(HardwareProfileError, match="quick profile") as info:
        load_profile(spec)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_a_shipped_id_is_not_a_quick_profile():
    assert load_profile("h100").id == "nvidia-h100-sxm"
