"""Quantities with units parse to SI; unknown units are rejected naming what is accepted."""

import pytest

from dfx.hardware import parse_quantity


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        ("989.4 TFLOP/s", "flop_per_s", 989.4e12),
        ("275 TFLOPS", "flop_per_s", 275e12),
        ("750 TOPS", "flop_per_s", 750e12),
        ("15.84 PFLOP/s", "flop_per_s", 15.84e15),
        ("3.35 TB/s", "bytes_per_s", 3.35e12),
        ("2039 GB/s", "bytes_per_s", 2039e9),
        ("800 GiB/s", "bytes_per_s", 800 * 2**30),
        ("1.2 Tb/s", "bytes_per_s", 150e9),  # bits: 1.2e12 / 8
        ("80 GB", "bytes", 80e9),
        ("2 MiB", "bytes", 2 * 1024 * 1024),  # 2,097,152
        ("48 KB", "bytes", 48_000),  # capital K read as 1000, like kB
        ("256 KiB", "bytes", 262_144),
        ("1.5 us", "s", 1.5e-6),
        ("1.5 µs", "s", 1.5e-6),
        ("20 ms", "s", 0.02),
        ("0 s", "s", 0.0),
        ("1.05 GHz", "hz", 1.05e9),
        ("900 MHz", "hz", 900e6),
        ("0.7 pJ", "j", 0.7e-12),
        ("700 W", "w", 700.0),
        ("3.35e12", "bytes_per_s", 3.35e12),  # a number in a string is SI
        (3.35e12, "bytes_per_s", 3.35e12),
        (64, "bytes", 64.0),
        ("-3.35 TB/s", "bytes_per_s", -3.35e12),  # the sign is the schema's business, not the parser's
    ],
)
def test_parse_quantity(text, dimension, expected):
    assert parse_quantity(text, dimension) == pytest.approx(expected, rel=1e-15)


def test_decimal_prefix_is_exact():
    # 989.4 * 1e12 in floats is 989399999999999.9; Decimal arithmetic gives the nearest float to 989.4e12
    assert parse_quantity("989.4 TFLOP/s", "flop_per_s") == 989.4e12


@pytest.mark.parametrize(
    ("text", "dimension", "bad"),
    [
        ("3.35 TB/sec", "bytes_per_s", "TB/sec"),
        ("80 GB", "bytes_per_s", "GB"),  # a capacity where a bandwidth belongs
        ("3.35 TB/s", "bytes", "TB/s"),
        ("1.5 usec", "s", "usec"),
        ("989 tflops", "flop_per_s", "tflops"),  # units are case-sensitive
    ],
)
def test_unknown_unit_names_it_and_the_accepted_units(text, dimension, bad):
    with pytest.raises(ValueError, match=f"unknown unit '{bad}'") as info:
        parse_quantity(text, dimension)
    assert "expected" in str(info.value)


@pytest.mark.parametrize("value", ["fast", "", True, None, [1, 2], "nan GB/s", "inf"])
def test_not_a_quantity(value):
    with pytest.raises(ValueError):
        parse_quantity(value, "bytes_per_s")
