"""The results table of a sweep: one row per point, appended as groups finish, keyed by ``point_id``.

Parquet (``results.parquet/``, a folder of part files, one per append, read as one table) when
pyarrow is installed; otherwise CSV (``results.csv``, one line per row, flushed per append). A row
that a killed sweep left half-written (a short CSV line, an unreadable part file) is ignored, so
its point runs again when the sweep is resumed.
"""

from __future__ import annotations

import csv
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from dfx.sweep.evaluate import METRICS

__all__ = ["COLUMNS", "ResultsTable", "has_pyarrow"]

_KEYS = ("point_id", "model", "hardware", "batch", "seq", "dtype", "phase", "execution_model", "parallel")
COLUMNS = _KEYS + METRICS + ("error",)
_INTS = ("batch", "seq", "flops", "bytes", "chips")
_FLOATS = tuple(m for m in METRICS if m not in _INTS)


def has_pyarrow() -> bool:
    """Whether pyarrow can be imported (Parquet tables); CSV otherwise."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _typed(row: dict[str, Any]) -> dict[str, Any] | None:
    """A row read back with its types (ints, floats with NaN for empty); None for a torn row."""
    try:
        out = {k: row[k] for k in COLUMNS}
        for k in _INTS:
            v = out[k]
            out[k] = None if v in ("", None) or (isinstance(v, float) and math.isnan(v)) else int(v)
        for k in _FLOATS:
            out[k] = math.nan if out[k] in ("", None) else float(out[k])
        out["error"] = out["error"] or ""
        if not out["point_id"]:
            return None
        return out
    except (KeyError, TypeError, ValueError):
        return None


class ResultsTable:
    """The sweep's table in ``folder``: ``results.parquet/`` or ``results.csv``.

    Parameters
    ----------
    folder : str or Path
    fmt : {"parquet", "csv"}, optional
        Default: the format already in ``folder``, else Parquet when pyarrow is installed, else CSV.
    """

    def __init__(self, folder: str | Path, fmt: str | None = None):
        self.folder = Path(folder)
        if fmt is None:
            if (self.folder / "results.parquet").exists():
                fmt = "parquet"
            elif (self.folder / "results.csv").exists():
                fmt = "csv"
            else:
                fmt = "parquet" if has_pyarrow() else "csv"
        self.fmt = fmt
        self.path = self.folder / ("results.parquet" if fmt == "parquet" else "results.csv")

    def rows(self) -> list[dict[str, Any]]:
        """Every readable row, the last one per ``point_id`` (a point never appears twice)."""
        raw = self._read_parquet() if self.fmt == "parquet" else self._read_csv()
        by_id: dict[str, dict[str, Any]] = {}
        for r in raw:
            typed = _typed(r)
            if typed is not None:
                by_id[typed["point_id"]] = typed
        return list(by_id.values())

    def done_ids(self) -> set[str]:
        """The points that have a row."""
        return {r["point_id"] for r in self.rows()}

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        """Add ``rows`` (dicts with :data:`COLUMNS`) durably: a CSV line each, or one Parquet part file."""
        rows = list(rows)
        if not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.fmt == "parquet":
            self._append_parquet(rows)
        else:
            self._append_csv(rows)

    def _read_csv(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with open(self.path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or tuple(reader.fieldnames) != COLUMNS:
                return []
            return [r for r in reader if None not in r and all(v is not None for v in r.values())]

    def _append_csv(self, rows: list[dict[str, Any]]) -> None:
        new = not self.path.is_file() or self.path.stat().st_size == 0
        if not new:
            with open(self.path, "rb") as fh:  # a line torn by a kill: finish it so the next row starts clean
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
        with open(self.path, "a", newline="", encoding="utf-8") as fh:
            if not new and torn:
                fh.write("\n")
            writer = csv.writer(fh, lineterminator="\n")  # what csv.DictWriter writes, without its checks per row
            if new:
                writer.writerow(COLUMNS)
            writer.writerows(
                [("" if isinstance(v, float) and math.isnan(v) else v) for v in [r[k] for k in COLUMNS]] for r in rows
            )
            fh.flush()
            os.fsync(fh.fileno())

    def _read_parquet(self) -> list[dict[str, Any]]:
        import pyarrow.parquet as pq

        if not self.path.is_dir():
            return []
        out: list[dict[str, Any]] = []
        for part in sorted(self.path.glob("part-*.parquet")):
            try:
                out.extend(pq.read_table(part).to_pylist())
            except Exception:  # noqa: BLE001 - a part torn by a kill is skipped; its points run again
                continue
        return out

    def _append_parquet(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path.mkdir(parents=True, exist_ok=True)
        n = len(list(self.path.glob("part-*.parquet")))
        schema = pa.schema(
            [(k, pa.int64() if k in _INTS else pa.float64() if k in _FLOATS else pa.string()) for k in COLUMNS]
        )
        table = pa.Table.from_pylist([{k: r[k] for k in COLUMNS} for r in rows], schema=schema)
        fd, tmp = tempfile.mkstemp(prefix=".part-", suffix=".tmp", dir=self.path)
        os.close(fd)
        pq.write_table(table, tmp)
        os.replace(tmp, self.path / f"part-{n:06d}.parquet")
