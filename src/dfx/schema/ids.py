"""The schema tag of every document dfx writes: one constant each, defined here and nowhere else.

A tag is ``dfx.<document>/<version>``. A version changes only with a migration note in
``docs/export-format.md`` ("Versions and migrations"), and the readers here keep accepting the
older version through that migration.
"""

from __future__ import annotations

__all__ = [
    "ANALYSIS_SCHEMA",
    "ANALYSIS_SCHEMAS_READ",
    "BUCKETS_SCHEMA",
    "CALIBRATION_SCHEMA",
    "CAPACITY_SCHEMA",
    "CASESTUDY_ATTENTION_SCHEMA",
    "COMPILE_SCHEMA",
    "DAG_SCHEMA",
    "ENERGY_SCHEMA",
    "GRAPH_SCHEMA",
    "GUARDS_SCHEMA",
    "OPSET_COVERAGE_SCHEMA",
    "SERVING_SCHEMA",
    "SIMULATION_SCHEMA",
    "SWEEP_SCHEMA",
    "SYSTOLIC_SCHEMA",
    "TILE_SCHEMA",
    "TRITON_SCHEMA",
    "VALIDATION_SCHEMA",
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
# The command reports below have no records yet: their writers use these tags, their fields are
# documented beside each command (docs/export-format.md, "Documents").
CAPACITY_SCHEMA = "dfx.capacity/1"  # dfx capacity --json (docs/memory.md)
TILE_SCHEMA = "dfx.tile/1"  # dfx tile --json (docs/memory.md)
ENERGY_SCHEMA = "dfx.energy/1"  # dfx energy --json (docs/memory.md)
CASESTUDY_ATTENTION_SCHEMA = "dfx.casestudy.attention/1"  # dfx casestudy attention --json (docs/memory.md)
SYSTOLIC_SCHEMA = "dfx.systolic/1"  # dfx systolic --json (docs/systolic.md)
TRITON_SCHEMA = "dfx.triton/1"  # dfx triton --json (docs/gpu.md)
GUARDS_SCHEMA = "dfx.guards/1"  # dfx guards --json (docs/shapes.md)
BUCKETS_SCHEMA = "dfx.buckets/1"  # dfx buckets --json (docs/shapes.md)
OPSET_COVERAGE_SCHEMA = "dfx.opset_coverage/1"  # dfx ops --json (docs/cost-model.md, "The Core ATen opset")
SERVING_SCHEMA = "dfx.serving/1"  # dfx serve --json, serving.json (docs/serving.md)
