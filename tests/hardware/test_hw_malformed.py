"""A malformed profile is rejected with a one-line HardwareProfileError naming the field and what was expected."""

import pytest

from dfx.errors import DfxError
from dfx.hardware import HardwareProfileError, load_profile, parse_profile


def _error(data, write_profile) -> str:
    with pytest.raises(HardwareProfileError) as info:
        load_profile(write_profile(data))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_error_is_a_dfx_error():
    assert issubclass(HardwareProfileError, DfxError)


def test_missing_field(h100_data, write_profile):
    del h100_data["memory"][2]["bandwidth_bytes_per_s"]
    message = _error(h100_data, write_profile)
    assert "'memory[2].bandwidth_bytes_per_s' is missing" in message
    assert "B/s" in message  # what was expected, read from the unit in the name


def test_missing_top_level_field(h100_data, write_profile):
    del h100_data["peak_flop_per_s"]
    assert "'peak_flop_per_s' is missing" in _error(h100_data, write_profile)


def test_negative_bandwidth(h100_data, write_profile):
    h100_data["memory"][2]["bandwidth_bytes_per_s"] = "-3.35 TB/s"
    message = _error(h100_data, write_profile)
    assert "memory[2].bandwidth_bytes_per_s" in message
    assert "greater than or equal to 1000000" in message and "-3.35" in message  # the 1 MB/s floor


def test_zero_peak(h100_data, write_profile):
    h100_data["peak_flop_per_s"]["bfloat16"] = 0
    message = _error(h100_data, write_profile)
    assert "peak_flop_per_s.bfloat16" in message and "greater than or equal to 1000000" in message


def test_unknown_unit(h100_data, write_profile):
    h100_data["memory"][2]["bandwidth_bytes_per_s"] = "3.35 TB/sec"
    message = _error(h100_data, write_profile)
    assert "memory[2].bandwidth_bytes_per_s" in message
    assert "unknown unit 'TB/sec'" in message and "B/s" in message


def test_unit_of_the_wrong_dimension(h100_data, write_profile):
    h100_data["op_overhead_s"] = "1.5 GHz"
    message = _error(h100_data, write_profile)
    assert "'op_overhead_s'" in message and "unknown unit 'GHz'" in message


def test_unknown_dtype(h100_data, write_profile):
    h100_data["peak_flop_per_s"]["fp33"] = "1 TFLOP/s"
    message = _error(h100_data, write_profile)
    assert "'peak_flop_per_s'" in message and "unknown dtype 'fp33'" in message and "bfloat16" in message


def test_dtype_aliases_are_accepted_but_not_twice(h100_data, write_profile):
    h100_data["peak_flop_per_s"]["bf16"] = h100_data["peak_flop_per_s"].pop("bfloat16")
    assert load_profile(write_profile(h100_data)).peak_flop_per_s["bfloat16"] == 989.4e12
    h100_data["peak_flop_per_s"]["bfloat16"] = "1 TFLOP/s"
    assert "given twice" in _error(h100_data, write_profile)


def test_unknown_enum_value(h100_data, write_profile):
    h100_data["kind"] = "gpus"
    message = _error(h100_data, write_profile)
    assert "'kind'" in message and "'gpu'" in message


def test_misspelt_field(h100_data, write_profile):
    h100_data["memory"][2]["bandwith_bytes_per_s"] = h100_data["memory"][2].pop("bandwidth_bytes_per_s")
    message = _error(h100_data, write_profile)
    assert "memory[2]" in message  # the missing bandwidth or the misspelt key, both name the level


def test_extra_field(h100_data, write_profile):
    h100_data["tdp_watts"] = 700
    assert "'tdp_watts' is not part of the schema" in _error(h100_data, write_profile)


def test_number_without_a_source(h100_data, write_profile):
    del h100_data["sources"]["tdp_w"]
    assert "'tdp_w' has no source" in _error(h100_data, write_profile)


def test_source_for_no_field(h100_data, write_profile):
    h100_data["sources"]["memroy.HBM3"] = "typo"
    assert "'memroy.HBM3' names no field" in _error(h100_data, write_profile)


def test_duplicate_level_names(h100_data, write_profile):
    h100_data["memory"][1]["name"] = "HBM3"
    assert "'HBM3' is used twice" in _error(h100_data, write_profile)


def test_no_level_with_a_bandwidth(h100_data, write_profile):
    for level in h100_data["memory"]:
        level["bandwidth_bytes_per_s"] = None
    assert "no level has a bandwidth" in _error(h100_data, write_profile)


def test_not_a_mapping(write_profile):
    assert "expected a mapping" in _error(["not", "a", "profile"], write_profile)


def test_invalid_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("id: [unclosed\n")
    with pytest.raises(HardwareProfileError, match="not valid YAML") as info:
        load_profile(path)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(HardwareProfileError, match="does not exist"):
        load_profile(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("ref", "suggestion"), [("nvidia-h100", "nvidia-h100-sxm"), ("h1000", "h100"), ("spire", "spyre")]
)
def test_unknown_id_names_close_matches(ref, suggestion):
    with pytest.raises(HardwareProfileError, match="unknown hardware profile") as info:
        load_profile(ref)
    assert f"'{suggestion}'" in str(info.value).split("did you mean")[1]


def test_unknown_id_without_close_match():
    with pytest.raises(HardwareProfileError, match="unknown hardware profile 'zzzz'") as info:
        load_profile("zzzz")
    assert "did you mean" not in str(info.value) and "nvidia-h100-sxm" in str(info.value)


def test_parse_profile_names_its_origin(h100_data):
    del h100_data["name"]
    with pytest.raises(HardwareProfileError, match="hardware profile my-origin: field 'name' is missing"):
        parse_profile(h100_data, "my-origin")


def test_a_peak_no_machine_has_is_refused(h100_data, write_profile):
    # a tester's 1e-300 FLOP/s ran: makespan 2.06e+307 s and "nan% busy"; 1 MFLOP/s is a 1 MHz scalar core
    h100_data["peak_flop_per_s"]["bfloat16"] = 1e-300
    message = _error(h100_data, write_profile)
    assert "peak_flop_per_s.bfloat16" in message and "1000000" in message


def test_a_nearer_memory_level_slower_than_a_farther_one_is_refused(h100_data, write_profile):
    # the H100 lists SMEM, L2, HBM3 closest first; an L2 at 5.5 MB/s under HBM's 3.35 TB/s is a typo
    levels = [level["name"] for level in h100_data["memory"]]
    h100_data["memory"][levels.index("L2")]["bandwidth_bytes_per_s"] = "5.5 MB/s"
    message = _error(h100_data, write_profile)
    assert "L2 (0.0055 GB/s) is listed before" in message and "HBM3 (3.35e+03 GB/s)" in message


def test_a_folder_or_a_huge_file_is_not_read_as_a_profile(tmp_path):
    with pytest.raises(HardwareProfileError, match="is a folder; give a .yaml or .json file"):
        load_profile(tmp_path / "")
    big = tmp_path / "big.yaml"
    big.write_text("x" * (2**20 + 1))  # one byte over the 1 MiB cap: refused before it is parsed
    with pytest.raises(HardwareProfileError, match="1,048,577 bytes, over the 1,048,576"):
        load_profile(big)


def test_a_missing_or_non_utf8_profile_file_names_the_fix(tmp_path):
    # the messages named the file and the problem but no fix
    with pytest.raises(
        HardwareProfileError, match=r"'.*nope.yaml' does not exist; check the path, or give a shipped id"
    ):
        load_profile(tmp_path / "nope.yaml")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("id: caf\u00e9\n".encode("latin-1"))  # 0xe9: not UTF-8
    with pytest.raises(HardwareProfileError, match=r"can't decode byte 0xe9 .*; save it as UTF-8 text$"):
        load_profile(latin1)
    # a device is no profile, and it does exist: not "does not exist"
    with pytest.raises(HardwareProfileError, match=r"'/dev/zero' is not a regular file; give a .yaml or .json file"):
        load_profile("/dev/zero")
