"""The simulation document (``dfx.simulation/1``) as the report's timeline reads it: ``dfx.schema``'s records.

Like :mod:`dfx.viz.document` for the analysis, the timeline never reads a document key itself:
:func:`read_simulation` is :func:`dfx.schema.simulation.read_simulation`, and the names below are
its records under the names ``dfx.viz`` has always used. ``dfx.sim`` is never imported, so a saved
``simulation.json`` is drawn without it. The document is described in ``docs/simulation.md``.
"""

from __future__ import annotations

from dfx.errors import DfxError
from dfx.schema.ids import SIMULATION_SCHEMA
from dfx.schema.simulation import SimPolicyRecord, SimRunRecord, SimulationDoc, read_simulation
from dfx.viz.document import Doc

__all__ = ["SIM_SCHEMA", "SimDoc", "SimPolicy", "SimRun", "check_matches", "read_simulation"]

SIM_SCHEMA = SIMULATION_SCHEMA
SimDoc = SimulationDoc
SimPolicy = SimPolicyRecord
SimRun = SimRunRecord


def check_matches(sim: SimDoc, doc: Doc) -> None:
    """Refuse a simulation of another graph: every scheduled node must be a node of the analysis.

    Raises
    ------
    DfxError
        Naming the first few scheduled nodes the analysis lacks.
    """
    known = {n.name for n in doc.nodes}
    for hw in doc.hardware.values():  # a compiled program's tasks are its kernels' tiles: k#i, k:done
        known |= {k.name for k in hw.program.kernels} if hw.program is not None else set()
    stray = sorted({r.name.split("#")[0].removesuffix(":done") for p in sim.policies for r in p.schedule} - known)
    if stray:
        listed = ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else "")
        raise DfxError(
            f"the simulation ({sim.model or 'a DAG'}) is not of this analysis ({doc.model_name}): "
            f"its nodes {listed} are not in it"
        )
