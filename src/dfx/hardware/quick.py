"""Quick profiles: a machine in one line, for hand-made questions (``--hw peak=200T,bw=2T,onchip=32M``).

A quick profile is a :class:`~dfx.hardware.HardwareProfile` built from a few numbers typed on the
command line, wherever a profile id is accepted. Three spellings, all equivalent::

    quick:peak=200TFLOP/s,bw=2TB/s,onchip=32MB     # keys with full units
    peak=200T,bw=2T,onchip=32M                     # a bare prefix takes the key's unit
    200TFLOP/s,2TB/s,32MB                          # positional: each value's unit says what it is

Keys (the unit is in the key, as in a profile file; ``docs/dag.md``):

============  ===========  ========================================================
key           unit         meaning
============  ===========  ========================================================
``peak``      FLOP/s       peak compute, used for every dtype (required)
``bw``        B/s          off-chip memory bandwidth (required)
``onchip``    B            on-chip memory (SRAM, scratchpad) capacity
``onchip_bw`` B/s          on-chip bandwidth; with ``onchip`` it makes a usable scratchpad
``overhead``  s            per-op overhead (default 0)
``model``     -            ``cache`` or ``scratchpad`` (default: scratchpad when ``onchip``
                           and ``onchip_bw`` are both given, else cache)
============  ===========  ========================================================

A text is a quick profile when it starts with ``quick:``, or when it contains ``=`` or ``,`` and is
not an existing file (a shipped id never contains either). Every number's source is "given on the
command line", so a quick profile is never mistaken for a published one.

Examples
--------
>>> p = quick_profile("peak=200T,bw=2T,onchip=32M")
>>> p.id, p.peak("bfloat16").flop_per_s, p.off_chip_level().bandwidth_bytes_per_s
('quick-200tflops-2tbps-32mb', 200000000000000.0, 2000000000000.0)
>>> p.level("onchip").capacity_bytes
32000000.0
>>> quick_profile("200TFLOP/s,2TB/s").id
'quick-200tflops-2tbps'
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dfx.hardware.errors import HardwareProfileError
from dfx.hardware.schema import HardwareProfile
from dfx.hardware.units import parse_quantity

__all__ = ["QUICK_PREFIX", "is_quick_spec", "quick_profile"]

QUICK_PREFIX = "quick:"

# key -> (dimension for parse_quantity, base unit appended to a bare prefix such as "200T")
_KEYS: dict[str, tuple[str, str]] = {
    "peak": ("flop_per_s", "FLOP/s"),
    "bw": ("bytes_per_s", "B/s"),
    "onchip": ("bytes", "B"),
    "onchip_bw": ("bytes_per_s", "B/s"),
    "overhead": ("s", "s"),
}
_MODELS = ("cache", "scratchpad")
# The peak applies to these dtypes alike: a quick profile says "one peak, whatever the dtype".
_DTYPES = ("float32", "bfloat16", "float16", "int8")
_SYNTAX = "e.g. quick:peak=200TFLOP/s,bw=2TB/s,onchip=32MB (keys: peak, bw, onchip, onchip_bw, overhead, model)"


def is_quick_spec(ref: Any) -> bool:
    """Whether ``ref`` is a quick-profile text rather than a profile id, alias or file."""
    if not isinstance(ref, str):
        return False
    text = ref.strip()
    if text.lower().startswith(QUICK_PREFIX):
        return True
    return ("=" in text or "," in text) and not Path(text).is_file()


def _value(key: str, text: str, spec: str) -> float:
    dimension, unit = _KEYS[key]
    text = text.strip()
    try:
        value = parse_quantity(text, dimension)
    except ValueError:
        try:  # "200T" -> "200TFLOP/s": a bare prefix takes the key's unit
            value = parse_quantity(text + unit, dimension)
        except ValueError:
            raise HardwareProfileError(
                f"quick profile {spec!r}: cannot read {key}={text!r} as {unit}; e.g. {key}=2T or {key}=2T{unit}"
            ) from None
    if value <= 0 and key != "overhead":
        raise HardwareProfileError(f"quick profile {spec!r}: {key} must be > 0, got {text!r}")
    if value < 0:
        raise HardwareProfileError(f"quick profile {spec!r}: {key} must be >= 0, got {text!r}")
    return value


def _positional_key(text: str, seen: dict[str, Any], spec: str) -> str:
    """The key a value without ``key=`` stands for, read from its unit."""
    unit = re.sub(r"^[\s\d.eE+-]*", "", text).strip()
    for key in ("peak", "bw", "onchip", "overhead"):
        dimension, _ = _KEYS[key]
        try:
            parse_quantity(text, dimension)
        except ValueError:
            continue
        if not unit:
            break  # a bare number: its unit cannot be told
        if key in seen:
            hint = " (write onchip_bw= for an on-chip bandwidth)" if key == "bw" else ""
            raise HardwareProfileError(f"quick profile {spec!r}: two values for {key}{hint}")
        return key
    raise HardwareProfileError(
        f"quick profile {spec!r}: cannot tell what {text!r} is; give it a unit or a key, {_SYNTAX}"
    )


def _parse(spec: str) -> dict[str, Any]:
    body = spec.strip()
    if body.lower().startswith(QUICK_PREFIX):
        body = body[len(QUICK_PREFIX) :]
    fields: dict[str, Any] = {}
    for item in (part.strip() for part in body.split(",")):
        if not item:
            continue
        key, sep, text = item.partition("=")
        if not sep:
            key, text = _positional_key(item, fields, spec), item
        key = key.strip().lower()
        if key in fields:
            raise HardwareProfileError(f"quick profile {spec!r}: {key} is given twice")
        if key == "model":
            if text.strip().lower() not in _MODELS:
                raise HardwareProfileError(
                    f"quick profile {spec!r}: model must be cache or scratchpad, got {text.strip()!r}"
                )
            fields[key] = text.strip().lower()
        elif key in _KEYS:
            fields[key] = _value(key, text, spec)
        else:
            raise HardwareProfileError(f"quick profile {spec!r}: unknown key {key!r}; {_SYNTAX}")
    for required in ("peak", "bw"):
        if required not in fields:
            raise HardwareProfileError(f"quick profile {spec!r}: {required}= is missing; {_SYNTAX}")
    if "onchip_bw" in fields and "onchip" not in fields:
        raise HardwareProfileError(f"quick profile {spec!r}: onchip_bw= needs onchip= (the capacity) too")
    if fields.get("model") == "scratchpad" and "onchip_bw" not in fields:
        raise HardwareProfileError(f"quick profile {spec!r}: model=scratchpad needs onchip= and onchip_bw=")
    return fields


def _short(value: float) -> str:
    """``2e14`` -> ``"200t"``: the number with an SI prefix, for the profile id."""
    for factor, prefix in ((1e15, "p"), (1e12, "t"), (1e9, "g"), (1e6, "m"), (1e3, "k"), (1.0, "")):
        if value >= factor:
            return f"{value / factor:.4g}{prefix}"
    return f"{value:.4g}"


def _id(fields: dict[str, Any]) -> str:
    parts = [f"{_short(fields['peak'])}flops", f"{_short(fields['bw'])}bps"]
    if "onchip" in fields:
        parts.append(f"{_short(fields['onchip'])}b")
    if "onchip_bw" in fields:
        parts.append(f"{_short(fields['onchip_bw'])}bps")
    if fields.get("overhead"):
        parts.append(f"{fields['overhead']:.3g}s")
    return re.sub(r"[^a-z0-9.-]", "", "quick-" + "-".join(parts).lower().replace("e+", "e").replace("e-", "em"))


def _human(value: float, unit: str) -> str:
    """``2e14, "FLOP/s"`` -> ``"200 TFLOP/s"``."""
    short = _short(value)
    if short[-1].isalpha():
        prefix = short[-1] if short[-1] == "k" else short[-1].upper()
        return f"{short[:-1]} {prefix}{unit}"
    return f"{short} {unit}"


def _name(fields: dict[str, Any], model: str) -> str:
    """``"Quick profile: 200 TFLOP/s, 2 TB/s off chip, 32 MB on chip (scratchpad)"``."""
    text = f"Quick profile: {_human(fields['peak'], 'FLOP/s')}, {_human(fields['bw'], 'B/s')} off chip"
    if "onchip" in fields:
        text += f", {_human(fields['onchip'], 'B')} on chip"
        if "onchip_bw" in fields:
            text += f" at {_human(fields['onchip_bw'], 'B/s')}"
    return text + f" ({model})"


def quick_profile(spec: str) -> HardwareProfile:
    """Build a validated profile from a quick-profile text (module docstring for the syntax).

    Parameters
    ----------
    spec : str
        ``"quick:peak=200TFLOP/s,bw=2TB/s,onchip=32MB"``, ``"peak=200T,bw=2T"`` or
        ``"200TFLOP/s,2TB/s,32MB"``.

    Returns
    -------
    HardwareProfile
        Id ``quick-...`` (from the numbers); one off-chip level ``offchip`` (``bw``), and an on-chip
        level ``onchip`` when ``onchip`` is given; ``peak`` for float32, bfloat16, float16 and int8.

    Raises
    ------
    HardwareProfileError
        One line naming the text, the key at fault and the syntax: an unknown key, a value in the
        wrong unit, a missing ``peak`` or ``bw``, a key given twice.
    """
    fields = _parse(spec)
    model = fields.get("model") or ("scratchpad" if "onchip_bw" in fields else "cache")
    source = f"given on the command line (quick profile {spec.strip()!r}); not a published figure"
    memory: list[dict[str, Any]] = []
    if "onchip" in fields:
        memory.append(
            {
                "name": "onchip",
                "capacity_bytes": fields["onchip"],
                "bandwidth_bytes_per_s": fields.get("onchip_bw"),
                "managed": "software" if model == "scratchpad" else "cache",
                "on_chip": True,
            }
        )
    memory.append(
        {
            "name": "offchip",
            "capacity_bytes": None,
            "bandwidth_bytes_per_s": fields["bw"],
            "managed": "software",
            "on_chip": False,
        }
    )
    data = {
        "id": _id(fields),
        "name": _name(fields, model),
        "vendor": "user",
        "kind": "dataflow" if model == "scratchpad" else "gpu",
        "peak_flop_per_s": {d: fields["peak"] for d in _DTYPES},
        "memory": memory,
        "compute": {"description": "not modelled: a quick profile gives only a peak"},
        "scheduling": {
            "commitment": "static" if model == "scratchpad" else "dynamic",
            "description": "a quick profile: the commitment follows the memory model (scratchpad: static)",
        },
        "memory_model": model,
        "op_overhead_s": fields.get("overhead", 0.0),
        "notes": "quick profile from the command line",
        "sources": {"peak_flop_per_s": source, "memory": source, "op_overhead_s": source},
    }
    try:
        return HardwareProfile.model_validate(data)
    except Exception as exc:  # pydantic ValidationError: one line
        first = str(exc).splitlines()
        raise HardwareProfileError(f"quick profile {spec!r}: {first[-1].strip() if first else exc}") from None
