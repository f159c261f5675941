"""Find, read and validate hardware profiles: shipped ones by id or alias, users' by path.

Shipped profiles are the ``profiles/<id>.yaml`` files of this package. They are read and validated
on first use, not at import, and cached; each call hands out its own copy.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import ValidationError

from dfx.safe_load import load_json, load_yaml

from dfx.hardware.errors import HardwareProfileError
from dfx.hardware.schema import HardwareProfile
from dfx.hardware.units import DIMENSIONS, accepted_units

__all__ = ["list_profiles", "listed_profiles", "load_profile", "parse_profile", "profile_ids"]

_SUFFIXES = (".yaml", ".yml", ".json")


def _field_name(loc: tuple[Any, ...]) -> str:
    """``("memory", 0, "bandwidth_bytes_per_s")`` -> ``"memory[0].bandwidth_bytes_per_s"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (key)"
        else:
            out += f".{part}" if out else str(part)
    return out or "(profile)"


def _expected(loc: tuple[Any, ...]) -> str:
    """What a missing field should hold, read from the unit in its name."""
    field = next((p for p in reversed(loc) if isinstance(p, str)), "")
    for dimension in sorted(DIMENSIONS, key=len, reverse=True):
        if field.endswith("_" + dimension):
            return f"; expected a quantity in {accepted_units(dimension)}"
    return ""


def _describe(error: Mapping[str, Any]) -> str:
    loc = tuple(error["loc"])
    field = _field_name(loc)
    kind, message = error["type"], str(error["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if kind == "missing":
        return f"field {field!r} is missing{_expected(loc)}"
    if kind == "extra_forbidden":
        return f"field {field!r} is not part of the schema (misspelt?)"
    if kind in ("greater_than", "greater_than_equal", "less_than", "finite_number"):
        return f"field {field!r}: {message}, got {error.get('input')!r}"
    if not loc:
        return message
    return f"field {field!r}: {message}"


def parse_profile(data: Any, origin: str = "<data>") -> HardwareProfile:
    """Validate ``data`` (a mapping, as read from YAML or JSON) into a :class:`HardwareProfile`.

    Raises
    ------
    HardwareProfileError
        One line: ``origin``, the first failing field and what was expected there.
    """
    if not isinstance(data, Mapping):
        raise HardwareProfileError(
            f"hardware profile {origin}: expected a mapping of fields, got {type(data).__name__}"
        )
    try:
        return HardwareProfile.model_validate(dict(data))
    except ValidationError as exc:
        errors = exc.errors()
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise HardwareProfileError(f"hardware profile {origin}: {_describe(errors[0])}{more}") from None


def _read(text: str, origin: str, json_format: bool) -> HardwareProfile:
    try:
        data = load_json(text) if json_format else load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first = " ".join(str(exc).split())
        raise HardwareProfileError(
            f"hardware profile {origin}: not valid {'JSON' if json_format else 'YAML'}: {first}"
        ) from None
    return parse_profile(data, origin)


@cache
def _shipped_file(stem: str) -> HardwareProfile | None:
    """The shipped profile in ``profiles/<stem>.yaml``, or ``None`` where there is no such file."""
    entry = resources.files("dfx.hardware") / "profiles" / f"{stem}.yaml"
    if not stem or "/" in stem or "\\" in stem or not entry.is_file():
        return None
    profile = _read(entry.read_text(encoding="utf-8"), f"{stem!r} (shipped)", json_format=False)
    if profile.id != stem:
        raise HardwareProfileError(f"hardware profile {stem}.yaml: id {profile.id!r} does not match the file name")
    return profile


@cache
def _shipped() -> dict[str, HardwareProfile]:
    folder = resources.files("dfx.hardware") / "profiles"
    stems = sorted(e.name.removesuffix(".yaml") for e in folder.iterdir() if e.name.endswith(".yaml"))
    return {stem: profile for stem in stems if (profile := _shipped_file(stem)) is not None}


@cache
def _aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    for profile in _shipped().values():
        for name in (profile.id, *profile.aliases):
            if name in table and table[name] != profile.id:
                raise HardwareProfileError(f"hardware alias {name!r} names both {table[name]!r} and {profile.id!r}")
            table[name] = profile.id
    return table


def profile_ids() -> list[str]:
    """Ids of the shipped profiles, sorted."""
    return sorted(_shipped())


def list_profiles() -> list[HardwareProfile]:
    """Every shipped profile, sorted by id."""
    return [_fresh(_shipped()[i]) for i in profile_ids()]


def _fresh(profile: HardwareProfile) -> HardwareProfile:
    """A deep copy of a cached profile: frozen models still hold dicts a caller could mutate."""
    return profile.model_copy(deep=True)


MAX_PROFILE_BYTES = 2**20  # a shipped profile is about 11 KB, a calibrated one with its tables about 45 KB


def _looks_like_path(ref: str | Path) -> bool:
    return isinstance(ref, Path) or str(ref).lower().endswith(_SUFFIXES) or "/" in str(ref) or "\\" in str(ref)


def _load_path(path: Path) -> HardwareProfile:
    if path.is_dir():
        raise HardwareProfileError(f"hardware profile {str(path)!r} is a folder; give a .yaml or .json file")
    if path.exists() and not path.is_file():  # /dev/zero, a FIFO: not a profile, and no end to reading it
        raise HardwareProfileError(f"hardware profile {str(path)!r} is not a regular file; give a .yaml or .json file")
    if not path.is_file():
        raise HardwareProfileError(
            f"hardware profile file {str(path)!r} does not exist; check the path, or give a shipped id (dfx hw list)"
        )
    size = path.stat().st_size
    if size > MAX_PROFILE_BYTES:
        raise HardwareProfileError(
            f"hardware profile file {str(path)!r} is {size:,} bytes, over the {MAX_PROFILE_BYTES:,} a profile can be "
            "(a calibrated one with its tables is about 45 KB); is it the right file?"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fix = "save it as UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "check its permissions"
        raise HardwareProfileError(f"hardware profile file {str(path)!r} cannot be read: {exc}; {fix}") from None
    return _read(text, repr(str(path)), json_format=path.suffix.lower() == ".json")


def listed_profiles(ref: str | Path) -> list[str] | None:
    """The names ``ref`` lists where it is several profiles joined by commas (``"h100,spyre"``, as
    ``dfx sweep --hw`` takes them), lower-cased; ``None`` for one profile, a quick profile
    (``peak=200T,bw=2T``) or an existing file.

    >>> listed_profiles("h100, Spyre"), listed_profiles("h100"), listed_profiles("peak=200T,bw=2T")
    (['h100', 'spyre'], None, None)
    """
    key = str(ref).strip().lower()
    names = [p.strip() for p in key.split(",")]
    if len(names) < 2 or key.startswith("quick:") or any("=" in n for n in names) or Path(str(ref)).is_file():
        return None
    return names


def load_profile(ref: str | Path) -> HardwareProfile:
    """Load a profile by id (``nvidia-h100-sxm``), alias (``h100``) or path to a ``.yaml``/``.json`` file.

    Parameters
    ----------
    ref : str or Path
        A shipped id or alias (case-insensitive), or the path of a user's profile file: anything
        ending in ``.yaml``, ``.yml`` or ``.json`` or containing a path separator, or an existing
        file whose name is not an id or alias; or a quick profile, ``quick:peak=200T,bw=2T,onchip=32M``
        (:mod:`dfx.hardware.quick`).

    Raises
    ------
    HardwareProfileError
        If the id is unknown (the message names close matches), the file is missing or unreadable,
        or the profile fails validation (the message names the field and what was expected).

    Examples
    --------
    >>> load_profile("h100").id
    'nvidia-h100-sxm'
    """
    from dfx.hardware.quick import is_quick_spec, quick_profile

    key = str(ref).strip().lower()
    if not _looks_like_path(ref) and (by_id := _shipped_file(key)) is not None:
        return _fresh(by_id)  # a shipped id: its one file read, not every profile's (for the alias table)
    aliases = _aliases()
    names = listed_profiles(ref)
    if names is not None and any(n in aliases for n in names):
        # "--hw h100,spyre" (as dfx sweep takes it) read as a quick profile: "cannot tell what 'h100' is"
        closest = {  # each unknown name's nearest profile name, if any
            n: next(iter(difflib.get_close_matches(n, list(aliases), n=1, cutoff=0.5)), None)
            for n in names
            if n not in aliases
        }
        typo = ""
        if closest:
            first, near = next(iter(closest.items()))
            typo = f" ({first!r} is not a known profile{f'; did you mean {near!r}?' if near else ''})"
        parts = [p.strip() for p in str(ref).split(",")]
        fixed = [closest.get(n) or p for p, n in zip(parts, names)]
        raise HardwareProfileError(
            f"hardware {str(ref)!r} lists {len(names)} profiles{typo}; give one per --hw: "
            + " ".join(f"--hw {p}" for p in fixed)
        )
    if is_quick_spec(ref):  # "peak=200T,bw=2T,onchip=32M": dfx.hardware.quick
        return quick_profile(str(ref))
    if not _looks_like_path(ref) and key in aliases:
        return _fresh(_shipped()[aliases[key]])
    if _looks_like_path(ref) or Path(ref).is_file():
        return _load_path(Path(ref))
    containing = [i for i in profile_ids() if key and key in i]
    close = list(dict.fromkeys(containing + difflib.get_close_matches(key, list(aliases), n=3, cutoff=0.5)))[:3]
    if close:
        raise HardwareProfileError(
            f"unknown hardware profile {str(ref)!r}; did you mean {', '.join(repr(c) for c in close)}?"
        )
    raise HardwareProfileError(
        f"unknown hardware profile {str(ref)!r}; known: {', '.join(profile_ids())} (or pass a .yaml/.json path)"
    )
