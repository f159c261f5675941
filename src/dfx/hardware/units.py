"""Quantities with units, as profile authors write them, parsed to SI floats.

A profile field's unit is in its name (``bandwidth_bytes_per_s``); its value may be a bare number,
already in SI, or a string with a unit: ``"3.35 TB/s"``, ``"80 GB"``, ``"2 MiB"``, ``"1.5 us"``.
Decimal prefixes (k, M, G, T, P, E and m, u/µ, n, p, f) and binary prefixes (Ki, Mi, Gi, Ti, Pi)
are accepted where they make sense. Units are case-sensitive: ``Mb/s`` is megabits, ``MB/s``
megabytes, ``mJ`` millijoules. ``KB`` (capital K) is read as 1000 bytes, like ``kB``; write ``KiB``
for 1024.

Examples
--------
>>> parse_quantity("989.4 TFLOP/s", "flop_per_s")
989400000000000.0
>>> parse_quantity("2 MiB", "bytes")
2097152.0
>>> parse_quantity("1.2 Tb/s", "bytes_per_s")  # bits: 1.2e12 / 8
150000000000.0
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

__all__ = ["DIMENSIONS", "accepted_units", "parse_quantity"]

_BIG = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_SMALL = {"": 1.0, "m": 1e-3, "u": 1e-6, "µ": 1e-6, "μ": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_BITS_PER_BYTE = 8  # a "b" (bit) unit is divided by this to give bytes


def _table(bases: dict[str, float], prefixes: dict[str, float]) -> dict[str, float]:
    return {p + base: pf * bf for base, bf in bases.items() for p, pf in prefixes.items()}


# dimension (the suffix of a field name) -> {unit: factor to SI}
DIMENSIONS: dict[str, dict[str, float]] = {
    "bytes": {**_table({"B": 1.0}, {**_BIG, **_BINARY}), "KB": 1e3},
    "bytes_per_s": {
        **_table({"B/s": 1.0}, {**_BIG, **_BINARY}),
        "KB/s": 1e3,
        **_table({"b/s": 1 / _BITS_PER_BYTE, "bit/s": 1 / _BITS_PER_BYTE}, _BIG),
    },
    "flop_per_s": _table({"FLOP/s": 1.0, "FLOPS": 1.0, "OP/s": 1.0, "OPS": 1.0}, _BIG),
    "s": _table({"s": 1.0}, _SMALL),
    "hz": _table({"Hz": 1.0}, _BIG),
    "j": _table({"J": 1.0}, _SMALL),
    "w": _table({"W": 1.0}, {**_SMALL, "k": 1e3}),
}

# What to tell an author who wrote something else, per dimension.
_EXAMPLES = {
    "bytes": "B with an SI or binary prefix, e.g. '80 GB', '2 MiB'",
    "bytes_per_s": "B/s (or b/s for bits) with an SI or binary prefix, e.g. '3.35 TB/s', '800 GiB/s', '1.2 Tb/s'",
    "flop_per_s": "FLOP/s, FLOPS, OP/s or OPS with an SI prefix, e.g. '989.4 TFLOP/s', '750 TOPS'",
    "s": "s with a prefix m, u (or µ), n, p, e.g. '1.5 us'",
    "hz": "Hz with an SI prefix, e.g. '1.05 GHz'",
    "j": "J with a prefix m, u, n, p, f, e.g. '0.7 pJ'",
    "w": "W, kW or mW, e.g. '700 W'",
}

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*?)\s*$")


def accepted_units(dimension: str) -> str:
    """A one-line description of the units accepted for ``dimension``."""
    return _EXAMPLES[dimension]


def parse_quantity(value: object, dimension: str) -> float:
    """Parse ``value`` (a number in SI, or a string with a unit) to an SI float.

    Parameters
    ----------
    value : int, float or str
        ``3.35e12``, ``"3.35e12"`` or ``"3.35 TB/s"``.
    dimension : str
        A key of :data:`DIMENSIONS`: ``"bytes"``, ``"bytes_per_s"``, ``"flop_per_s"``, ``"s"``,
        ``"hz"``, ``"j"`` or ``"w"``.

    Returns
    -------
    float
        The value in SI units (bytes, bytes/s, FLOP/s, seconds, hertz, joules, watts).

    Raises
    ------
    ValueError
        If the value is not a number, is not finite, or its unit is not one accepted for the
        dimension; the message names the accepted units.

    Examples
    --------
    >>> parse_quantity("1.5 us", "s")
    1.5e-06
    >>> parse_quantity(3.35e12, "bytes_per_s")
    3350000000000.0
    """
    units = DIMENSIONS[dimension]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(
            f"expected a number or a string such as {_EXAMPLES[dimension].split('e.g. ')[-1]}, got {value!r}"
        )
    if isinstance(value, str):
        match = _QUANTITY.match(value)
        if match is None:
            raise ValueError(
                f"cannot read {value!r} as a quantity; expected a number and a unit: {_EXAMPLES[dimension]}"
            )
        number, unit = match.groups()
        if unit and unit not in units:
            raise ValueError(f"unknown unit {unit!r} in {value!r}; expected {_EXAMPLES[dimension]}")
        factor = units[unit] if unit else 1.0
        # Decimal arithmetic, so "989.4 TFLOP/s" is exactly float(989.4e12), not 989.4 * 1e12.
        result = float(Decimal(number) * Decimal(repr(factor)))
    else:
        result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"expected a finite number, got {value!r}")
    return result
