"""The accelerator landscape: six design dimensions per profile, and a 2-D map of the design space.

Every cell is read from the profile files (``memory_model``, ``scheduling.commitment``, the
``design`` section, the memory levels), never written here, so editing a profile changes the table
and the map. The map's axes::

    x = memory model:           0 cache-managed  ...  1 software-managed scratchpad
    y = scheduling commitment:  0 dynamic        ...  1 fully static (every cycle fixed)

A profile places itself with ``design.memory_model_position`` / ``design.scheduling_position``
(judgements, sourced as such); without them the enums decide (cache 0, scratchpad 1; dynamic 0,
mixed 0.5, static 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Iterable

from dfx.errors import DfxError
from dfx.hardware import Commitment, Determinism, HardwareProfile, Kind, MemoryModel

__all__ = ["DIMENSIONS", "Dimension", "Landscape", "LandscapeRow", "landscape", "render_map", "write_map"]


class Dimension(str, Enum):
    """The six columns of ``dfx hw compare`` (stable export names)."""

    MEMORY_MODEL = "memory_model"
    SCHEDULING_COMMITMENT = "scheduling_commitment"
    UNIT_OF_EXECUTION = "unit_of_execution"
    ON_CHIP_MEMORY_PER_CHIP = "on_chip_memory_per_chip"  # bytes, the largest on-chip level
    INTERCONNECT = "interconnect"
    DETERMINISM = "determinism"

    def __str__(self) -> str:
        return self.value


DIMENSIONS: tuple[str, ...] = tuple(d.value for d in Dimension)

_X_DEFAULT = {MemoryModel.CACHE: 0.0, MemoryModel.SCRATCHPAD: 1.0}
_Y_DEFAULT = {Commitment.DYNAMIC: 0.0, Commitment.MIXED: 0.5, Commitment.STATIC: 1.0}
MAP_FILES = ("landscape.png", "landscape.svg")
TABLE_FILE = "landscape.json"


@dataclass(frozen=True)
class LandscapeRow:
    """One profile's place in the design space; ``None`` where its file does not say."""

    profile_id: str
    name: str
    kind: Kind
    memory_model: MemoryModel
    scheduling_commitment: Commitment
    unit_of_execution: str | None
    on_chip_memory_per_chip: float | None  # bytes
    interconnect: str | None
    determinism: Determinism | None
    x: float  # memory-model position, 0 cache .. 1 scratchpad
    y: float  # scheduling position, 0 dynamic .. 1 static

    @classmethod
    def from_profile(cls, p: HardwareProfile) -> LandscapeRow:
        """Read the row from the profile: its enums, its ``design`` section, its memory levels."""
        d = p.design
        x = d.memory_model_position if d and d.memory_model_position is not None else _X_DEFAULT[p.memory_model]
        y = d.scheduling_position if d and d.scheduling_position is not None else _Y_DEFAULT[p.scheduling.commitment]
        return cls(
            profile_id=p.id,
            name=p.name,
            kind=p.kind,
            memory_model=p.memory_model,
            scheduling_commitment=p.scheduling.commitment,
            unit_of_execution=d.unit_of_execution if d else None,
            on_chip_memory_per_chip=p.summary_row()["on_chip_bytes"],
            interconnect=d.interconnect if d else None,
            determinism=d.determinism if d else None,
            x=x,
            y=y,
        )

    def cells(self) -> dict[str, Any]:
        """Dimension name -> JSON value (enums as their names), in :data:`DIMENSIONS` order."""
        values = {name: getattr(self, name) for name in DIMENSIONS}
        return {k: v.value if isinstance(v, Enum) else v for k, v in values.items()}


@dataclass(frozen=True)
class Landscape:
    """The rows of several profiles, in the order asked for."""

    rows: tuple[LandscapeRow, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{"dimensions": [six names], "rows": {id: {dimension: value}}}`` (``dfx hw compare --json``)."""
        return {"dimensions": list(DIMENSIONS), "rows": {r.profile_id: r.cells() for r in self.rows}}

    def map_dict(self) -> dict[str, Any]:
        """The table plus each profile's map position (``landscape.json``)."""
        doc = self.to_dict()
        doc["axes"] = {
            "x": "memory model: 0 cache-managed .. 1 software-managed scratchpad",
            "y": "scheduling commitment: 0 dynamic .. 1 fully static",
        }
        doc["positions"] = {r.profile_id: {"x": r.x, "y": r.y, "kind": r.kind.value} for r in self.rows}
        return doc


def landscape(profiles: Iterable[HardwareProfile]) -> Landscape:
    """The landscape of ``profiles``, in the order given (a profile given twice appears once).

    Two different profiles with the same id (a copied file edited but not renamed) are refused:
    one would otherwise hide the other silently.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> row = landscape([load_profile("groq-lpu")]).rows[0]
    >>> [str(row.memory_model), str(row.scheduling_commitment), str(row.determinism)]
    ['scratchpad', 'static', 'cycle-exact']
    """
    seen: dict[str, LandscapeRow] = {}
    first: dict[str, HardwareProfile] = {}
    for p in profiles:
        if p.id in first and first[p.id] != p:
            raise DfxError(f"two different profiles have the id {p.id!r}; give each file its own id to compare them")
        first.setdefault(p.id, p)
        seen.setdefault(p.id, LandscapeRow.from_profile(p))
    if not seen:
        raise DfxError("no hardware profiles to compare; name at least one id (see `dfx hw list`)")
    return Landscape(tuple(seen.values()))


def _groups(rows: Iterable[LandscapeRow]) -> dict[tuple[float, float], list[LandscapeRow]]:
    """Profiles at the same position share one point and one label."""
    out: dict[tuple[float, float], list[LandscapeRow]] = {}
    for r in rows:
        out.setdefault((r.x, r.y), []).append(r)
    return out


def render_map(land: Landscape, fmt: str) -> bytes:
    """The map as ``png`` or ``svg`` bytes (matplotlib, imported here, Agg backend)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {
        "gpu": "tab:green",
        "tpu": "tab:blue",
        "tsp": "tab:red",
        "wafer": "tab:orange",
        "spyre": "tab:purple",
        "dataflow": "tab:brown",
        "cpu": "tab:gray",
    }
    fig, ax = plt.subplots(figsize=(8, 6.5))
    try:
        for (x, y), rows in sorted(_groups(land.rows).items()):
            ax.scatter([x], [y], s=80, color=colours.get(rows[0].kind.value, "black"), zorder=3)
            ax.annotate(
                "\n".join(r.profile_id for r in rows),
                (x, y),
                textcoords="offset points",
                xytext=(6, 6),
                fontsize=8,
                ha="left" if x < 0.75 else "right",
            )
        for kind, colour in colours.items():
            ax.scatter([], [], color=colour, label=kind)
        ax.set_xlim(-0.1, 1.1)
        ax.set_ylim(-0.1, 1.1)
        ax.set_xlabel("memory model: cache-managed  →  software-managed scratchpad")
        ax.set_ylabel("scheduling commitment: dynamic  →  fully static")
        ax.set_title("dfx accelerator landscape (positions from the profile files)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="center left", fontsize=8)
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, bbox_inches="tight")
        return buf.getvalue()
    finally:
        plt.close(fig)


def write_map(land: Landscape, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Write ``landscape.json``, ``landscape.png`` and ``landscape.svg`` into ``out_dir``.

    Every target is checked before anything is written, so a refusal leaves the folder as it was;
    the pictures are written to a temporary file and renamed over the target.

    Raises
    ------
    DfxError
        If ``out_dir`` is a file, or a target exists and ``force`` is false.
    """
    import json
    import os
    import tempfile

    from dfx.report.files import write_outputs

    out = Path(out_dir)
    existing = [out / n for n in (TABLE_FILE, *MAP_FILES) if (out / n).exists()] if out.is_dir() else []
    if existing and not force:
        raise DfxError(
            f"{', '.join(map(str, existing))} already exists; pass --force to overwrite it or choose another --out"
        )
    pictures = {name: render_map(land, name.rsplit(".", 1)[1]) for name in MAP_FILES}
    written = write_outputs(out, {TABLE_FILE: json.dumps(land.map_dict(), indent=1)}, force=force)
    for name, data in pictures.items():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; give the user's usual mode
            os.replace(tmp, out / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(out / name)
    return written
