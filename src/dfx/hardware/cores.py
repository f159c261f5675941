"""Part of a chip: a profile restricted to ``n`` of its cores (``dfx analyze --cores N``).

:func:`restrict_to_cores` returns the profile a program sees when the compiler gives it ``n`` of the
machine's ``C`` cores (``compute.usable_cores``, else ``compute.cores``: the count placement uses)::

    peak FLOP/s               x n / C            every dtype; the cores are identical
    matrix and vector units   x n / C            (at least 1)
    on-chip level             capacity, bandwidth and instances x n / C
                              (a per-core scratchpad: the n cores' own; a shared level such as a GPU's
                              L2: the n cores' share, an assumption: a few SMs can fill more of it)
    off-chip level            bandwidth = min(whole level, n x core_bandwidth_bytes_per_s)
                              where the profile gives the bandwidth one core can draw; else
                              bandwidth x n / C (an estimate: the proportional share, the same
                              sharing rule the compiled program's kernels use, dfx.roofline.program)
                              capacity unchanged (the n cores address all of it)

The result keeps every other number (clock, per-op overhead, runtimes, interconnect) and its
sources, each changed number's source saying how it was derived. Its id is ``<id>-<n>of<C>``
(``ibm-spyre-1of32``), so results and pictures never mistake it for the whole chip.
"""

from __future__ import annotations

from typing import Any

from dfx.hardware.errors import HardwareProfileError
from dfx.hardware.schema import HardwareProfile

__all__ = ["core_total", "restrict_to_cores"]


def core_total(profile: HardwareProfile) -> int:
    """The cores a compiler may place work on: ``compute.usable_cores``, else ``compute.cores``, else 1
    (as :func:`dfx.compile.core_count`, which placement uses)."""
    return profile.compute.usable_cores or profile.compute.cores or 1


def restrict_to_cores(profile: HardwareProfile, cores: int) -> HardwareProfile:
    """``profile`` as ``cores`` of its cores see it (see the module docstring for every rule).

    Parameters
    ----------
    profile : HardwareProfile
    cores : int
        How many cores, ``1 <= cores <= C`` (``C``: :func:`core_total`). ``cores == C`` returns
        ``profile`` itself.

    Returns
    -------
    HardwareProfile
        Validated like a profile file; id ``<id>-<cores>of<C>``.

    Raises
    ------
    HardwareProfileError
        ``cores`` below 1, above ``C``, or not an integer (the message names the value and the range).

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> spyre = load_profile("ibm-spyre")
    >>> one = restrict_to_cores(spyre, 1)
    >>> one.id, one.compute.cores, one.peak_flop_per_s["float16"] / 1e12   # 75 TFLOP/s / 32
    ('ibm-spyre-1of32', 1, 2.34375)
    >>> lx = one.level("LX")
    >>> lx.capacity_bytes / 1e6, lx.instances   # one core's 2 MB scratchpad
    (2.0, 1)
    """
    total = core_total(profile)
    if isinstance(cores, bool) or not isinstance(cores, int):
        raise HardwareProfileError(f"cores must be a whole number of cores, got {cores!r}; use 1 to {total}")
    if cores < 1 or cores > total:
        raise HardwareProfileError(
            f"cores={cores} is outside {profile.id}'s 1 to {total} cores; "
            f"pass --cores between 1 and {total} (or leave it out for the whole chip)"
        )
    if cores == total:
        return profile
    share = cores / total
    data = profile.to_si_dict()
    why = f"x {cores}/{total} (dfx.hardware.cores.restrict_to_cores: {cores} of {total} cores)"
    changed = [f"peak_flop_per_s.{d}" for d in data["peak_flop_per_s"]] + ["compute.cores"]
    data["peak_flop_per_s"] = {d: v * share for d, v in data["peak_flop_per_s"].items()}
    compute = data["compute"]
    compute["cores"] = cores if compute["cores"] else None
    if compute["usable_cores"]:
        compute["usable_cores"] = cores
        compute["cores"] = max(cores, compute["cores"] or cores)  # the silicon's count stays >= the usable one
    for key in ("units", "vector_units"):
        if compute[key]:
            compute[key] = max(1, round(compute[key] * share))
            changed.append(f"compute.{key}")
    for level in data["memory"]:
        changed += _restrict_level(level, share, cores)
    data["id"] = f"{profile.id}-{cores}of{total}"
    data["name"] = f"{profile.name}, {cores} of {total} cores"
    data["aliases"] = []
    data["sources"] = _sources(data["sources"], changed, why, profile)
    return HardwareProfile.model_validate(data)


def _restrict_level(level: dict[str, Any], share: float, cores: int) -> list[str]:
    """Scale one memory level (a dict of the SI profile) in place; the paths whose numbers changed."""
    name = level["name"]
    if level["on_chip"]:
        paths = []
        for key in ("capacity_bytes", "bandwidth_bytes_per_s", "core_bandwidth_bytes_per_s"):
            if level[key] and key != "core_bandwidth_bytes_per_s":
                level[key] *= share
                paths.append(f"memory.{name}.{key}")
        if level["instances"] > 1:
            level["instances"] = max(1, round(level["instances"] * share))
            paths.append(f"memory.{name}.instances")
        return paths
    whole = level["bandwidth_bytes_per_s"]
    if not whole:
        return []
    per_core = level["core_bandwidth_bytes_per_s"]
    level["bandwidth_bytes_per_s"] = min(whole, cores * per_core) if per_core else whole * share
    return [f"memory.{name}.bandwidth_bytes_per_s"]


def _sources(sources: dict[str, str], changed: list[str], why: str, profile: HardwareProfile) -> dict[str, str]:
    """``sources`` with each changed number's source (its own key or the nearest parent) told how it was derived."""
    out = dict(sources)
    off_chip = {f"memory.{lv.name}.bandwidth_bytes_per_s": lv for lv in profile.memory if not lv.on_chip}
    for path in changed:
        level = off_chip.get(path)
        if level is not None:
            rule = (
                f"min(the whole level, cores x core_bandwidth_bytes_per_s = {level.core_bandwidth_bytes_per_s:.4g} B/s)"
                if level.core_bandwidth_bytes_per_s
                else "estimate: the cores' proportional share, bandwidth x cores / total (no per-core figure in the profile)"
            )
            out[path] = f"{profile.source_of(path)}; restricted to part of the chip: {rule}"
            continue
        key = path
        while key not in out and "." in key:
            key = key.rsplit(".", 1)[0]
        if key in out and why not in out[key]:
            out[key] = f"{out[key]}; then {why}"
    return out
