"""The sweep document (``dfx.sweep/1``, ``sweep.json`` in a sweep's folder) as a frozen record.

:func:`dfx.sweep.runner.run_sweep` writes it beside the results table and reads it back through
:func:`read_sweep` when a sweep resumes into the same folder: the fingerprints must match. The
``spec`` object is :meth:`dfx.sweep.spec.SweepSpec.to_dict` (``docs/sweeps.md``), kept read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dfx.schema.fields import as_dict, as_str
from dfx.schema.ids import SWEEP_SCHEMA
from dfx.schema.record import Record, key, read_tagged

__all__ = ["SweepDoc", "read_sweep"]


@dataclass(frozen=True, kw_only=True)
class SweepDoc(Record):
    """The whole ``dfx.sweep/1`` document.

    Examples
    --------
    >>> d = SweepDoc(schema=SWEEP_SCHEMA, fingerprint="0123abcd", spec=MappingProxyType({"models": ["mlp"]}))
    >>> read_sweep(d.to_dict()) == d
    True
    """

    schema: str = key(as_str)
    fingerprint: str = key(as_str)  # SweepSpec.fingerprint(): what a resumed sweep must share
    spec: Mapping[str, Any] = key(lambda v: MappingProxyType(as_dict(v)))  # SweepSpec.to_dict()


def read_sweep(doc: Any, origin: str = "sweep.json") -> SweepDoc:
    """Read a ``dfx.sweep/1`` document.

    Raises
    ------
    SchemaError
        If ``doc`` is not a sweep document, or a key is missing or holds the wrong kind of value.
    """
    return read_tagged(
        SweepDoc,
        doc,
        SWEEP_SCHEMA,
        origin,
        fix="run the sweep again into a fresh folder, or pass --force to replace this one",
    )
