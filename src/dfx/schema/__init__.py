"""Every document dfx writes, as frozen typed records: the one owner of their keys.

Writers build these records and call ``to_dict``; readers call ``read_*`` / ``from_dict`` and get
records back. A missing or renamed key is a :class:`SchemaError` naming the document, the key and
the fix; nothing outside this package reads a document key with a default
(``tests/schema/test_no_defaults.py`` greps for it). This is the lowest layer: it imports nothing
of dfx but :mod:`dfx.errors`, and never torch.

Records: ``dfx.analysis/1`` (:mod:`dfx.schema.analysis`), ``dfx.compile/1`` (:mod:`~dfx.schema.compile`),
``dfx.simulation/1`` (:mod:`~dfx.schema.simulation`), ``dfx.validation/1`` (:mod:`~dfx.schema.validation`),
``dfx.calibration/1`` (:mod:`~dfx.schema.calibration`), ``dfx.sweep/1`` (:mod:`~dfx.schema.sweep`),
``dfx.dag/1`` (:mod:`~dfx.schema.dag`). Every
document's tag, with or without a record, is a constant of :mod:`dfx.schema.ids`
(``tests/schema/test_schema_ids.py``). Formats and migrations: ``docs/export-format.md``.
"""

from __future__ import annotations

from dfx.schema.bound import Bound
from dfx.schema.errors import SchemaError
from dfx.schema.ids import (
    ANALYSIS_SCHEMA,
    CALIBRATION_SCHEMA,
    COMPILE_SCHEMA,
    DAG_SCHEMA,
    GRAPH_SCHEMA,
    SIMULATION_SCHEMA,
    SWEEP_SCHEMA,
    VALIDATION_SCHEMA,
)

__all__ = [
    "ANALYSIS_SCHEMA",
    "Bound",
    "CALIBRATION_SCHEMA",
    "COMPILE_SCHEMA",
    "DAG_SCHEMA",
    "GRAPH_SCHEMA",
    "SIMULATION_SCHEMA",
    "SWEEP_SCHEMA",
    "SchemaError",
    "VALIDATION_SCHEMA",
]
