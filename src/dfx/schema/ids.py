"""The schema tag of every document dfx writes: one constant each, defined here and nowhere else.

A tag is ``dfx.<document>/<version>``. A version changes only with a migration note in
``docs/export-format.md`` ("Versions and migrations"), and the readers here keep accepting the
older version through that migration.
"""

from __future__ import annotations

__all__ = [
    "ANALYSIS_SCHEMA", "ANALYSIS_SCHEMAS_READ", "CALIBRATION_SCHEMA", "COMPILE_SCHEMA", "DAG_SCHEMA",
    "GRAPH_SCHEMA", "SIMULATION_SCHEMA", "SWEEP_SCHEMA", "VALIDATION_SCHEMA",
]

ANALYSIS_SCHEMA = "dfx.analysis/1"  # dfx analyze --json, Analysis.to_dict() (docs/export-format.md)
ANALYSIS_SCHEMAS_READ = (ANALYSIS_SCHEMA,)  # what readers accept (older versions through a migration)
COMPILE_SCHEMA = "dfx.compile/1"  # dfx compile --json, Program.to_dict() (docs/export-format.md)
SIMULATION_SCHEMA = "dfx.simulation/1"  # dfx simulate --json (docs/simulation.md)
VALIDATION_SCHEMA = "dfx.validation/1"  # dfx validate --json (docs/validation.md)
CALIBRATION_SCHEMA = "dfx.calibration/1"  # dfx calibrate (docs/validation.md)
DAG_SCHEMA = "dfx.dag/1"  # dfx dag --json (docs/dag.md)
SWEEP_SCHEMA = "dfx.sweep/1"  # sweep.json (docs/sweeps.md)
GRAPH_SCHEMA = "dfx.graph/1"  # a saved Graph (Graph.to_dict, dfx.ir)
